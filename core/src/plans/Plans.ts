/**
 * Plans (subscriptions to a machine) and rentals (docs/plans.md): what paying an order of one
 * makes, how each is shown, cancelling and resuming a plan, and renewing it by order.
 *
 * - Paying a subscription order makes a plan of its machine and plan, its first period from the
 *   payment for `period_days`; paying a rental order makes a rental from the payment for its hours.
 *   Once per order (PlanStore is unique per order id), so a replayed payment makes nothing new.
 * - Paying a renewal order (`renew_subscription_id`) moves the plan to its next period: from the
 *   end of the current one when paid before it or within a day after it, else from the payment.
 *   Once per order (PlanStore.renew).
 * - Statuses are derived when shown (PlanStates.ts phases): `active` until current_period_end,
 *   and for a plan that renews by itself up to RENEWAL_GRACE_MS longer while its card is charged
 *   (billing/Renewals.ts); then `ended`. A rental is `scheduled` before starts_at, `active` until
 *   ends_at, then `ended`.
 * - Card plans renew by themselves (`auto_renews` true); stablecoin plans are renewed by an order
 *   (`auto_renews` false). Cancel and resume are for card plans only, as the spec says: cancel
 *   keeps the plan active with `cancel_at_period_end` and `auto_renews` false; resume undoes it.
 */
import { Clock, Effect } from "effect"
import type { Caller } from "../keys/Caller.ts"
import { planError } from "./PlanErrors.ts"
import { requireWithin } from "../keys/KeyScope.ts"
import { type AccountId, generateId } from "../kernel/Ids.ts"
import { accountTeller } from "../kernel/AccountNotices.ts"
import type { PaymentMethod } from "../catalogue/CatalogueConfig.ts"
import { machineOfScope } from "./ScopeTargetsFromPlans.ts"
import { type OrderDetails, PlanStore, type RentalRecord, type SubscriptionRecord } from "./PlanStore.ts"
import * as Time from "../kernel/Time.ts"
import { applyPlanEvent, type PlanPhase, type PlanState, startState, statusOf } from "./PlanStates.ts"
import type { PlanChange, Rental, RentalList, Subscription, SubscriptionList } from "./Schemas.ts"

const DAY_MS = 24 * 60 * 60 * 1000
const HOUR_MS = 60 * 60 * 1000

/** How long past its period's end a plan that renews by itself stays active while its card is charged. */
export const RENEWAL_GRACE_MS = DAY_MS

/** What a renewal order adds (the spec: "Plan renewal by stablecoin extends by 30 days"). */
export const RENEWAL_ORDER_DAYS = 30

/** What plans read of a paid order (payments/OrderStore.ts OrderRecord is one). */
export interface PlanOrder {
  readonly id: string
  readonly account_id: AccountId
  readonly machine_id: string | null
  readonly status: string
  readonly details: OrderDetails | null
  readonly paid_at: Time.Timestamp | null
  readonly paid_with: PaymentMethod | null
}

// ---- rules ---------------------------------------------------------------------------------

/** A plan's phase at `now` (PlanStates.ts), from the times kept. */
export const planPhase = (r: SubscriptionRecord, now: number): PlanPhase => {
  const end = Date.parse(r.current_period_end)
  return now < end ? "current" : r.auto_renews && now < end + RENEWAL_GRACE_MS ? "due" : "ended"
}

/** A plan's state at `now` (PlanStates.ts). */
export const planState = (r: SubscriptionRecord, now: number): PlanState => ({
  phase: planPhase(r, now),
  paid_with: r.paid_with,
  auto_renews: r.auto_renews,
  cancel_at_period_end: r.cancel_at_period_end
})

/**
 * The period a renewal paid at `paidAt` gives for `days`: on from the current period's end when
 * paid before it or within RENEWAL_GRACE_MS after it (so no time is lost or paid twice, whatever
 * happened to the plan's flags meanwhile), else from the payment.
 */
export const nextPeriod = (r: SubscriptionRecord, paidAt: number, days: number) => {
  const end = Date.parse(r.current_period_end)
  const start = paidAt < end + RENEWAL_GRACE_MS ? end : paidAt
  return { current_period_start: Time.toTimestamp(start), current_period_end: Time.toTimestamp(start + days * DAY_MS) }
}

