/**
 * A Stripe webhook, verified and read as what the platform acts on (core's ProcessorEvent):
 *
 * - the raw body's `Stripe-Signature` is checked with `stripe.webhooks.constructEvent` and the
 *   endpoint's secret, with Stripe's 300 s tolerance for the signed timestamp measured on the
 *   platform's clock; any failure is an InvalidEvent and nothing is read from the body;
 * - `checkout.session.completed`, `checkout.session.async_payment_succeeded`,
 *   `checkout.session.async_payment_failed` and `checkout.session.expired`: the session is
 *   retrieved from Stripe and read as the return page reads it (StripeResults.sessionResult),
 *   so both paths decide from the same, current object;
 * - `payment_intent.succeeded` / `payment_intent.payment_failed` of a checkout's PaymentIntent
 *   (its metadata names the order): the PaymentIntent retrieved and read; an off-session charge's
 *   are Ignored (the charge's caller already has its outcome);
 * - `charge.refunded`: every refund of the charge (listed from Stripe: the event's charge no longer
 *   embeds them), each a Reversal with its own id; `charge.dispute.created`: the dispute. The
 *   order is the PaymentIntent's metadata.
 * - anything else is Ignored (and answered 200, so Stripe does not retry it).
 */
import { InvalidEvent, type ProcessorEvent, type Reversal } from "@model-platform/core/payments"
import { Clock, Effect } from "effect"
import type Stripe from "stripe"
import { intentResult, SESSION_EXPAND, sessionResult } from "./StripeResults.ts"

export interface EventReader {
  readonly stripe: Stripe
  readonly webhookSecret: string
  readonly call: <A>(name: string, run: () => Promise<A>) => Effect.Effect<A>
}

/** Stripe's tolerance for a signature's timestamp, in seconds (its default). */
export const SIGNATURE_TOLERANCE_SECONDS = 300

const CHECKOUT_EVENTS: ReadonlySet<string> = new Set([
  "checkout.session.completed",
  "checkout.session.async_payment_succeeded",
  "checkout.session.async_payment_failed",
  "checkout.session.expired"
])

/** The order a PaymentIntent paid, as its metadata says (null: not the platform's checkout or charge). */
const orderOf = (intent: Stripe.PaymentIntent): string | null => intent.metadata["order_id"] ?? null

const idOf = (value: string | { readonly id: string } | null): string | null => (value === null ? null : typeof value === "string" ? value : value.id)

export const readEvent = (reader: EventReader, payload: string, signature: string | undefined): Effect.Effect<ProcessorEvent, InvalidEvent> =>
  Effect.gen(function*() {
    const { call, stripe } = reader
    if (signature === undefined || signature === "") return yield* new InvalidEvent({ message: "The request has no Stripe-Signature header." })
    const now = yield* Clock.currentTimeMillis
    const event = yield* Effect.try({
      try: () => stripe.webhooks.constructEvent(payload, signature, reader.webhookSecret, SIGNATURE_TOLERANCE_SECONDS, undefined, now),
      catch: (error) => new InvalidEvent({ message: `The Stripe-Signature does not verify: ${error instanceof Error ? error.message.split("\n")[0] : "invalid"}` })
    })
    const ignored: ProcessorEvent = { _tag: "Ignored", event_id: event.id, type: event.type }

    if (CHECKOUT_EVENTS.has(event.type)) {
      const sessionId = (event.data.object as Stripe.Checkout.Session).id
      const session = yield* call("checkout.sessions.retrieve", () => stripe.checkout.sessions.retrieve(sessionId, { expand: [...SESSION_EXPAND] }))
      return { _tag: "Checkout", event_id: event.id, result: sessionResult(session) } satisfies ProcessorEvent
    }

    if (event.type === "payment_intent.succeeded" || event.type === "payment_intent.payment_failed") {
      const sent = event.data.object as Stripe.PaymentIntent
      if (sent.metadata["off_session"] === "true" || orderOf(sent) === null) return ignored
      const intent = yield* call("paymentIntents.retrieve", () =>
        stripe.paymentIntents.retrieve(sent.id, { expand: ["latest_charge", "payment_method"] }))
      const result = intentResult(intent, null)
      return result === undefined ? ignored : { _tag: "Checkout", event_id: event.id, result } satisfies ProcessorEvent
    }

    if (event.type === "charge.refunded" || event.type === "charge.dispute.created") {
      const dispute = event.type === "charge.dispute.created" ? (event.data.object as Stripe.Dispute) : undefined
      const chargeId = dispute === undefined ? (event.data.object as Stripe.Charge).id : idOf(dispute.charge)
      const charge = yield* call("charges.retrieve", () => stripe.charges.retrieve(chargeId ?? "", { expand: ["payment_intent"] }))
      const intent = typeof charge.payment_intent === "object" ? charge.payment_intent : null
      if (intent === null) return ignored
      const base = { payment_id: intent.id, order_id: orderOf(intent), currency: charge.currency.toUpperCase() }
      if (dispute !== undefined) {
        const reversal: Reversal = { kind: "dispute", reference: dispute.id, amount_cents: BigInt(dispute.amount), ...base }
        return { _tag: "Reversals", event_id: event.id, reversals: [reversal] } satisfies ProcessorEvent
      }
      const refunds = yield* call("refunds.list", () => stripe.refunds.list({ charge: charge.id, limit: 100 }))
      const reversals = refunds.data
        .filter((refund) => refund.status === "succeeded" || refund.status === "pending")
        .map((refund): Reversal => ({ kind: "refund", reference: refund.id, amount_cents: BigInt(refund.amount), ...base }))
      return { _tag: "Reversals", event_id: event.id, reversals } satisfies ProcessorEvent
    }

    return ignored
  })
