/**
 * Stripe as the platform's card processor (catalogue `payments.card.processor: "stripe"`,
 * docs/payments.md "Going live with Stripe"), behind core's CardProcessor port, with the official
 * `stripe` client pinned to API version 2026-10-28.endive.
 *
 * - An order's checkout is a Checkout Session in payment mode for the order's exact amount and
 *   currency, the order id as `client_reference_id` and (with the account) in the session's and
 *   the PaymentIntent's metadata, the account's one Customer (StripeCustomers.ts); a plan keeps
 *   the card (`setup_future_usage: off_session`). The person comes back to
 *   `<base>/checkout/<session>`, where the platform asks `checkoutResult`.
 * - Saving a card is a Checkout Session in setup mode; the card is its SetupIntent's
 *   PaymentMethod, whose id is the saved card's reference.
 * - An off-session charge is a PaymentIntent (`off_session`, `confirm`) whose Idempotency-Key is
 *   the platform's (the order being paid), so a retry by the platform or by the client is the same
 *   charge. A card error is a decline (StripeResults.declineOf), `authentication_required` included.
 * - Webhooks are verified with `stripe.webhooks.constructEvent` (300 s tolerance, against the
 *   platform's clock) and read by StripeEvents.ts.
 *
 * Anything else Stripe answers (unreachable, a 5xx, a refused request) is a defect carrying
 * Stripe's message, never the keys.
 */
import {
  type CardOutcome,
  CardProcessor,
  type CardSetupRequest,
  type CheckoutRequest,
  type InvalidEvent,
  type OffSessionCharge,
  type ProcessorEvent
} from "@model-platform/core/payments"
import { DocumentStores } from "@model-platform/core/kernel"
import { Clock, Effect, Layer, Redacted } from "effect"
import Stripe from "stripe"
import { makeStripeCustomers } from "./StripeCustomers.ts"
import { readEvent } from "./StripeEvents.ts"
import { declineOf, savedCardOf, SESSION_EXPAND, sessionResult } from "./StripeResults.ts"

/** The API version the platform is written against (Stripe's dashboard must send webhooks in it too). */
export const STRIPE_API_VERSION = "2026-10-28.endive"

export interface StripeProcessorOptions {
  /** STRIPE_SECRET_KEY (sk_live_… or sk_test_…; a restricted key with the calls below works too). */
  readonly secretKey: Redacted.Redacted<string>
  /** STRIPE_WEBHOOK_SECRET: the webhook endpoint's signing secret (whsec_…). */
  readonly webhookSecret: Redacted.Redacted<string>
  /** Where Stripe is and how the client behaves (tests: the fake's host, port and protocol, no retries). */
  readonly client?: {
    readonly host?: string
    readonly port?: number
    readonly protocol?: "http" | "https"
    /** Default 2 (the client's): every POST carries an Idempotency-Key, so a retry is the same request. */
    readonly maxNetworkRetries?: number
    /** Milliseconds; default 20 s (a Lambda has seconds, not the client's 80). */
    readonly timeout?: number
  }
}

/** A call Stripe did not answer as expected: a defect, with Stripe's message (never a key). */
export class StripeCallFailed extends Error {
  readonly call: string
  constructor(call: string, cause: unknown) {
    super(`Stripe ${call} failed: ${cause instanceof Error ? `${cause.constructor.name}: ${cause.message}` : String(cause)}`)
    this.name = "StripeCallFailed"
    this.call = call
  }
}

/** Stripe's error when the call failed with one. */
const stripeError = (error: unknown): Stripe.errors.StripeError | undefined =>
  error instanceof Stripe.errors.StripeError ? error : undefined

/** The earliest and latest `expires_at` Stripe takes: 30 minutes to 24 hours after now (a minute of margin each side). */
const sessionExpiry = (windowEnd: string, nowMillis: number): number => {
  const now = Math.floor(nowMillis / 1000)
  const end = Math.floor(Date.parse(windowEnd) / 1000)
  return Math.min(Math.max(end, now + 31 * 60), now + 24 * 3600 - 60)
}

/** The client of these options (exported for tests and scripts that talk to the same Stripe). */
export const stripeClient = (options: StripeProcessorOptions): Stripe =>
  new Stripe(Redacted.value(options.secretKey), {
    apiVersion: STRIPE_API_VERSION,
    maxNetworkRetries: options.client?.maxNetworkRetries ?? 2,
    timeout: options.client?.timeout ?? 20_000,
    ...(options.client?.host === undefined ? {} : { host: options.client.host }),
    ...(options.client?.port === undefined ? {} : { port: options.client.port }),
    ...(options.client?.protocol === undefined ? {} : { protocol: options.client.protocol })
  })

