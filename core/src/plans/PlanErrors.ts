/**
 * The refusals of the plans area (docs/architecture.md "Errors"): pricing a rental or a plan from
 * a machine's offer, renewal orders, cancelling and resuming. A reason is the spec's error code
 * where it has one; http/Refusals.ts maps every reason to its status and code.
 */
import { Schema } from "effect"
import { refusalFields, type RefusalOf } from "../kernel/Refusal.ts"

export const PlanErrorReasons = [
  /** The machine offers no rentals. */
  "rental_not_offered",
  /** A rental's size or hours are outside the machine's offer. */
  "rental_out_of_range",
  /** The machine offers no plans, or not this one. */
  "plan_not_offered",
  /** The catalogue's price cannot be charged exactly (a configuration fault, said as the field's). */
  "price_inexact",
  /** No plan of the caller's account has this id. */
  "subscription_not_found",
  /** A renewal order for a card plan (it renews by itself). */
  "renewal_not_stablecoin",
  /** A renewal order naming another machine or plan than the plan it renews. */
  "renewal_mismatch",
  /** Cancelling or resuming a plan that has ended. */
  "plan_ended",
  /** Cancelling or resuming a plan while it is being renewed. */
  "plan_renewing",
  /** Cancelling or resuming a stablecoin plan (it ends unless renewed by an order). */
  "plan_not_card"
] as const
export type PlanErrorReason = (typeof PlanErrorReasons)[number]

/** A refusal of the plans area. */
export class PlanError extends Schema.TaggedError<PlanError>()("PlanError", refusalFields(PlanErrorReasons)) {
  static readonly reasons = PlanErrorReasons
}

export type PlanErrorOf<R extends PlanErrorReason> = RefusalOf<PlanError, R>

export const planError = <R extends PlanErrorReason>(reason: R, message: string): PlanErrorOf<R> =>
  new PlanError({ reason, message }) as PlanErrorOf<R>