/** A plan as GET /subscriptions shows it at `now`. */
export const subscriptionView = (r: SubscriptionRecord, now: number): Subscription => ({
  id: r.id,
  machine_id: r.machine_id,
  plan_id: r.plan_id,
  status: statusOf(planPhase(r, now)),
  auto_renews: r.auto_renews,
  cancel_at_period_end: r.cancel_at_period_end,
  current_period_start: r.current_period_start,
  current_period_end: r.current_period_end,
  paid_with: r.paid_with,
  renewal_error: r.renewal_error
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
 * first one made for the order) and the card saved at its checkout (a card plan's renewals are
 * charged to it), or undefined for an order of credits or a package, or a renewal.
 */
export const recordOfPaidOrder = (
  order: PlanOrder,
  id: string,
  cardReference: string | null
): { readonly plan: SubscriptionRecord } | { readonly rental: RentalRecord } | undefined => {
  const details = order.details
  if (details === null || order.paid_at === null || order.paid_with === null || order.machine_id === null) return undefined
  const paidAt = Date.parse(order.paid_at)
  if (details.kind === "subscription") {
    if (details.renew_subscription_id !== null) return undefined
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
        created_at: order.paid_at,
        card_reference: order.paid_with === "card" ? cardReference : null,
        renewal_error: null
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
  // A change to a plan binds the keys scoped to it at their next call, in this process at once (KeyStanding.ts).
  const tell = yield* accountTeller

  /** Moves the plan a paid renewal order renews to its next period, once per order. */
  const renewByOrder = Effect.fnUntraced(function*(order: PlanOrder, subscriptionId: string, days: number) {
    const paidAt = Date.parse(order.paid_at ?? "")
    // "stale": another renewal moved the period meanwhile; compute again from the plan as it is.
    for (let attempt = 0; attempt < 10; attempt++) {
      const plan = yield* store.subscription(subscriptionId)
      if (plan === undefined) return yield* Effect.die(new Error(`renewal order ${order.id}: no plan ${subscriptionId}`))
      const outcome = yield* store.renew({
        subscription_id: plan.id,
        order_id: order.id,
        after_period_end: plan.current_period_end,
        ...nextPeriod(plan, paidAt, days)
      })
      if (outcome !== "stale") {
        yield* tell(plan.account_id)
        return outcome
      }
    }
    return yield* Effect.die(new Error(`renewal order ${order.id}: plan ${subscriptionId} kept moving`))
  })

  /**
   * Makes the plan or rental a paid order buys, or renews the plan it renews (once per order);
   * nothing for other orders. `cardReference`: the card saved at the order's checkout.
   */
  const fulfil = Effect.fn("Plans.fulfil")(function*(order: PlanOrder, cardReference: string | null = null) {
    const details = order.details
    if (details?.kind === "subscription" && details.renew_subscription_id !== null) {
      if (order.status === "paid") yield* renewByOrder(order, details.renew_subscription_id, details.period_days)
      return
    }
    const made = recordOfPaidOrder(order, yield* generateId(details?.kind === "rental" ? "rent" : "sub"), cardReference)
    if (made === undefined) return
    if ("plan" in made) yield* store.insertSubscription(made.plan)
    else yield* store.insertRental(made.rental)
  })

  /**
   * A renewal order may renew only a stablecoin plan of the account, of the machine and plan it
   * names (404 subscription_not_found; else 400 naming renew_subscription_id).
   */
  const checkRenewal = Effect.fn("Plans.checkRenewal")(function*(
    accountId: AccountId,
    body: { readonly renew_subscription_id: string; readonly machine_id: string; readonly plan_id: string }
  ) {
    const id = body.renew_subscription_id
    const plan = yield* store.subscription(id)
    if (plan === undefined || plan.account_id !== accountId) {
      return yield* planError("subscription_not_found", `No plan "${id}" in this account.`)
    }
    if (plan.paid_with !== "stablecoin") {
      return yield* planError("renewal_not_stablecoin", `renew_subscription_id: plan ${id} is paid by card and renews by itself.`)
    }
    if (plan.machine_id !== body.machine_id || plan.plan_id !== body.plan_id) {
      return yield* planError(
        "renewal_mismatch",
        `renew_subscription_id: plan ${id} is "${plan.plan_id}" on "${plan.machine_id}"; the order must name that machine_id and plan_id.`
      )
    }
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
        return yield* planError("subscription_not_found", `No plan "${id}" in this account.`)
      }
      yield* requireWithin(machineOfScope(store), caller, { _tag: "Subscription", id: found.id, machine_id: found.machine_id })
      const now = yield* Clock.currentTimeMillis
      const move = applyPlanEvent(planState(found, now), cancel ? "cancel" : "resume")
      if (move._tag === "Refused") {
        return yield* planError(
          move.reason === "ended" ? "plan_ended" : move.reason === "renewing" ? "plan_renewing" : "plan_not_card",
          move.reason === "ended"
            ? `The plan ${id} has ended; it cannot be ${cancel ? "cancelled" : "resumed"}.`
            : move.reason === "renewing"
            ? `The plan ${id} is being renewed now; try again in a minute.`
            : `Only card plans can be ${cancel ? "cancelled" : "resumed"}: plan ${id} is paid by stablecoin and ends at its period's end unless renewed by an order.`
        )
      }
      const { auto_renews, cancel_at_period_end } = move.state
      const changed = yield* store.setRenewal(caller.account.id, id, { auto_renews, cancel_at_period_end })
      if (changed === undefined) return yield* planError("subscription_not_found", `No plan "${id}" in this account.`)
      yield* tell(changed.account_id)
      const view = subscriptionView(changed, now)
      return {
        id: view.id,
        status: view.status,
        auto_renews: view.auto_renews,
        cancel_at_period_end: view.cancel_at_period_end
      } satisfies PlanChange
    })

  return { fulfil, checkRenewal, subscriptions, rentals, cancel: setRenewal(true), resume: setRenewal(false) } as const
})

export type PlansService = Effect.Success<typeof makePlans>
