/**
 * The participant page (docs/fieldwork.md "The participant page"): `GET /fieldwork/record`,
 * opened as `/fieldwork/record#key=<INGEST_KEY>`. One static document, its style and script
 * inline (no external assets, no framework), the same for every project: the script reads the key
 * from the fragment and asks the /ingest/* routes for everything else (RecordPageScript.ts,
 * RecordPageAudio.ts). The server never sees the key here.
 *
 * The content security policy allows exactly this script (by its SHA-256), calls to the page's own
 * origin, and blob: audio for the preview of a take; the page cannot be framed.
 */
import { HttpRouter, HttpServerResponse } from "effect/http"
import { Effect } from "effect"
import { scriptSource } from "./InlineScript.ts"
import { AUDIO_SCRIPT } from "./RecordPageAudio.ts"
import { FLOW_SCRIPT } from "./RecordPageScript.ts"

export const RECORD_PAGE_PATH = "/fieldwork/record"

const STYLE = `
  :root { color-scheme: light; --accent: #3a5bd9; --ink: #1d2330; --muted: #6b7280; --line: #e3e6ec; }
  * { box-sizing: border-box; }
  body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; background: #f5f6f8; color: var(--ink); margin: 0; line-height: 1.45; }
  main { max-width: 36rem; margin: 2rem auto; padding: 0 1rem; }
  .card { background: #fff; border-radius: 12px; padding: 1.5rem; box-shadow: 0 2px 12px rgba(0,0,0,.07); margin-bottom: 1rem; }
  .card > :first-child { margin-top: 0; }
  header { margin-bottom: 1rem; } header .kicker { color: var(--muted); font-size: .8rem; text-transform: uppercase; letter-spacing: .05em; }
  h1 { font-size: 1.4rem; margin: .2rem 0 0; } h2 { font-size: 1.05rem; margin: 0 0 .75rem; }
  label { display: block; font-size: .85rem; margin: .85rem 0 .3rem; color: #374151; }
  input[type=text], input[type=number], input[type=date], select { width: 100%; padding: .6rem; font-size: 1rem;
    border: 1px solid #c8ccd4; border-radius: 6px; background: #fff; color: var(--ink); }
  fieldset { border: 0; padding: 0; margin: .85rem 0 0; } legend { font-size: .85rem; margin-bottom: .3rem; color: #374151; }
  .check { display: flex; align-items: center; gap: .5rem; margin: .35rem 0; font-size: .95rem; color: var(--ink); }
  .check input { width: 1.1rem; height: 1.1rem; flex: none; }
  .scope { padding: .6rem .75rem; border: 1px solid var(--line); border-radius: 8px; }
  .tag { margin-left: auto; font-size: .7rem; padding: .1rem .45rem; border-radius: 99px; background: #fdecec; color: #8a1c1c; }
  .tag.optional { background: #eef1f5; color: var(--muted); }
  .row { display: grid; grid-template-columns: 1fr 1fr; gap: 0 .75rem; }
  button { padding: .75rem 1.1rem; font-size: 1rem; border: 0; border-radius: 8px; background: var(--accent); color: #fff; cursor: pointer; }
  button.wide { width: 100%; margin-top: 1.25rem; }
  button.secondary { background: #eef1fb; color: #2c46a8; } button.danger { background: #c0392b; }
  button.link { background: none; color: #8a1c1c; padding: .25rem 0; font-size: .85rem; text-decoration: underline; }
  button:disabled { opacity: .55; cursor: wait; }
  .buttons { display: flex; gap: .6rem; flex-wrap: wrap; margin-top: 1rem; } .buttons button { flex: 1 1 8rem; }
  .error { background: #fdecec; color: #8a1c1c; padding: .75rem; border-radius: 8px; }
  .ok { background: #e8f6ec; color: #1d5e31; padding: .75rem; border-radius: 8px; }
  .note, .muted { color: var(--muted); font-size: .85rem; }
  .consent-text { white-space: pre-wrap; background: #fafbfc; border: 1px solid var(--line); border-radius: 8px; padding: .75rem;
    max-height: 16rem; overflow-y: auto; font-size: .92rem; }
  blockquote { margin: .5rem 0 1rem; padding: 1rem 1.1rem; font-size: 1.3rem; line-height: 1.35; background: #f3f5fe;
    border-left: 4px solid var(--accent); border-radius: 6px; }
  .meter { height: .6rem; background: #eceef2; border-radius: 99px; overflow: hidden; }
  #level { height: 100%; width: 0; background: linear-gradient(90deg, #2fb26b, #e5b92c); transition: width .08s linear; }
  #timer { font-variant-numeric: tabular-nums; font-size: 1.1rem; margin: .5rem 0 0; }
  #step-record[data-state=recording] #timer::before { content: "● "; color: #d33; }
  audio { width: 100%; margin-top: .75rem; }
  .bar { height: .5rem; background: #eceef2; border-radius: 99px; overflow: hidden; margin: .4rem 0 .75rem; }
  #progress-bar { height: 100%; width: 0; background: var(--accent); }
  ul.list { list-style: none; padding: 0; margin: 0; }
  ul.list li { display: flex; align-items: center; gap: .6rem; padding: .55rem 0; border-bottom: 1px solid #eceef2; font-size: .92rem; }
  ul.list li:last-child { border-bottom: 0; } ul.list .prompt-text { flex: 1; min-width: 0; overflow-wrap: anywhere; }
  ul.list .count { color: var(--muted); font-size: .8rem; white-space: nowrap; }
  #prompt-list li { cursor: pointer; } #prompt-list li.done { cursor: default; }
  #prompt-list li.done .prompt-text::before { content: "✓ "; color: #1d8a4a; } #prompt-list li.current .prompt-text { font-weight: 600; }
  .badge { font-size: .72rem; padding: .15rem .5rem; border-radius: 99px; background: #fff6e0; color: #7a5a00; white-space: nowrap; }
  .badge.accepted { background: #e8f6ec; color: #1d5e31; } .badge.rejected { background: #fdecec; color: #8a1c1c; }
  footer { text-align: center; }
  @media (max-width: 480px) { main { margin: 1rem auto; } .card { padding: 1.1rem; } .row { grid-template-columns: 1fr; } blockquote { font-size: 1.15rem; } }`

