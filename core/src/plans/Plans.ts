/**
 * Plans (subscriptions to a machine) and rentals (docs/plans.md): what paying an order of one
 * makes, how each is shown, and cancelling and resuming a plan.
 *
 * - Paying a subscription order makes a plan of its machine and plan, its first period from the
 *   payment for `period_days`; paying a rental order makes a rental from the payment for its hours.
 *   Once per order (PlanStore is unique per order id), so a replayed payment makes nothing new.
 * - Statuses are derived when shown: a plan is `active` until current_period_end, then `ended`
 *   (until renewals are built, a plan is not renewed); a rental is `scheduled` before starts_at,
 *   `active` until ends_at, then `ended`.
 * - Card plans renew by themselves (`auto_renews` true); stablecoin plans are renewed by an order
 *   (`auto_renews` false). Cancel and resume are for card plans only, as the spec says: cancel
 *   keeps the plan active with `cancel_at_period_end` and `auto_renews` false; resume undoes it.
 */
import { Clock, Effect } from "effect"
import type { Caller } from "../ApiKeys.ts"
import * as Errors from "../Errors.ts"
import { generateId } from "../Keys.ts"
import type { OrderRecord } from "../ports/OrderStore.ts"
import { PlanStore, type RentalRecord, type SubscriptionRecord } from "../ports/PlanStore.ts"
import * as Time from "../Time.ts"
import { applyPlanEvent, type PlanState, startState } from "./PlanStates.ts"
import type { PlanChange, Rental, RentalList, Subscription, SubscriptionList } from "./Schemas.ts"

const DAY_MS = 24 * 60 * 60 * 1000
const HOUR_MS = 60 * 60 * 1000

// ---- rules ---------------------------------------------------------------------------------

/** A plan's state at `now` (PlanStates.ts): its period's end has passed, or not. */
export const planState = (r: SubscriptionRecord, now: number): PlanState => ({
  status: now < Date.parse(r.current_period_end) ? "active" : "ended",
  paid_with: r.paid_with,
  auto_renews: r.auto_renews,
  cancel_at_period_end: r.cancel_at_period_end
})

/** A plan as GET /subscriptions shows it at `now`. */
export const subscriptionView = (r: SubscriptionRecord, now: number): Subscription => ({
  id: r.id,
  machine_id: r.machine_id,
  plan_id: r.plan_id,
  status: planState(r, now).status,
  auto_renews: r.auto_renews,
  cancel_at_period_end: r.cancel_at_period_end,
  current_period_end: r.current_period_end,
  paid_with: r.paid_with
})

/** A rental as GET /rentals shows it at `now`. */
export const rentalView = (r: RentalRecord, now: number): Rental => ({
  id: r.id,
  machine_id: r.machine_id,
  status: now < Date.parse(r.starts_at) ? "scheduled" : now < Date.parse(r.ends_at) ? "active" : "ended",
  cpu_cores: r.cpu_cores,
  memory_gb: r.memory_gb,
  gpu: r.gpu,
  storage_gb: r.storage_gb,
  hours: r.hours,
  starts_at: r.starts_at,
  ends_at: r.ends_at
})

/**
 * The plan or the rental that paying `order` makes, with `id` (a fresh id: the store keeps the
 * first one made for the order), or undefined for an order of credits or a package.
 */
export const recordOfPaidOrder = (
  order: OrderRecord,
  id: string
): { readonly plan: SubscriptionRecord } | { readonly rental: RentalRecord } | undefined => {
  const details = order.details
  if (details === null || order.paid_at === null || order.paid_with === null || order.machine_id === null) return undefined
  const paidAt = Date.parse(order.paid_at)
  if (details.kind === "subscription") {
    const start = startState(order.paid_with)
    return {
      plan: {
        id,
        account_id: order.account_id,
        order_id: order.id,
        machine_id: order.machine_id,
        plan_id: details.plan_id,
        paid_with: order.paid_with,
        auto_renews: start.auto_renews,
        cancel_at_period_end: start.cancel_at_period_end,
        current_period_start: order.paid_at,
        current_period_end: Time.toTimestamp(paidAt + details.period_days * DAY_MS),
        created_at: order.paid_at
      }
    }
  }
  return {
    rental: {
      id,
      account_id: order.account_id,
      order_id: order.id,
      machine_id: order.machine_id,
      cpu_cores: details.cpu_cores,
      memory_gb: details.memory_gb,
      gpu: details.gpu,
      storage_gb: details.storage_gb,
      hours: details.hours,
      starts_at: order.paid_at,
      ends_at: Time.toTimestamp(paidAt + details.hours * HOUR_MS),
      created_at: order.paid_at
    }
  }
}

// ---- use-cases -------------------------------------------------------------------------------

/** The plans use-cases over the plan store; built once by the handlers and by order fulfilment. */
export const makePlans = Effect.gen(function*() {
  const store = yield* PlanStore

  /** Makes the plan or rental a paid order buys (once per order); nothing for other orders. */
  const fulfil = Effect.fn("Plans.fulfil")(function*(order: OrderRecord) {
    const made = recordOfPaidOrder(order, yield* generateId(order.details?.kind === "rental" ? "rent" : "sub"))
    if (made === undefined) return
    if ("plan" in made) yield* store.insertSubscription(made.plan)
    else yield* store.insertRental(made.rental)
  })

  const subscriptions = Effect.fn("Plans.subscriptions")(function*(caller: Caller) {
    const now = yield* Clock.currentTimeMillis
    const records = yield* store.subscriptions(caller.account.id)
    return { data: records.map((r) => subscriptionView(r, now)) } satisfies SubscriptionList
  })

  const rentals = Effect.fn("Plans.rentals")(function*(caller: Caller) {
    const now = yield* Clock.currentTimeMillis
    const records = yield* store.rentals(caller.account.id)
    return { data: records.map((r) => rentalView(r, now)) } satisfies RentalList
  })

  /** Cancel (`cancel`: true) or resume a card plan of the caller's account. */
  const setRenewal = (cancel: boolean) =>
    Effect.fn(cancel ? "Plans.cancel" : "Plans.resume")(function*(caller: Caller, id: string) {
      const found = yield* store.subscription(id)
      if (found === undefined || found.account_id !== caller.account.id) {
        return yield* Errors.notFound("subscription_not_found", `No plan "${id}" in this account.`)
      }
      const now = yield* Clock.currentTimeMillis
      const move = applyPlanEvent(planState(found, now), cancel ? "cancel" : "resume")
      if (move._tag === "Refused") {
        return yield* Errors.badRequest(
          "invalid_request",
          move.reason === "ended"
            ? `The plan ${id} has ended; it cannot be ${cancel ? "cancelled" : "resumed"}.`
            : `Only card plans can be ${cancel ? "cancelled" : "resumed"}: plan ${id} is paid by stablecoin and ends at its period's end unless renewed by an order.`
        )
      }
      const { auto_renews, cancel_at_period_end } = move.state
      const changed = yield* store.setRenewal(caller.account.id, id, { auto_renews, cancel_at_period_end })
      if (changed === undefined) return yield* Errors.notFound("subscription_not_found", `No plan "${id}" in this account.`)
      const view = subscriptionView(changed, now)
      return {
        id: view.id,
        status: view.status,
        auto_renews: view.auto_renews,
        cancel_at_period_end: view.cancel_at_period_end
      } satisfies PlanChange
    })

  return { fulfil, subscriptions, rentals, cancel: setRenewal(true), resume: setRenewal(false) } as const
})

export type PlansService = Effect.Success<typeof makePlans>
