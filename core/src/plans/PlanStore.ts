/**
 * Port: where plans (subscriptions to a machine) and rentals of a machine are kept (docs/plans.md).
 * The rules (what paying an order makes, statuses, cancel and resume, renewals) live in
 * core/src/plans/; a store applies what it is given. The operations marked ATOMIC are conditional
 * writes that hold between processes too:
 *
 * - `insertSubscription` / `insertRental` are unique per order: replaying the fulfilment of a paid
 *   order makes nothing twice;
 * - `setRenewal` changes one plan's renewal flags only while it is the account's;
 * - `renew` moves a plan to its next period once per renewal order, and only from the period it
 *   was computed from; `failRenewal` stops a plan renewing, only from the period it failed for.
 *
 * Statuses are derived at read time from the times kept here (a plan is active until
 * current_period_end, a rental until ends_at), so a store never needs a timer. Duplicate ids and
 * other broken input (rulesProblem) are defects, as violated constraints are in SQL.
 */
import { Context, type Effect } from "effect"
import type { PaymentMethod } from "../catalogue/CatalogueConfig.ts"
import type { Timestamp } from "../kernel/Time.ts"
import type { AccountId, OrderId } from "../kernel/Ids.ts"

/** A plan: one machine's plan, paid per period. */
/** What a rental or a subscription order buys: paying it makes the rental or the plan (PlanStore). */
export type OrderDetails =
  | {
    readonly kind: "rental"
    readonly cpu_cores: number
    readonly memory_gb: number
    readonly gpu: number
    readonly storage_gb: number
    readonly hours: number
  }
  | {
    readonly kind: "subscription"
    readonly plan_id: string
    readonly period_days: number
    /** The stablecoin plan this order renews (30 days more), or null for a new plan. */
    readonly renew_subscription_id: string | null
  }

export interface SubscriptionRecord {
  /** Unique among plans. */
  readonly id: string
  readonly account_id: AccountId
  /** The order whose payment made it: unique among plans. */
  readonly order_id: OrderId
  readonly machine_id: string
  readonly plan_id: string
  /** How it was paid: card plans renew by themselves, stablecoin plans by a new order. */
  readonly paid_with: PaymentMethod
  readonly auto_renews: boolean
  readonly cancel_at_period_end: boolean
  readonly current_period_start: Timestamp
  readonly current_period_end: Timestamp
  readonly created_at: Timestamp
  /** The saved card (CardProcessor reference) a card plan's renewals are charged to, or null. */
  readonly card_reference: string | null
  /** Why the last renewal failed (the plan then ends at its period's end), or null. */
  readonly renewal_error: string | null
}

/** One renewal of a plan: its next period, paid by an order. */
export interface PlanRenewal {
  readonly subscription_id: string
  /** The renewal's order: a plan is renewed once per order. */
  readonly order_id: OrderId
  /** The plan's current_period_end the renewal was computed from: it applies only while still so. */
  readonly after_period_end: Timestamp
  readonly current_period_start: Timestamp
  readonly current_period_end: Timestamp
}

/**
 * What `renew` did: "renewed"; "already_renewed" (this order renewed the plan before: nothing
 * changes); "stale" (the plan's period is no longer `after_period_end`: nothing changes, compute
 * again from the plan as it is); "not_found".
 */
export type RenewOutcome = "renewed" | "already_renewed" | "stale" | "not_found"

/** A rental: what of one machine, for how long. */
export interface RentalRecord {
  /** Unique among rentals. */
  readonly id: string
  readonly account_id: AccountId
  /** The order whose payment made it: unique among rentals. */
  readonly order_id: OrderId
  readonly machine_id: string
  readonly cpu_cores: number
  readonly memory_gb: number
  readonly gpu: number
  readonly storage_gb: number
  readonly hours: number
  readonly starts_at: Timestamp
  /** starts_at + hours. */
  readonly ends_at: Timestamp
  readonly created_at: Timestamp
}