const BODY = `<main>
<header class="card">
  <div class="kicker">Voice recording</div>
  <h1 id="project-name" data-testid="project-name">Loading…</h1>
</header>
<p class="error" role="alert" id="message" data-testid="message" hidden></p>
<p class="ok" role="status" id="notice" data-testid="notice" hidden></p>

<section class="card" data-step="start" id="step-start" hidden>
  <h2>About you</h2>
  <p class="muted">The research team uses these details to describe the recordings; your name is never asked.</p>
  <form id="start-form" data-testid="start-form">
    <div class="row">
      <div><label for="country">Country (two letters, e.g. DE)</label>
        <input id="country" data-testid="country" type="text" maxlength="2" pattern="[A-Za-z]{2}" autocomplete="country" required></div>
      <div><label for="region">Region (optional)</label>
        <input id="region" data-testid="region" type="text" maxlength="100"></div>
    </div>
    <label for="dob">Date of birth</label>
    <input id="dob" data-testid="dob" type="date" required>
    <div id="questions" data-testid="questions"></div>
    <button type="submit" class="wide" id="start" data-testid="start">Continue</button>
    <p class="note" id="pow-status" data-testid="pow-status" hidden></p>
  </form>
</section>

<section class="card" data-step="consent" id="step-consent" hidden>
  <h2>Consent</h2>
  <div class="consent-text" id="consent-text" data-testid="consent-text"></div>
  <div id="scopes" data-testid="scopes"></div>
  <button type="button" class="wide" id="agree" data-testid="agree">I agree</button>
</section>

<section class="card" data-step="record" id="step-record" data-state="idle" hidden>
  <p class="muted" id="prompt-count" data-testid="prompt-count"></p>
  <p class="note">Read this aloud:</p>
  <blockquote id="prompt-text" data-testid="prompt-text"></blockquote>
  <div class="meter" aria-hidden="true"><div id="level" data-testid="level"></div></div>
  <p id="timer" data-testid="timer" aria-live="polite">0:00</p>
  <audio id="preview" data-testid="preview" controls hidden></audio>
  <p class="error" id="take-note" data-testid="take-note" hidden></p>
  <div class="buttons">
    <button type="button" id="record" data-testid="record">Record</button>
    <button type="button" id="stop" data-testid="stop" class="danger" hidden>Stop</button>
    <button type="button" id="rerecord" data-testid="rerecord" class="secondary" hidden>Re-record</button>
    <button type="button" id="send" data-testid="send" hidden>Send</button>
  </div>
</section>

<section class="card" data-step="done" id="step-done" data-testid="done" hidden>
  <h2>All done, thank you!</h2>
  <p>You sent every take this project asks for. The research team reviews them; their status shows below.</p>
</section>

<section class="card" data-step="withdrawn" id="step-withdrawn" data-testid="withdrawn" hidden>
  <h2>Withdrawn</h2>
  <p id="withdrawn-text" data-testid="withdrawn-text"></p>
</section>

<section class="card" id="progress-section" hidden>
  <h2>Your progress</h2>
  <div id="progress" data-testid="progress"><span id="progress-text" data-testid="progress-text"></span>
    <div class="bar"><div id="progress-bar"></div></div></div>
  <ul class="list" id="prompt-list" data-testid="prompt-list"></ul>
</section>

<section class="card" id="takes-section" hidden>
  <h2>Your takes</h2>
  <ul class="list" id="takes" data-testid="takes"></ul>
</section>

<footer id="participant-tools" hidden>
  <button type="button" class="link" id="withdraw" data-testid="withdraw">Withdraw from this project and delete my recordings</button>
  <div class="card" id="withdraw-confirm" data-testid="withdraw-confirm" hidden>
    <p>Withdrawing deletes every recording you sent to this project. It cannot be undone.</p>
    <div class="buttons">
      <button type="button" class="danger" id="withdraw-yes" data-testid="withdraw-yes">Withdraw and delete</button>
      <button type="button" class="secondary" id="withdraw-no" data-testid="withdraw-no">Keep taking part</button>
    </div>
  </div>
</footer>
</main>`

