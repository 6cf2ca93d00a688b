/**
 * Port: a card processor with a hosted checkout for a person (docs/payments.md).
 *
 * Two kinds of processor sit behind it, told apart by `pages`:
 *
 * - `"platform"`: the platform serves the card form itself (the built-in test processor,
 *   core/src/payments/TestCardProcessor.ts, with core/src/http/pages/CheckoutPage.ts). The form's card details go to
 *   `charge` (checkout; the order id is the idempotency key: a charge for an order is made at most
 *   once, however many submissions of its checkout arrive at once, in one process or many) and to
 *   `saveCard` (the billing page), and are forgotten.
 * - `"processor"`: the processor hosts its own pages (Stripe Checkout, adapters/stripe). The
 *   platform never sees a card: `createSession` and `openCardSetup` answer the processor's page,
 *   the person comes back to the platform's return address (`<base_url>/checkout/<session>`), and
 *   what happened there is read back with `checkoutResult` (the return) or reported by a signed
 *   event (`verifyEvent`, the webhook). Whichever arrives first applies the outcome; the other
 *   finds it applied.
 *
 * Both charge a saved card while nobody is there (`chargeSaved`, off-session: automatic top-ups,
 * card plans' renewals) with an idempotency key, so a charge retried after a crash or by a second
 * process is the same charge, never a second one (Stripe: a PaymentIntent with off_session,
 * confirm and the Idempotency-Key). A card whose bank wants the person present answers Declined
 * with reason `authentication_required`: the platform then mails a link to pay on-session.
 *
 * The platform never stores card details; a saved card is the processor's reference and a
 * description for people.
 */
import { Context, Data, type Effect } from "effect"
import type { AccountId, OrderId } from "../kernel/Ids.ts"

/** What a checkout session is opened for. */
export interface CheckoutRequest {
  readonly order_id: OrderId
  readonly account_id: AccountId
  readonly title: string
  readonly amount_cents: bigint
  readonly currency: string
  /**
   * The base of the platform's addresses (PUBLIC_URL, else the request's: http/PublicUrl.ts), no
   * trailing slash: a processor with its own pages sends the person back to
   * `<base_url>/checkout/<session id>`; the test processor's page is there.
   */
  readonly base_url: string
  /** Keep the card for later off-session charges (a card plan; Stripe: setup_future_usage off_session). */
  readonly save_card: boolean
  /** The end of the order's payment window: the checkout cannot be paid from then on. */
  readonly expires_at: string
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
  /** Off-session only: the bank wants the person present (3-D Secure); they can pay on-session. */
  | "authentication_required"

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
  readonly account_id: AccountId
  readonly amount_cents: bigint
  readonly currency: string
  readonly description: string
  /** The same key answers the same outcome, without charging again. */
  readonly idempotency_key: string
}

/** What a processor's hosted checkout came to (`checkoutResult`, and the events that report it). */
export type CheckoutResult =
  /** Not completed yet (or abandoned while it can still be completed). */
  | { readonly _tag: "Open"; readonly session_id: string }
  /** Can no longer be completed: nothing was charged. */
  | { readonly _tag: "Expired"; readonly session_id: string }
  /** Completed, the payment still on its way (a delayed method): nothing is due yet. */
  | { readonly _tag: "Processing"; readonly session_id: string | null }
  /** Completed, the payment failed (a delayed method that did not go through). */
  | { readonly _tag: "Failed"; readonly session_id: string | null }
  /** Paid: what the processor says was paid, and for which order. */
  | {
    readonly _tag: "Paid"
    /** Null when the report came from the payment itself (Stripe: payment_intent.succeeded). */
    readonly session_id: string | null
    /** The order the session was opened for (Stripe: client_reference_id). */
    readonly order_id: OrderId
    /** The account the session was opened for (Stripe: the session's metadata). */
    readonly account_id: AccountId
    readonly amount_cents: bigint
    /** Upper case, as orders keep it ("USD"). */
    readonly currency: string
    /** The processor's payment (Stripe: the PaymentIntent). */
    readonly payment_id: string
    /** When the processor took the payment (epoch milliseconds). */
    readonly paid_at: number
    /** The card kept for off-session charges when the session asked to keep it, else null. */
    readonly saved_card: SavedCardReference | null
  }
  /** A card-setup session (`openCardSetup`) completed: the card is saved for the account. */
  | {
    readonly _tag: "CardSaved"
    readonly session_id: string
    readonly account_id: AccountId
    readonly card: SavedCardReference
    /** When the person opened the setup (epoch milliseconds): a later setup replaces an earlier one. */
    readonly opened_at: number
  }

