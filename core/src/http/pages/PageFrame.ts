/**
 * The frame of every page for a person (the account pages, http/pages/Pages.ts, and the billing
 * page, http/pages/BillingPage.ts): where they are served, their look, the document around a page's
 * body, and the lines every form carries (the CSRF field, the error and notice lines).
 */
import { escapeHtml } from "./CheckoutPage.ts"

/** Where the pages are served: the account service's base path and the script's addresses. */
export interface PageContext {
  /** The base path of the pages, e.g. "/accounts". */
  readonly base: string
  /** The CSRF token to embed in forms and in the meta tag for the script. */
  readonly csrf: string
  /** Appended to the scripts' addresses (`?v=`), which are cached for a year: a new version, a new address. */
  readonly version?: string | undefined
}

/** The pages' look, shared with the billing page (http/pages/BillingPage.ts). */
export const STYLE = `
  body { font-family: system-ui, sans-serif; background: #f5f6f8; color: #1d2330; margin: 0; }
  main { max-width: 32rem; margin: 3rem auto; background: #fff; border-radius: 12px; padding: 2rem;
         box-shadow: 0 2px 12px rgba(0,0,0,.08); }
  h1 { font-size: 1.25rem; margin: 0 0 .75rem; }
  h2 { font-size: 1rem; margin: 1.75rem 0 .5rem; }
  p { line-height: 1.45; }
  label { display: block; font-size: .85rem; margin: .75rem 0 .25rem; }
  input[type=email], input[type=text] { width: 100%; box-sizing: border-box; padding: .6rem; font-size: 1rem;
          border: 1px solid #c8ccd4; border-radius: 6px; }
  fieldset { border: 0; padding: 0; margin: .75rem 0 0; } legend { font-size: .85rem; margin-bottom: .25rem; }
  .check { display: inline-flex; align-items: center; gap: .3rem; margin-right: 1rem; font-size: .9rem; }
  #key-permissions .check { display: flex; align-items: baseline; gap: .5rem; margin: .3rem 0; }
  button { margin-top: 1.25rem; width: 100%; padding: .75rem; font-size: 1rem; border: 0; border-radius: 6px;
           background: #3a5bd9; color: #fff; cursor: pointer; }
  button.secondary { background: #eef1fb; color: #2c46a8; }
  button.small { width: auto; margin: 0; padding: .35rem .75rem; font-size: .85rem; }
  button:disabled { opacity: .6; cursor: wait; }
  .error { background: #fdecec; color: #8a1c1c; padding: .75rem; border-radius: 6px; }
  .ok { background: #e8f6ec; color: #1d5e31; padding: .75rem; border-radius: 6px; }
  .note { color: #6b7280; font-size: .8rem; margin-top: 1rem; }
  .secret { font-family: ui-monospace, monospace; background: #fff8e6; border: 1px solid #f0d48a; padding: .75rem;
            border-radius: 6px; word-break: break-all; }
  pre { background: #1d2330; color: #e6e9ef; padding: .75rem; border-radius: 6px; font-size: .8rem;
        overflow-x: auto; white-space: pre-wrap; overflow-wrap: anywhere; }
  dl { display: grid; grid-template-columns: max-content 1fr; gap: .35rem 1rem; font-size: .9rem; }
  dt { color: #6b7280; } dd { margin: 0; word-break: break-all; }
  ul.list { list-style: none; padding: 0; margin: 0; }
  ul.list li { display: flex; justify-content: space-between; align-items: center; gap: .5rem;
               padding: .5rem 0; border-bottom: 1px solid #eceef2; font-size: .9rem; }
  ul.list li form { margin: 0; }
  nav { display: flex; justify-content: space-between; font-size: .85rem; margin-bottom: 1rem; }
  a { color: #2c46a8; }
  a.button { display: block; text-align: center; text-decoration: none; padding: .75rem; border-radius: 6px;
             background: #3a5bd9; color: #fff; font-size: 1rem; }`

const v = (ctx: PageContext) => ctx.version === undefined ? "" : `?v=${escapeHtml(ctx.version)}`

/** A page: `script` loads the passkey scripts; `style` is added to the shared look (the billing page's). */
export const layout = (
  ctx: PageContext,
  title: string,
  body: string,
  options: { readonly script?: boolean; readonly style?: string } = {}
): string =>
  `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<meta name="csrf-token" content="${escapeHtml(ctx.csrf)}">
<meta name="accounts-base" content="${escapeHtml(ctx.base)}">
<title>${escapeHtml(title)}</title>
<style>${STYLE}${options.style ?? ""}</style>
${
    options.script === true
      ? `<script src="${escapeHtml(ctx.base)}/webauthn.js${v(ctx)}" defer></script>
<script src="${escapeHtml(ctx.base)}/accounts.js${v(ctx)}" defer></script>
`
      : ""
  }</head>
<body>
<main>
${body}
</main>
</body>
</html>
`

export const csrfField = (ctx: PageContext) => `<input type="hidden" name="csrf" value="${escapeHtml(ctx.csrf)}">`

/** The error line every page can carry: shown by the server, or filled in by the page script. */
export const errorLine = (error: string | undefined) =>
  error === undefined
    ? `<p class="error" role="alert" id="error" hidden></p>`
    : `<p class="error" role="alert" id="error">${escapeHtml(error)}</p>`

export const okLine = (message: string | undefined) =>
  message === undefined ? "" : `<p class="ok" role="status" id="notice">${escapeHtml(message)}</p>`
