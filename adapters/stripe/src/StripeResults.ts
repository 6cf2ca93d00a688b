/**
 * Stripe's objects and errors read as the CardProcessor port's values (pure): a Checkout Session
 * (expanded with its PaymentIntent or SetupIntent and their payment method) as a CheckoutResult, a
 * card error as a Declined outcome, a saved payment method as a card reference and a description.
 */
import type { CardOutcome, CheckoutResult, DeclineReason, SavedCardReference } from "@model-platform/core/payments"
import type Stripe from "stripe"

type Declined = Extract<CardOutcome, { readonly _tag: "Declined" }>

/** Stripe error codes the port names as they are. */
const SAME: ReadonlySet<string> = new Set<DeclineReason>([
  "expired_card",
  "incorrect_cvc",
  "incorrect_number",
  "invalid_expiry",
  "processing_error",
  "authentication_required"
])

/** decline_codes of card_declined the port names (the rest are card_declined). */
const DECLINE_CODES: ReadonlySet<string> = new Set<DeclineReason>(["insufficient_funds", "lost_card", "authentication_required"])

/** A card error (Stripe's `code` and `decline_code`) as the port's decline. */
export const declineOf = (code: string | undefined, declineCode: string | undefined, message: string | undefined): Declined => {
  const reason: DeclineReason = code !== undefined && SAME.has(code)
    ? code as DeclineReason
    : declineCode !== undefined && DECLINE_CODES.has(declineCode)
    ? declineCode as DeclineReason
    : "card_declined"
  return { _tag: "Declined", reason, message: message ?? "Your card was declined." }
}

const BRANDS: Record<string, string> = {
  visa: "Visa",
  mastercard: "Mastercard",
  amex: "American Express",
  discover: "Discover",
  jcb: "JCB",
  diners: "Diners Club",
  unionpay: "UnionPay"
}

/** How people see a saved card: "Visa •••• 4242, expires 12/2034". The reference is the PaymentMethod. */
export const savedCardOf = (method: Stripe.PaymentMethod): SavedCardReference => {
  const card = method.card
  if (card === undefined || card === null) return { reference: method.id, description: "A saved payment method" }
  const month = String(card.exp_month).padStart(2, "0")
  return {
    reference: method.id,
    description: `${BRANDS[card.brand] ?? card.brand} •••• ${card.last4}, expires ${month}/${card.exp_year}`
  }
}

const objectOf = <A extends { readonly id: string }>(value: string | A | null | undefined): A | undefined =>
  typeof value === "object" && value !== null ? value : undefined

const chargeTime = (intent: Stripe.PaymentIntent): number => {
  const charge = objectOf(intent.latest_charge as string | Stripe.Charge | null)
  return (charge?.created ?? intent.created) * 1000
}

/** A PaymentIntent as what it came to, for the order and account given. */
const intentOutcome = (intent: Stripe.PaymentIntent, sessionId: string | null, orderId: string, accountId: string): CheckoutResult => {
  if (intent.status === "processing") return { _tag: "Processing", session_id: sessionId }
  if (intent.status !== "succeeded") return { _tag: "Failed", session_id: sessionId }
  const method = objectOf(intent.payment_method as string | Stripe.PaymentMethod | null)
  return {
    _tag: "Paid",
    session_id: sessionId,
    order_id: orderId,
    account_id: accountId,
    amount_cents: BigInt(intent.amount_received),
    currency: intent.currency.toUpperCase(),
    payment_id: intent.id,
    paid_at: chargeTime(intent),
    saved_card: intent.setup_future_usage === "off_session" && method !== undefined && method.customer !== null ? savedCardOf(method) : null
  }
}

/**
 * A PaymentIntent the platform's checkout made (its metadata names the order and the account) as
 * what it came to; undefined for one that names no order.
 */
export const intentResult = (intent: Stripe.PaymentIntent, sessionId: string | null): CheckoutResult | undefined => {
  const orderId = intent.metadata["order_id"]
  const accountId = intent.metadata["account_id"]
  if (orderId === undefined || accountId === undefined) return undefined
  return intentOutcome(intent, sessionId, orderId, accountId)
}

/** The expansions `sessionResult` needs on a retrieved Checkout Session. */
export const SESSION_EXPAND = ["payment_intent.latest_charge", "payment_intent.payment_method", "setup_intent.payment_method"] as const

/** A Checkout Session (retrieved with SESSION_EXPAND) as what it came to. */
export const sessionResult = (session: Stripe.Checkout.Session): CheckoutResult => {
  const id = session.id
  if (session.status === "expired") return { _tag: "Expired", session_id: id }
  if (session.status !== "complete") return { _tag: "Open", session_id: id }
  if (session.mode === "setup") {
    const intent = objectOf(session.setup_intent as string | Stripe.SetupIntent | null)
    const method = objectOf(intent?.payment_method as string | Stripe.PaymentMethod | null | undefined)
    const accountId = session.metadata?.["account_id"]
    if (intent?.status !== "succeeded" || method === undefined || accountId === undefined) return { _tag: "Failed", session_id: id }
    return { _tag: "CardSaved", session_id: id, account_id: accountId, card: savedCardOf(method), opened_at: session.created * 1000 }
  }
  const intent = objectOf(session.payment_intent as string | Stripe.PaymentIntent | null)
  if (intent === undefined) return { _tag: "Processing", session_id: id }
  // The session names what it was opened for: its reference and metadata (the platform checks them against the order).
  const orderId = session.client_reference_id
  const accountId = session.metadata?.["account_id"]
  if (orderId === null || accountId === undefined) return { _tag: "Failed", session_id: id }
  return intentOutcome(intent, id, orderId, accountId)
}