/** Credits to take back: a payment refunded, or disputed by the card holder. */
export interface Reversal {
  readonly kind: "refund" | "dispute"
  /** The processor's refund or dispute: unique, the ledger entry's reference. */
  readonly reference: string
  /** The payment it takes back. */
  readonly payment_id: string
  /** The order that payment paid (Stripe: the PaymentIntent's metadata), if the platform made it. */
  readonly order_id: OrderId | null
  readonly amount_cents: bigint
  readonly currency: string
}

/** A verified event from the processor, as the platform acts on it. */
export type ProcessorEvent =
  | { readonly _tag: "Checkout"; readonly event_id: string; readonly result: CheckoutResult }
  | { readonly _tag: "Reversals"; readonly event_id: string; readonly reversals: ReadonlyArray<Reversal> }
  /** A genuine event the platform has nothing to do for (an off-session charge's report, say). */
  | { readonly _tag: "Ignored"; readonly event_id: string; readonly type: string }

/** An event that does not verify (signature, timestamp, body): nothing is done with it. */
export class InvalidEvent extends Data.TaggedError("InvalidEvent")<{ readonly message: string }> {}

/** What opening a card setup needs. */
export interface CardSetupRequest {
  readonly account_id: AccountId
  /** Where the person comes back to, with `session_id=<the session>` added to its query. */
  readonly return_url: string
}

export class CardProcessor extends Context.Service<CardProcessor, {
  /** The processor's name, as the catalogue's payments.card.processor names it (e.g. "test", "stripe"). */
  readonly processor: string
  /** Who shows the card form: the platform (`charge`, `saveCard`) or the processor (`checkoutResult`, `verifyEvent`). */
  readonly pages: "platform" | "processor"
  /** Opens the checkout of an order: its session and the page where a person pays it. */
  readonly createSession: (request: CheckoutRequest) => Effect.Effect<CheckoutSession>
  /**
   * Platform pages: charges a card for a session's amount: approved or declined, never both. Idempotent on
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
  /** Platform pages: saves a card for later off-session charges: its reference, or declined (nothing saved). */
  readonly saveCard: (accountId: AccountId, card: CardDetails) => Effect.Effect<SaveCardOutcome>
  /** Charges a saved card off-session; idempotent on `idempotency_key` (a repeated key answers its first outcome). */
  readonly chargeSaved: (charge: OffSessionCharge) => Effect.Effect<CardOutcome>
  /** Processor pages: opens the page where a person saves a card for the account. */
  readonly openCardSetup: (request: CardSetupRequest) => Effect.Effect<CheckoutSession>
  /** Processor pages: what a session (a checkout or a card setup) came to, asked of the processor. */
  readonly checkoutResult: (sessionId: string) => Effect.Effect<CheckoutResult>
  /**
   * Processor pages: a webhook's raw body and signature header, verified (with the processor's
   * tolerance for its timestamp, against the platform's clock) and read as what it reports.
   */
  readonly verifyEvent: (payload: string, signature: string | undefined) => Effect.Effect<ProcessorEvent, InvalidEvent>
}>()("@model-platform/core/payments/CardProcessor") {}