export class PlanStore extends Context.Service<PlanStore, {
  /**
   * ATOMIC: stores the plan unless a plan of its order exists; answers the order's plan (the given
   * one when new, else the one stored, unchanged).
   */
  readonly insertSubscription: (record: SubscriptionRecord) => Effect.Effect<SubscriptionRecord>
  /** The plan, if any (of any account: callers check the account). */
  readonly subscription: (id: string) => Effect.Effect<SubscriptionRecord | undefined>
  /** The account's plans, newest first (equal created_at: by id). */
  readonly subscriptions: (accountId: AccountId) => Effect.Effect<ReadonlyArray<SubscriptionRecord>>
  /**
   * ATOMIC, conditional: sets the plan's auto_renews and cancel_at_period_end, only when it is the
   * account's. Answers the plan as it is afterwards, or undefined (unknown, or another account's:
   * nothing changed).
   */
  readonly setRenewal: (
    accountId: AccountId,
    id: string,
    renewal: Pick<SubscriptionRecord, "auto_renews" | "cancel_at_period_end">
  ) => Effect.Effect<SubscriptionRecord | undefined>

  /**
   * ATOMIC, once per order: unless `order_id` renewed the plan before ("already_renewed"), and
   * only while the plan's current_period_end is `after_period_end` (else "stale"), sets the
   * period to the renewal's, clears renewal_error and remembers the order, in one step.
   */
  readonly renew: (renewal: PlanRenewal) => Effect.Effect<RenewOutcome>
  /**
   * ATOMIC, conditional: a renewal failed. Only while the plan's current_period_end is
   * `after_period_end`: auto_renews false, renewal_error `error`; answers whether it applied.
   */
  readonly failRenewal: (id: string, afterPeriodEnd: Timestamp, error: string) => Effect.Effect<boolean>
  /**
   * The plans that renew by themselves (auto_renews) whose current_period_end is at or before
   * `before`, of every account: earliest end first (equal ends: by id), at most `limit`.
   */
  readonly dueRenewals: (before: Timestamp, limit: number) => Effect.Effect<ReadonlyArray<SubscriptionRecord>>

  /** ATOMIC: stores the rental unless a rental of its order exists; answers the order's rental. */
  readonly insertRental: (record: RentalRecord) => Effect.Effect<RentalRecord>
  /** The rental, if any (of any account: callers check the account). */
  readonly rental: (id: string) => Effect.Effect<RentalRecord | undefined>
  /** The account's rentals, newest first (equal created_at: by id). */
  readonly rentals: (accountId: AccountId) => Effect.Effect<ReadonlyArray<RentalRecord>>
}>()("@model-platform/core/plans/PlanStore") {}

// ---------------------------------------------------------------------------------------------
// The input rules every store enforces (breaking one is a defect). Pure, shared by the stores.

/** Why a store must refuse this plan, or undefined. */
export const subscriptionProblem = (r: SubscriptionRecord): string | undefined =>
  r.id.length === 0 || r.account_id.length === 0 || r.order_id.length === 0
    ? "ids must be non-empty"
    : r.current_period_end <= r.current_period_start
    ? `a period ends after it starts: ${r.current_period_start} .. ${r.current_period_end}`
    : undefined

/** Why a store must refuse this renewal, or undefined. */
export const renewalProblem = (r: PlanRenewal): string | undefined =>
  r.subscription_id.length === 0 || r.order_id.length === 0
    ? "ids must be non-empty"
    : r.current_period_end <= r.current_period_start
    ? `a period ends after it starts: ${r.current_period_start} .. ${r.current_period_end}`
    : undefined

/** Earliest period end first, then by id: the order of `dueRenewals`. */
export const earliestEndFirst = (a: SubscriptionRecord, b: SubscriptionRecord) =>
  a.current_period_end < b.current_period_end ? -1 : a.current_period_end > b.current_period_end ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0

/** Why a store must refuse this rental, or undefined. */
export const rentalProblem = (r: RentalRecord): string | undefined => {
  if (r.id.length === 0 || r.account_id.length === 0 || r.order_id.length === 0) return "ids must be non-empty"
  for (const [field, value, least] of [
    ["cpu_cores", r.cpu_cores, 1], ["memory_gb", r.memory_gb, 1], ["hours", r.hours, 1],
    ["gpu", r.gpu, 0], ["storage_gb", r.storage_gb, 0]
  ] as const) {
    if (!Number.isSafeInteger(value) || value < least) return `${field} must be an integer >= ${least}, got ${value}`
  }
  return r.ends_at <= r.starts_at ? `a rental ends after it starts: ${r.starts_at} .. ${r.ends_at}` : undefined
}

/** Newest first, then by id: the order of `subscriptions` and `rentals`. */
export const newestFirst = (a: { readonly created_at: string; readonly id: string }, b: { readonly created_at: string; readonly id: string }) =>
  a.created_at > b.created_at ? -1 : a.created_at < b.created_at ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0
