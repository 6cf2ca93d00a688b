/**
 * Port: a card processor with a hosted checkout for a person (docs/payments.md).
 *
 * 1. `createSession` opens a checkout session for an order and returns where a person pays it
 *    (`checkout_url`, shown as the order's `pay_url`).
 * 2. The session completes: the person's card is approved or declined. With a hosted page the
 *    platform serves itself (the built-in test processor, core/src/payments/TestCardProcessor.ts) that is
 *    `charge`, called by `Orders.completeCardPayment` with the card details the page collected
 *    and the order as the idempotency key: a charge for an order is made at most once, however
 *    many submissions of its checkout arrive at once, in one process or many (Stripe: one
 *    PaymentIntent per order). A processor hosting its own page would instead report the same
 *    `CardOutcome` through a callback, applied by the same rules.
 *
 * For automatic top-ups (docs/billing.md "Automatic top-ups") a person saves a card once
 * (`saveCard`, on the billing page), and the platform later charges it while nobody is there
 * (`chargeSaved`, off-session) with an idempotency key, so a charge retried after a crash or by a
 * second process is the same charge, never a second one (Stripe: a PaymentMethod attached to a
 * Customer, then a PaymentIntent with off_session and an Idempotency-Key).
 *
 * The platform never stores card details: they pass through `charge` or `saveCard` and are
 * forgotten; a saved card is the processor's reference and a description for people.
 */
import { Context, type Effect } from "effect"

/** What a checkout session is opened for. */
export interface CheckoutRequest {
  readonly order_id: string
  readonly account_id: string
  readonly title: string
  readonly amount_cents: bigint
  readonly currency: string
}

export interface CheckoutSession {
  readonly session_id: string
  /** The hosted checkout page for a person. */
  readonly checkout_url: string
}

/** Card details as a person typed them (digits only in `number`). */
export interface CardDetails {
  readonly number: string
  readonly exp_month: number
  /** Four digits. */
  readonly exp_year: number
  readonly cvc: string
}

/**
 * Why a card was declined (Stripe's codes): card_declined, insufficient_funds, lost_card,
 * expired_card, incorrect_cvc, incorrect_number, invalid_expiry, processing_error.
 */
export type DeclineReason =
  | "card_declined"
  | "insufficient_funds"
  | "lost_card"
  | "expired_card"
  | "incorrect_cvc"
  | "incorrect_number"
  | "invalid_expiry"
  | "processing_error"

export type CardOutcome =
  | { readonly _tag: "Approved"; readonly charge_id: string }
  | { readonly _tag: "Declined"; readonly reason: DeclineReason; readonly message: string }

/** A card saved with the processor: its reference there and how it is shown ("Visa •••• 4242, expires 12/2030"). */
export interface SavedCardReference {
  readonly reference: string
  readonly description: string
}

export type SaveCardOutcome =
  | ({ readonly _tag: "Saved" } & SavedCardReference)
  | Extract<CardOutcome, { readonly _tag: "Declined" }>

/** A charge of a saved card while the person is not present. */
export interface OffSessionCharge {
  readonly reference: string
  readonly account_id: string
  readonly amount_cents: bigint
  readonly currency: string
  readonly description: string
  /** The same key answers the same outcome, without charging again. */
  readonly idempotency_key: string
}

export class CardProcessor extends Context.Service<CardProcessor, {
  /** The processor's name, as the catalogue's payments.card.processor names it (e.g. "test"). */
  readonly processor: string
  readonly createSession: (request: CheckoutRequest) => Effect.Effect<CheckoutSession>
  /**
   * Charges a card for a session's amount: approved or declined, never both. Idempotent on
   * `idempotencyKey` (the order id): once a charge under the key is approved, every later call
   * answers that approval (its charge id) and charges nothing; a decline charges nothing and
   * leaves the key open for another card.
   */
  readonly charge: (
    sessionId: string,
    request: CheckoutRequest,
    card: CardDetails,
    idempotencyKey: string
  ) => Effect.Effect<CardOutcome>
  /** Saves a card for later off-session charges: its reference, or declined (nothing saved). */
  readonly saveCard: (accountId: string, card: CardDetails) => Effect.Effect<SaveCardOutcome>
  /** Charges a saved card off-session; idempotent on `idempotency_key`. */
  readonly chargeSaved: (charge: OffSessionCharge) => Effect.Effect<CardOutcome>
}>()("@model-platform/core/payments/CardProcessor") {}