const SCRIPT = `"use strict";
(function () {
${AUDIO_SCRIPT}
${FLOW_SCRIPT}
})();
`

/** The page's whole text: the same for every project, so it is made once. */
export const RECORD_PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>Recording</title>
<style>${STYLE}</style>
</head>
<body>
${BODY}
<script>${SCRIPT}</script>
</body>
</html>
`

const script = scriptSource(SCRIPT)

const headers = () => ({
  "cache-control": "no-store",
  "x-frame-options": "DENY",
  // Not no-referrer: with it Chromium sends `Origin: null` on the page's own POSTs, and the ingest
  // routes check Origin against the key's origins. (The key is in the fragment, never in a Referer.)
  "referrer-policy": "same-origin",
  "x-content-type-options": "nosniff",
  "permissions-policy": "microphone=(self), camera=(), geolocation=()",
  "content-security-policy": `default-src 'none'; script-src ${script()}; style-src 'unsafe-inline'; ` +
    "connect-src 'self'; media-src blob:; img-src data:; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"
})

/** GET /fieldwork/record: the participant page. */
export const RecordPageRoute = HttpRouter.add(
  "GET",
  RECORD_PAGE_PATH,
  Effect.sync(() => HttpServerResponse.setHeaders(HttpServerResponse.html(RECORD_PAGE_HTML), headers()))
)
