/**
 * GET /admin: the operator's page (docs/operations.md "The operator console"), over the operator
 * API (OperatorRoutes.ts) and nothing else: the operator pastes their key, which the page keeps for
 * the tab (sessionStorage) and sends as a bearer header; the page itself holds no data and needs
 * no key to load. Every value is put in the page as text, never as markup.
 */
import { Effect } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { scriptSource } from "./InlineScript.ts"

export const OPERATOR_PAGE_PATH = "/admin"

const SCRIPT = String.raw`
"use strict";
const $ = (id) => document.getElementById(id);
const KEY = "model-platform-operator-key";
let current = null;

const el = (tag, text, attrs) => {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  return node;
};
const table = (target, columns, rows) => {
  const t = $(target);
  t.replaceChildren();
  const head = el("tr");
  for (const c of columns) head.append(el("th", c.title));
  t.append(head);
  for (const row of rows) {
    const tr = el("tr");
    for (const c of columns) {
      const td = el("td");
      const value = c.cell(row);
      if (value instanceof Node) td.append(value); else td.textContent = value === null || value === undefined ? "" : String(value);
      tr.append(td);
    }
    t.append(tr);
  }
};
const say = (text, bad) => {
  const n = $("notice");
  n.textContent = text;
  n.className = bad ? "bad" : "good";
};

async function api(method, path, body) {
  const key = sessionStorage.getItem(KEY) || "";
  const response = await fetch("/admin/api" + path, {
    method,
    headers: Object.assign({ authorization: "Bearer " + key }, body === undefined ? {} : { "content-type": "application/json" }),
    body: body === undefined ? undefined : JSON.stringify(body)
  });
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error((data.error && data.error.message) || ("HTTP " + response.status));
  return data;
}
const run = (f) => async (event) => {
  if (event) event.preventDefault();
  try { await f(); } catch (error) { say(error.message, true); }
};

async function showAccount(id) {
  const view = await api("GET", "/accounts/" + encodeURIComponent(id));
  current = view.account.id;
  $("account").hidden = false;
  $("account-title").textContent = view.account.email + " (" + view.account.id + ")";
  $("balance").textContent = view.balance.available_credits + " credits available, " + view.balance.held_credits + " held";
  $("tier").textContent = view.usage_tier.name + " (tier " + view.usage_tier.tier + ", " + view.usage_tier.rpm + " requests a minute)";
  table("keys", [
    { title: "key", cell: (k) => k.id },
    { title: "name", cell: (k) => k.name },
    { title: "prefix", cell: (k) => k.prefix },
    { title: "last used", cell: (k) => k.last_used_at || "never" },
    { title: "state", cell: (k) => k.revoked_at ? "revoked " + k.revoked_at : "live" },
    { title: "", cell: (k) => {
      if (k.revoked_at) return "";
      const b = el("button", "Revoke", { "data-key": k.id, type: "button" });
      b.addEventListener("click", run(async () => {
        const reason = $("revoke-reason").value.trim();
        await api("POST", "/accounts/" + encodeURIComponent(current) + "/keys/" + encodeURIComponent(k.id) + "/revoke", reason === "" ? {} : { reason });
        say("Key " + k.id + " revoked.");
        await showAccount(current);
        await showAudit();
      }));
      return b;
    } }
  ], view.keys);
  table("plans", [
    { title: "plan", cell: (p) => p.id },
    { title: "machine", cell: (p) => p.machine_id },
    { title: "what", cell: (p) => p.plan_id ? "subscription " + p.plan_id : "rental " + p.hours + " h" },
    { title: "until", cell: (p) => p.current_period_end || p.ends_at }
  ], [...view.subscriptions, ...view.rentals]);
  table("calls", [
    { title: "ref", cell: (c) => { const b = el("button", c.ref, { type: "button", class: "link" }); b.addEventListener("click", run(() => showCall(c.ref))); return b; } },
    { title: "at", cell: (c) => c.at },
    { title: "model", cell: (c) => c.model },
    { title: "machine", cell: (c) => c.machine_id },
    { title: "tokens", cell: (c) => c.input_tokens + " in, " + c.output_tokens + " out" },
    { title: "credits", cell: (c) => c.credits }
  ], view.recent_calls);
  table("activity", [
    { title: "entry", cell: (a) => a.id },
    { title: "type", cell: (a) => a.type },
    { title: "credits", cell: (a) => a.credits },
    { title: "at", cell: (a) => a.at }
  ], view.activity);
}

async function showCall(ref) {
  const view = await api("GET", "/calls/" + encodeURIComponent(ref));
  $("call-view").textContent = JSON.stringify(view, null, 2);
}

async function showMachines() {
  const view = await api("GET", "/machines");
  table("machines", [
    { title: "machine", cell: (m) => m.id },
    { title: "region", cell: (m) => m.region },
    { title: "health", cell: (m) => m.health },
    { title: "cooling down", cell: (m) => m.cooling_down ? "yes" : "no" },
    { title: "calls in flight", cell: (m) => m.calls_in_flight }
  ], view.data);
}

async function showAudit() {
  const view = await api("GET", "/audit");
  table("audit", [
    { title: "when", cell: (a) => a.created_at },
    { title: "who", cell: (a) => a.operator },
    { title: "what", cell: (a) => a.action },
    { title: "target", cell: (a) => a.target },
    { title: "reason", cell: (a) => a.reason },
    { title: "before", cell: (a) => JSON.stringify(a.before) },
    { title: "after", cell: (a) => JSON.stringify(a.after) }
  ], view.data);
}

async function signedIn() {
  $("signin").hidden = true;
  $("console").hidden = false;
  await showMachines();
  await showAudit();
}

$("signin").addEventListener("submit", run(async () => {
  sessionStorage.setItem(KEY, $("key").value.trim());
  $("key").value = "";
  await api("GET", "/machines");
  say("Signed in.");
  await signedIn();
}));
$("signout").addEventListener("click", () => { sessionStorage.removeItem(KEY); location.reload(); });
$("find").addEventListener("submit", run(async () => {
  const by = $("find-by").value;
  const found = await api("GET", "/accounts?" + new URLSearchParams({ [by]: $("find-value").value.trim() }));
  table("results", [
    { title: "account", cell: (a) => { const b = el("button", a.id, { type: "button", class: "link" }); b.addEventListener("click", run(() => showAccount(a.id))); return b; } },
    { title: "email", cell: (a) => a.email },
    { title: "created", cell: (a) => a.created_at }
  ], found.data);
  say(found.data.length + " account(s) found.");
  if (found.data.length === 1) await showAccount(found.data[0].id);
}));
$("credit").addEventListener("submit", run(async () => {
  const result = await api("POST", "/accounts/" + encodeURIComponent(current) + "/credits", {
    amount_credits: Number($("credit-amount").value),
    reason: $("credit-reason").value.trim(),
    reference: $("credit-reference").value
  });
  say(result.duplicate ? "Already credited (same reference)." : "Credited " + result.entry.amount_credits + " credits (" + result.ref + ").");
  $("credit-reference").value = crypto.randomUUID();
  $("credit-amount").value = "";
  $("credit-reason").value = "";
  await showAccount(current);
  await showAudit();
}));
$("call").addEventListener("submit", run(() => showCall($("call-ref").value.trim())));
$("reload").addEventListener("click", run(async () => {
  const result = await api("POST", "/catalogue/reload");
  say("Catalogue reloaded: " + JSON.stringify(result.after));
  await showMachines();
  await showAudit();
}));
$("refresh").addEventListener("click", run(async () => { await showMachines(); await showAudit(); }));
$("credit-reference").value = crypto.randomUUID();
if (sessionStorage.getItem(KEY)) run(signedIn)();
`

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Operator console · Model Platform</title>
<style>
  body { font: 14px/1.45 system-ui, sans-serif; margin: 0; color: #1d2330; background: #f4f6f9; }
  header { background: #1d2330; color: #fff; padding: 12px 24px; display: flex; justify-content: space-between; align-items: center; }
  header h1 { font-size: 18px; margin: 0; }
  main { padding: 16px 24px; display: grid; gap: 16px; grid-template-columns: 1fr 1fr; }
  section { background: #fff; border: 1px solid #dde2ea; border-radius: 8px; padding: 12px 16px; }
  section.wide { grid-column: 1 / -1; }
  h2 { font-size: 15px; margin: 0 0 8px; }
  table { border-collapse: collapse; width: 100%; margin: 6px 0; font-size: 13px; }
  th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid #eef0f4; vertical-align: top; overflow-wrap: anywhere; }
  [hidden] { display: none !important; }
  #audit td:nth-child(-n+3), #audit th { white-space: nowrap; }
  #audit td:nth-child(n+6) { font: 12px ui-monospace, monospace; }
  th { color: #5a6475; font-weight: 600; }
  input, select, button { font: inherit; padding: 5px 8px; border: 1px solid #c6cdd8; border-radius: 5px; }
  button { background: #2457d6; color: #fff; border-color: #2457d6; cursor: pointer; }
  button.link { background: none; color: #2457d6; border: none; padding: 0; text-decoration: underline; }
  form { display: flex; gap: 8px; flex-wrap: wrap; align-items: center; margin: 6px 0; }
  #notice { grid-column: 1 / -1; margin: 0; min-height: 1em; }
  .good { color: #176b32; } .bad { color: #b3261e; }
  #console:not([hidden]) { display: contents; }
  pre { background: #f7f8fa; padding: 8px; overflow: auto; max-height: 320px; font-size: 12px; }
</style>
</head>
<body>
<header><h1>Operator console</h1><button id="signout" type="button">Sign out</button></header>
<main>
  <p id="notice" role="status"></p>
  <form id="signin" class="wide">
    <label>Operator key <input id="key" type="password" autocomplete="off" placeholder="mpo_…" required></label>
    <button type="submit">Sign in</button>
  </form>
  <div id="console" hidden>
    <section class="wide">
      <h2>Find an account</h2>
      <form id="find">
        <select id="find-by"><option value="email">email</option><option value="id">account id</option><option value="key">key prefix or secret</option></select>
        <input id="find-value" required size="40">
        <button type="submit">Find</button>
      </form>
      <table id="results"></table>
    </section>
    <section id="account" class="wide" hidden>
      <h2 id="account-title"></h2>
      <p><strong>Balance:</strong> <span id="balance"></span> · <strong>Tier:</strong> <span id="tier"></span></p>
      <form id="credit">
        <strong>Credit adjustment</strong>
        <input id="credit-amount" type="number" step="0.000001" min="0.000001" placeholder="credits" required>
        <input id="credit-reason" placeholder="reason (refund, goodwill…)" maxlength="500" required size="40">
        <input id="credit-reference" type="hidden">
        <button type="submit">Credit</button>
      </form>
      <h2>Keys</h2>
      <form><input id="revoke-reason" placeholder="reason for a revocation (optional)" maxlength="500" size="40"></form>
      <table id="keys"></table>
      <h2>Plans and rentals</h2><table id="plans"></table>
      <h2>Recent calls</h2><table id="calls"></table>
      <h2>Activity</h2><table id="activity"></table>
    </section>
    <section>
      <h2>Machines <button id="refresh" type="button">Refresh</button> <button id="reload" type="button">Reload the catalogue</button></h2>
      <table id="machines"></table>
    </section>
    <section>
      <h2>One call</h2>
      <form id="call"><input id="call-ref" placeholder="call ref (usage_… or res_…)" required size="36"><button type="submit">Look up</button></form>
      <pre id="call-view"></pre>
    </section>
    <section class="wide">
      <h2>Audit log (this month)</h2>
      <table id="audit"></table>
    </section>
  </div>
</main>
<script>${SCRIPT}</script>
</body>
</html>
`

const script = scriptSource(SCRIPT)

const headers = () => ({
  "cache-control": "no-store",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff",
  "content-security-policy": `default-src 'none'; script-src ${script()}; style-src 'unsafe-inline'; ` +
    "connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"
})

/** GET /admin: the operator's page. */
export const OperatorPageRoute = HttpRouter.add(
  "GET",
  OPERATOR_PAGE_PATH,
  Effect.sync(() => HttpServerResponse.setHeaders(HttpServerResponse.html(PAGE), headers()))
)
