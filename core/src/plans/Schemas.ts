/**
 * Plans (subscriptions to a machine) and rentals of a machine, as the API shows them, and the
 * answer of cancelling or resuming a plan. JSON shapes only.
 */
import { Schema } from "effect"
import { PaymentMethod } from "../catalogue/CatalogueConfig.ts"
import { Id, IntAtLeast } from "../kernel/Fields.ts"
import { Timestamp } from "../kernel/Time.ts"

/**
 * active is observed. ended (ours): the period ran out without renewal, after a cancel or a failed
 * renewal. A cancelled plan stays active, with cancel_at_period_end, until current_period_end; a
 * plan that renews by itself stays active past it while its card is charged (docs/plans.md).
 */
export const SubscriptionStatusValues = ["active", "ended"] as const
export const SubscriptionStatus = Schema.Literals(SubscriptionStatusValues)
export type SubscriptionStatus = typeof SubscriptionStatus.Type

export const Subscription = Schema.Struct({
  id: Schema.String,
  machine_id: Schema.String,
  plan_id: Schema.String,
  status: SubscriptionStatus,
  /** Card plans renew by themselves; stablecoin plans are renewed by a new order. */
  auto_renews: Schema.Boolean,
  cancel_at_period_end: Schema.Boolean,
  current_period_start: Timestamp,
  current_period_end: Timestamp,
  paid_with: PaymentMethod,
  /** Why the last renewal by card failed (the plan then ended), or null. */
  renewal_error: Schema.NullOr(Schema.String)
})
export type Subscription = typeof Subscription.Type

export const SubscriptionList = Schema.Struct({ data: Schema.Array(Subscription) })
export type SubscriptionList = typeof SubscriptionList.Type

/** POST /subscriptions/{id}/cancel and /resume. */
export const PlanChange = Schema.Struct({
  id: Schema.String,
  status: SubscriptionStatus,
  auto_renews: Schema.Boolean,
  cancel_at_period_end: Schema.Boolean
})
export type PlanChange = typeof PlanChange.Type

/** Ours: scheduled (paid, starts later), active (between starts_at and ends_at), ended. */
export const RentalStatusValues = ["scheduled", "active", "ended"] as const
export const RentalStatus = Schema.Literals(RentalStatusValues)
export type RentalStatus = typeof RentalStatus.Type

/** A paid rental: the resources of the rental order, for `hours` from starts_at. */
export const Rental = Schema.Struct({
  id: Schema.String,
  machine_id: Schema.String,
  status: RentalStatus,
  cpu_cores: Schema.Int,
  memory_gb: Schema.Int,
  gpu: Schema.Int,
  storage_gb: Schema.Int,
  hours: Schema.Int,
  starts_at: Timestamp,
  ends_at: Timestamp
})
export type Rental = typeof Rental.Type

export const RentalList = Schema.Struct({ data: Schema.Array(Rental) })
export type RentalList = typeof RentalList.Type

// ---- The order bodies that buy a rental or a plan (POST /orders, POST /quotes: payments/Orders.ts CreateOrder) ----

export const RentalOrderBody = Schema.Struct({
  type: Schema.Literal("rental"),
  machine_id: Id,
  cpu_cores: IntAtLeast(1),
  memory_gb: IntAtLeast(1),
  hours: IntAtLeast(1),
  gpu: Schema.optionalKey(IntAtLeast(0)),
  storage_gb: Schema.optionalKey(IntAtLeast(0))
})
export type RentalOrderBody = typeof RentalOrderBody.Type

export const SubscriptionOrderBody = Schema.Struct({
  type: Schema.Literal("subscription"),
  machine_id: Id,
  plan_id: Id,
  /** Renews an existing stablecoin plan for another 30 days. */
  renew_subscription_id: Schema.optionalKey(Id)
})
export type SubscriptionOrderBody = typeof SubscriptionOrderBody.Type