export const make = (options: StripeProcessorOptions): Effect.Effect<CardProcessor["Service"], never, DocumentStores> =>
  Effect.gen(function*() {
    const stripe = stripeClient(options)
    const webhookSecret = Redacted.value(options.webhookSecret)

    /** Calls Stripe; any failure is a defect (`call` names it). */
    const call = <A>(name: string, run: () => Promise<A>): Effect.Effect<A> =>
      Effect.tryPromise({ try: run, catch: (error) => new StripeCallFailed(name, error) }).pipe(Effect.orDie)

    /** Calls Stripe; a card error is answered, anything else is a defect. */
    const callCard = <A>(name: string, run: () => Promise<A>): Effect.Effect<A | Extract<CardOutcome, { _tag: "Declined" }>> =>
      Effect.tryPromise({ try: run, catch: (error) => error }).pipe(
        Effect.catch((error) => {
          const failure = stripeError(error)
          if (failure instanceof Stripe.errors.StripeCardError) return Effect.succeed(declineOf(failure.code, failure.decline_code, failure.message))
          // A saved card Stripe no longer has, or no longer attached to the customer: it cannot be charged.
          if (failure instanceof Stripe.errors.StripeInvalidRequestError && failure.param === "payment_method") {
            return Effect.succeed(declineOf("card_declined", undefined, "The saved card can no longer be charged; save a card again."))
          }
          return Effect.die(new StripeCallFailed(name, error))
        })
      )

    const customers = yield* makeStripeCustomers((accountId) =>
      Effect.map(
        call("customers.create", () =>
          stripe.customers.create({ metadata: { account_id: accountId } }, { idempotencyKey: `customer-${accountId}` })),
        (customer) => customer.id
      )
    )

    const createSession = Effect.fn("Stripe.createSession")(function*(request: CheckoutRequest) {
      const customer = yield* customers.of(request.account_id)
      const metadata = { order_id: request.order_id, account_id: request.account_id }
      const returnUrl = `${request.base_url}/checkout/{CHECKOUT_SESSION_ID}`
      const expiresAt = sessionExpiry(request.expires_at, yield* Clock.currentTimeMillis)
      const session = yield* call("checkout.sessions.create", () =>
        stripe.checkout.sessions.create({
          mode: "payment",
          customer,
          client_reference_id: request.order_id,
          metadata,
          line_items: [{
            quantity: 1,
            price_data: {
              currency: request.currency.toLowerCase(),
              unit_amount: Number(request.amount_cents),
              product_data: { name: request.title }
            }
          }],
          payment_intent_data: {
            description: request.title,
            metadata,
            ...(request.save_card ? { setup_future_usage: "off_session" as const } : {})
          },
          success_url: returnUrl,
          cancel_url: returnUrl,
          expires_at: expiresAt
        }))
      if (session.url === null) return yield* Effect.die(new StripeCallFailed("checkout.sessions.create", "the session has no url"))
      return { session_id: session.id, checkout_url: session.url }
    })

    const openCardSetup = Effect.fn("Stripe.openCardSetup")(function*(request: CardSetupRequest) {
      const customer = yield* customers.of(request.account_id)
      const separator = request.return_url.includes("?") ? "&" : "?"
      const session = yield* call("checkout.sessions.create", () =>
        stripe.checkout.sessions.create({
          mode: "setup",
          currency: "usd",
          customer,
          metadata: { account_id: request.account_id },
          setup_intent_data: { metadata: { account_id: request.account_id } },
          success_url: `${request.return_url}${separator}session_id={CHECKOUT_SESSION_ID}`,
          cancel_url: request.return_url
        }))
      if (session.url === null) return yield* Effect.die(new StripeCallFailed("checkout.sessions.create", "the session has no url"))
      return { session_id: session.id, checkout_url: session.url }
    })

    const checkoutResult = Effect.fn("Stripe.checkoutResult")(function*(sessionId: string) {
      const session = yield* call("checkout.sessions.retrieve", () => stripe.checkout.sessions.retrieve(sessionId, { expand: [...SESSION_EXPAND] }))
      return sessionResult(session)
    })

    const chargeSaved = Effect.fn("Stripe.chargeSaved")(function*(charge: OffSessionCharge) {
      const customer = yield* customers.find(charge.account_id)
      if (customer === undefined) return declineOf("card_declined", undefined, "No card is saved with Stripe for this account.")
      const outcome = yield* callCard("paymentIntents.create", () =>
        stripe.paymentIntents.create(
          {
            amount: Number(charge.amount_cents),
            currency: charge.currency.toLowerCase(),
            customer,
            payment_method: charge.reference,
            off_session: true,
            confirm: true,
            description: charge.description,
            // The platform's idempotency keys are the ids of the orders they pay (TopUp.ts, Renewals.ts).
            metadata: { order_id: charge.idempotency_key, account_id: charge.account_id, off_session: "true" }
          },
          { idempotencyKey: charge.idempotency_key }
        ))
      if ("_tag" in outcome) return outcome
      if (outcome.status === "succeeded") return { _tag: "Approved", charge_id: outcome.id } satisfies CardOutcome
      // requires_action: the bank wants the person (never with off_session, but then it is the same answer).
      return declineOf(
        outcome.status === "requires_action" ? "authentication_required" : "card_declined",
        undefined,
        outcome.last_payment_error?.message
      )
    })

    const verifyEvent = (payload: string, signature: string | undefined): Effect.Effect<ProcessorEvent, InvalidEvent> =>
      readEvent({ stripe, webhookSecret, call }, payload, signature)

    const notOnItsPages = (operation: string) => () =>
      Effect.die(new Error(`Stripe takes cards on its own pages; the platform's ${operation} is for the test processor`))

    return CardProcessor.of({
      processor: "stripe",
      pages: "processor",
      createSession,
      charge: notOnItsPages("checkout form"),
      saveCard: notOnItsPages("card form"),
      chargeSaved,
      openCardSetup,
      checkoutResult,
      verifyEvent
    })
  })

/** Stripe as the CardProcessor port (its customers kept in the document store). */
export const layer = (options: StripeProcessorOptions): Layer.Layer<CardProcessor, never, DocumentStores> =>
  Layer.effect(CardProcessor, make(options))

/** `savedCardOf` for scripts and tests that save a card with the client directly. */
export { savedCardOf }

export const StripeCardProcessor = { layer, make, stripeClient, STRIPE_API_VERSION } as const
