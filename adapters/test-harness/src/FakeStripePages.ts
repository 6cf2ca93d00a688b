/**
 * The fake Stripe's hosted pages (FakeStripe.ts): the Checkout page where a person types a card
 * (payment or setup mode), the bank's authentication step (3-D Secure) a card may ask for, and the
 * page of a session that can no longer be completed. Elements carry `data-testid` for browser
 * tests: card-number, expiry, cvc, pay, declined, authenticate-complete, authenticate-fail, cancel.
 */
import type { Decline } from "./FakeStripeCards.ts"
import type { StripeObject } from "./FakeStripeState.ts"

const escape = (text: string): string =>
  text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;" })[c]!)

const layout = (title: string, body: string) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escape(title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:30rem;margin:3rem auto;color:#1a1f36}
label{display:block;margin:.6rem 0 .2rem}input{width:100%;padding:.5rem;box-sizing:border-box}
button{margin-top:1rem;padding:.6rem 1rem}.error{background:#fde8e8;padding:.6rem}.test{color:#a05a00}</style>
</head><body><p class="test">Fake Stripe (test mode)</p>${body}</body></html>`

const amountText = (session: StripeObject) =>
  session["amount_total"] === null ? "" : `${(session["amount_total"] / 100).toFixed(2)} ${String(session["currency"]).toUpperCase()}`

/** The Checkout page of an open session, with the refusal of the last submission when there was one. */
export const checkoutPage = (session: StripeObject, decline?: Decline) =>
  layout(
    session["mode"] === "setup" ? "Save a card" : "Pay",
    `<h1>${session["mode"] === "setup" ? "Save a card for later payments" : `Pay ${escape(amountText(session))}`}</h1>
${decline === undefined ? "" : `<p class="error" role="alert" data-testid="declined">${escape(decline.message)} (${escape(decline.decline_code ?? decline.code)})</p>`}
<form method="post" action="/c/pay/${escape(session["id"])}">
<label for="card">Card number</label><input id="card" name="card_number" data-testid="card-number" autocomplete="off" required>
<label for="exp">Expiry (MM/YY)</label><input id="exp" name="expiry" data-testid="expiry" autocomplete="off" required>
<label for="cvc">CVC</label><input id="cvc" name="cvc" data-testid="cvc" autocomplete="off" required>
<button type="submit" data-testid="pay">${session["mode"] === "setup" ? "Save card" : "Pay"}</button>
</form>
${session["cancel_url"] === null ? "" : `<p><a href="/c/pay/${escape(session["id"])}/cancel" data-testid="cancel">Cancel and go back</a></p>`}`
  )

/** The bank's authentication step: complete it or fail it. */
export const authenticatePage = (session: StripeObject, attempt: string) =>
  layout(
    "Authenticate",
    `<h1>Your bank asks you to confirm this ${session["mode"] === "setup" ? "card" : "payment"}</h1>
<p>${escape(amountText(session))}</p>
<form method="post" action="/c/pay/${escape(session["id"])}/authenticate">
<input type="hidden" name="attempt" value="${escape(attempt)}">
<button type="submit" name="result" value="complete" data-testid="authenticate-complete">Complete authentication</button>
<button type="submit" name="result" value="fail" data-testid="authenticate-fail">Fail authentication</button>
</form>`
  )

/** A session that is complete or expired. */
export const closedPage = (session: StripeObject) =>
  layout("Checkout", `<h1 data-testid="closed">This checkout is ${escape(session["status"])}.</h1>`)
