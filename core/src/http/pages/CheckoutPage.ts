/**
 * The hosted checkout page of the test card processor, as pure functions from data to HTML
 * (docs/payments.md). The platform serves it for a person at the order's `pay_url`:
 *
 *   GET  /checkout/{session_id}   -> `checkoutPage(info)`: the card form (or the paid / expired page)
 *   POST /checkout/{session_id}   -> form fields -> `parseCheckoutForm` -> `Orders.completeCardPayment`
 *                                    -> `paidPage(info)` or `declinedPage(info, decline)`
 *                                    (an unreadable form: `checkoutPage(info, { error })`)
 *
 * The form posts to its own address (no `action` attribute), as
 * `application/x-www-form-urlencoded` with the fields `card_number`, `expiry` (MM/YY or MM/YYYY)
 * and `cvc`. Every value that reaches the page is HTML-escaped, and typed card details are never
 * echoed back. Elements tests look for carry `data-testid`.
 */
import type { CardDetails, DeclineReason } from "../../payments/CardProcessor.ts"
import type { CheckoutInfo } from "../../payments/Orders.ts"

/** Escapes text for HTML element content and double- or single-quoted attribute values. */
export const escapeHtml = (text: string): string =>
  text.replace(/[&<>"'`=]/g, (c) =>
    ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;", "`": "&#96;", "=": "&#61;" })[c]!)

const STYLE = `
  body { font-family: system-ui, sans-serif; background: #f5f6f8; color: #1d2330; margin: 0; }
  main { max-width: 28rem; margin: 3rem auto; background: #fff; border-radius: 12px; padding: 2rem;
         box-shadow: 0 2px 12px rgba(0,0,0,.08); }
  h1 { font-size: 1.25rem; margin: 0 0 .25rem; }
  .amount { font-size: 2rem; font-weight: 600; margin: .5rem 0 1.5rem; }
  label { display: block; font-size: .85rem; margin: .75rem 0 .25rem; }
  input { width: 100%; box-sizing: border-box; padding: .6rem; font-size: 1rem; border: 1px solid #c8ccd4;
          border-radius: 6px; }
  .row { display: flex; gap: .75rem; } .row > div { flex: 1; }
  button { margin-top: 1.25rem; width: 100%; padding: .75rem; font-size: 1rem; border: 0; border-radius: 6px;
           background: #3a5bd9; color: #fff; cursor: pointer; }
  .error { background: #fdecec; color: #8a1c1c; padding: .75rem; border-radius: 6px; }
  .ok { background: #e8f6ec; color: #1d5e31; padding: .75rem; border-radius: 6px; }
  .note { color: #6b7280; font-size: .8rem; margin-top: 1rem; }`

const layout = (title: string, body: string): string =>
  `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>${escapeHtml(title)}</title>
<style>${STYLE}</style>
</head>
<body>
<main>
${body}
</main>
</body>
</html>
`

const header = (info: CheckoutInfo): string =>
  `<h1 data-testid="order-title">${escapeHtml(info.title)}</h1>
<div class="amount" data-testid="amount">${escapeHtml(info.amount_text)}</div>`

const form = (info: CheckoutInfo): string =>
  `<form method="post" data-testid="checkout-form" autocomplete="on">
<input type="hidden" name="session_id" value="${escapeHtml(info.session_id)}">
<label for="card_number">Card number</label>
<input id="card_number" name="card_number" inputmode="numeric" autocomplete="cc-number"
       placeholder="4242 4242 4242 4242" required data-testid="card-number">
<div class="row">
<div><label for="expiry">Expiry (MM/YY)</label>
<input id="expiry" name="expiry" autocomplete="cc-exp" placeholder="12/34" required data-testid="expiry"></div>
<div><label for="cvc">CVC</label>
<input id="cvc" name="cvc" inputmode="numeric" autocomplete="cc-csc" placeholder="123" required data-testid="cvc"></div>
</div>
<button type="submit" data-testid="pay">Pay ${escapeHtml(info.amount_text)}</button>
</form>
<p class="note">Test checkout: use card 4242 4242 4242 4242 with any future expiry and any 3-digit CVC.
Card 4000 0000 0000 0002 is declined. No real card is charged.</p>`

/** The checkout page for a session as it is now: the form (with an optional error), or paid / expired. */
export const checkoutPage = (info: CheckoutInfo, options: { readonly error?: string | undefined } = {}): string => {
  if (info.status === "paid") return paidPage(info)
  if (info.status === "expired") return expiredPage(info)
  const error = options.error === undefined
    ? ""
    : `<p class="error" role="alert" data-testid="error">${escapeHtml(options.error)}</p>\n`
  return layout(`Pay: ${info.title}`, `${header(info)}\n${error}${form(info)}`)
}

/** The order is paid. */
export const paidPage = (info: CheckoutInfo): string =>
  layout(
    `Paid: ${info.title}`,
    `${header(info)}
<p class="ok" role="status" data-testid="paid">Payment received${
      info.paid_at === null ? "" : ` at ${escapeHtml(info.paid_at)}`
    }. Order ${escapeHtml(info.order_id)} is paid; you can close this page.</p>`
  )

/** The card was declined: the reason, and the form to try another card. */
export const declinedPage = (
  info: CheckoutInfo,
  decline: { readonly reason: DeclineReason | string; readonly message: string }
): string =>
  layout(
    `Declined: ${info.title}`,
    `${header(info)}
<p class="error" role="alert" data-testid="declined">${escapeHtml(decline.message)}
(<span data-testid="decline-reason">${escapeHtml(decline.reason)}</span>) Nothing was charged.</p>
${info.status === "open" ? form(info) : ""}`
  )

/** The payment window closed before the order was paid. */
export const expiredPage = (info: CheckoutInfo): string =>
  layout(
    `Expired: ${info.title}`,
    `${header(info)}
<p class="error" role="alert" data-testid="expired">This checkout has expired and can no longer be paid.
Create a new order to try again.</p>`
  )

/**
 * A person back from a processor's own checkout page (Stripe) for an order that is not paid (yet):
 * `open` — they left without paying, and may go back to the processor's page; `processing` — the
 * payment is on its way (a delayed method) and the order is paid when it arrives; `failed` — it
 * did not go through.
 */
export const returnPage = (info: CheckoutInfo, state: "open" | "processing" | "failed", payUrl: string | null): string =>
  layout(
    `Not paid yet: ${info.title}`,
    `${header(info)}
${
      state === "processing"
        ? `<p class="note" role="status" data-testid="processing">Your payment is being processed. Order ${escapeHtml(info.order_id)} is paid as soon as it arrives; you can close this page.</p>`
        : state === "failed"
        ? `<p class="error" role="alert" data-testid="failed">The payment did not go through; nothing was charged. Create a new order to try again.</p>`
        : `<p class="error" role="alert" data-testid="not-paid">Order ${escapeHtml(info.order_id)} is not paid yet.</p>`
    }
${state === "open" && payUrl !== null ? `<p><a href="${escapeHtml(payUrl)}" data-testid="pay-again">Go back to the payment page</a></p>` : ""}`
  )

/** No such checkout session. */
export const notFoundPage = (): string =>
  layout(
    "Checkout not found",
    `<h1>Checkout not found</h1>
<p class="error" role="alert" data-testid="not-found">There is no checkout at this address.</p>`
  )

export type ParsedCheckoutForm =
  | { readonly _tag: "Card"; readonly card: CardDetails }
  | { readonly _tag: "Invalid"; readonly message: string }

/**
 * Reads the posted form fields. Shape only (digits, an MM/YY date, a CVC of 3 or 4 digits): the
 * processor decides whether the card is valid, so its decline reasons reach the person.
 */
export const parseCheckoutForm = (fields: Readonly<Record<string, string | undefined>>): ParsedCheckoutForm => {
  const number = (fields["card_number"] ?? "").replace(/[\s-]/g, "")
  if (!/^\d{1,19}$/.test(number)) return { _tag: "Invalid", message: "Enter the card number (digits only)." }
  const expiry = /^\s*(\d{1,2})\s*\/\s*(\d{2}|\d{4})\s*$/.exec(fields["expiry"] ?? "")
  if (expiry === null) return { _tag: "Invalid", message: "Enter the expiry as MM/YY." }
  const month = Number(expiry[1])
  const year = expiry[2]!.length === 2 ? 2000 + Number(expiry[2]) : Number(expiry[2])
  const cvc = (fields["cvc"] ?? "").trim()
  if (!/^\d{3,4}$/.test(cvc)) return { _tag: "Invalid", message: "Enter the 3-digit security code (CVC)." }
  return { _tag: "Card", card: { number, exp_month: month, exp_year: year, cvc } }
}
