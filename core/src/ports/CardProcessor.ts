/**
 * Port: a card processor with a hosted checkout for a person (docs/payments.md).
 *
 * 1. `createSession` opens a checkout session for an order and returns where a person pays it
 *    (`checkout_url`, shown as the order's `pay_url`).
 * 2. The session completes: the person's card is approved or declined. With a hosted page the
 *    platform serves itself (the built-in test processor, core/src/TestCardProcessor.ts) that is
 *    `charge`, called by `Orders.completeCardPayment` with the card details the page collected.
 *    A processor hosting its own page would instead report the same `CardOutcome` through a
 *    callback, applied by the same rules.
 *
 * The platform never stores card details: they pass through `charge` and are forgotten.
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

export class CardProcessor extends Context.Service<CardProcessor, {
  /** The processor's name, as the catalogue's payments.card.processor names it (e.g. "test"). */
  readonly processor: string
  readonly createSession: (request: CheckoutRequest) => Effect.Effect<CheckoutSession>
  /** Charges a card for a session's amount: approved or declined, never both. */
  readonly charge: (
    sessionId: string,
    request: CheckoutRequest,
    card: CardDetails
  ) => Effect.Effect<CardOutcome>
}>()("@model-platform/core/ports/CardProcessor") {}
