/**
 * The refusals of the billing area (docs/architecture.md "Errors"): limits, usage reports,
 * alerts, automatic top-ups, saved cards, card checkouts and statements. A reason is the spec's
 * error code where it has one; http/Refusals.ts maps every reason to its status and code.
 */
import { Schema } from "effect"
import { refusalFields, type RefusalOf } from "../kernel/Refusal.ts"

export const BillingErrorReasons = [
  /** A spend limit out of its range (negative, inexact, or above the usage tier's). */
  "spend_limit_invalid",
  /** No live key of the caller's account has this id. */
  "key_not_found",
  /** A usage report's range is malformed (month with from/to, from after to, too long). */
  "usage_range_invalid",
  /** GET /billing/alerts: limit out of its range. */
  "invalid_limit",
  /** An automatic top-up threshold out of its range. */
  "threshold_invalid",
  /** Automatic top-ups turned on without a saved card. */
  "card_required",
  /** Card payments (or the credit price automatic top-ups need) are not set up. */
  "card_payments_off",
  /** Cards are not saved on a processor's own page here. */
  "card_setup_off",
  /** No checkout session has this id. */
  "checkout_not_found",
  /** A statement of a month after this one. */
  "statement_not_found"
] as const
export type BillingErrorReason = (typeof BillingErrorReasons)[number]

/** A refusal of a billing service. */
export class BillingError extends Schema.TaggedError<BillingError>()("BillingError", refusalFields(BillingErrorReasons)) {
  static readonly reasons = BillingErrorReasons
}

export type BillingErrorOf<R extends BillingErrorReason> = RefusalOf<BillingError, R>

export const billingError = <R extends BillingErrorReason>(reason: R, message: string): BillingErrorOf<R> =>
  new BillingError({ reason, message }) as BillingErrorOf<R>
