/**
 * Card plans renewing by themselves (docs/plans.md "Renewals"): a job that, for each plan whose
 * period has ended while it renews (`PlanStore.dueRenewals`), charges the card saved at its
 * checkout off-session for one more period, by the one off-session path
 * (payments/OffSessionCharges.ts): a paid order (kind subscription, with a receipt) whose
 * fulfilment moves the plan to its next period. A declined charge, a plan no longer offered, or a
 * renewal not charged within RENEWAL_GRACE_MS ends the plan: auto_renews off, the reason kept
 * (renewal_error), a `plan_renewal_failed` alert. A declined charge (its bank wanting the person,
 * authentication_required, included) also mails the person a link to pay that renewal's order
 * themselves (PayLinks.ts), which renews the plan for its period.
 *
 * Once, with any number of processes running the job at once: the renewal's order id is made from
 * the plan and the period it follows (`renewalOrderId`), and is the charge's idempotency key, so
 * every process charges the same charge, stores the same order and receipt, and
 * `PlanStore.renew` (once per order, only from that period) moves the plan once. A failure is
 * recorded only from the period it failed for (`PlanStore.failRenewal`), so a late process
 * cannot stop a plan another process has renewed meanwhile.
 */
import { Clock, Duration, Effect, Layer, Option } from "effect"
import { Alerts, planRenewalFailedAlert } from "./Alerts.ts"
import { monthOf } from "../kernel/Time.ts"
import { repeatInBackground } from "../kernel/BackgroundJobs.ts"
import { accountTeller } from "../kernel/AccountNotices.ts"
import { Catalogue } from "../catalogue/Catalogue.ts"
import { makeOffSessionCharges } from "../payments/OffSessionCharges.ts"
import { CURRENCY, PAYMENT_WINDOW_MS } from "../payments/OrderRules.ts"
import type { CardProcessor } from "../payments/CardProcessor.ts"
import type { OrderRecord, OrderStore } from "../payments/OrderStore.ts"
import type { Ledger } from "../ledger/Ledger.ts"
import { PlanStore, type SubscriptionRecord } from "../plans/PlanStore.ts"
import * as Time from "../kernel/Time.ts"
import { subscribeOfferOf, subscriptionPrice } from "../plans/Offers.ts"
import { applyPlanEvent } from "../plans/PlanStates.ts"
import { planState } from "../plans/Plans.ts"
import { PayLinks } from "./PayLinks.ts"

export interface PlanRenewerOptions {
  /** How often the job looks for plans to renew. */
  readonly intervalMs: number
  /** At most this many plans per run. */
  readonly batch: number
}

export const defaultPlanRenewerOptions: PlanRenewerOptions = { intervalMs: 60_000, batch: 100 }

/** The order paying the renewal of `plan` after its current period: one per plan and period. */
export const renewalOrderId = (plan: SubscriptionRecord): string =>
  `ord_renew_${plan.id}_${Date.parse(plan.current_period_end)}`

/** What one renewal did. */
export type RenewalResult = "renewed" | "failed" | "skipped"

export const makeRenewals = Effect.gen(function*() {
  const store = yield* PlanStore
  // The plan's keys see it end at their next call, in this process at once (KeyStanding.ts).
  const tell = yield* accountTeller
  const offSession = yield* makeOffSessionCharges
  const catalogue = yield* Catalogue
  const alerts = Option.getOrUndefined(yield* Effect.serviceOption(Alerts))
  const payLinks = Option.getOrUndefined(yield* Effect.serviceOption(PayLinks))

  /**
   * Ends the plan's renewing, once from its period, and tells the account; with the renewal's
   * order when its charge was declined, which the person is mailed a link to pay (PayLinks.ts).
   */
  const fail = Effect.fnUntraced(function*(plan: SubscriptionRecord, planName: string, reason: string, now: number, unpaid?: OrderRecord) {
    const applied = yield* store.failRenewal(plan.id, plan.current_period_end, reason)
    if (!applied) return "failed" as const
    yield* tell(plan.account_id)
    const link = unpaid === undefined || payLinks === undefined
      ? undefined
      : yield* payLinks.offer(unpaid, `The ${planName} plan (${plan.id}) could not be renewed: ${reason}`)
    if (alerts !== undefined) {
      yield* alerts.raise(plan.account_id, planRenewalFailedAlert(monthOf(now), plan.id, planName, reason, link !== undefined))
    }
    return "failed" as const
  })

  /** Renews one plan due at `now`: charged and moved to its next period, or ended with the reason. */
  const renewOne = Effect.fn("Renewals.renewOne")(function*(plan: SubscriptionRecord, now: number) {
    // Only a plan due now (its period over, still renewing, within the grace) is charged.
    if (applyPlanEvent(planState(plan, now), "renewed")._tag === "Refused") {
      if (plan.auto_renews && now >= Date.parse(plan.current_period_end)) {
        return yield* fail(plan, plan.plan_id, "It was not charged in time.", now)
      }
      return "skipped" as const
    }
    const machine = catalogue.machineConfig(plan.machine_id)
    const offered = machine === undefined ? undefined : subscribeOfferOf(machine)?.plans.find((p) => p.id === plan.plan_id)
    if (machine === undefined || offered === undefined) {
      return yield* fail(plan, plan.plan_id, "The plan is no longer offered.", now)
    }
    const priced = yield* Effect.result(subscriptionPrice(machine, { plan_id: plan.plan_id }))
    if (priced._tag === "Failure") return yield* fail(plan, offered.name, "The plan can no longer be charged.", now)
    const { amount_cents, period_days } = priced.success
    const orderId = renewalOrderId(plan)
    const title = `${offered.name} plan on ${machine.name}, ${period_days} days (renewal of ${plan.id})`
    if (plan.card_reference === null) return yield* fail(plan, offered.name, "No card is saved for it.", now)
    const order: OrderRecord = {
      id: orderId, account_id: plan.account_id, type: "subscription", title, amount_cents, currency: CURRENCY,
      credits: 0n, machine_id: plan.machine_id, package_id: null, gift: false,
      details: { kind: "subscription", plan_id: plan.plan_id, period_days, renew_subscription_id: plan.id },
      status: "pending", payment_method: "card", card_session_id: null, checkout_url: null, deposit: null,
      created_at: Time.toTimestamp(now), expires_at: Time.toTimestamp(now + PAYMENT_WINDOW_MS), paid_at: null, paid_with: null
    }
    // Paid: its fulfilment moved the plan to its next period. Declined, or its bank wants the
    // person (authentication_required): the person may pay this renewal on-session; nothing is
    // charged again by itself.
    const outcome = yield* offSession.charge(order, plan.card_reference)
    if (outcome._tag === "Declined") return yield* fail(plan, offered.name, `${outcome.message} (${outcome.reason})`, now, order)
    return "renewed" as const
  })

  /** One run: renews every plan due now (at most `batch`); answers what each did. */
  const renewDue = (batch: number = defaultPlanRenewerOptions.batch) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const due = yield* store.dueRenewals(Time.toTimestamp(now), batch)
      return yield* Effect.forEach(due, (plan) => renewOne(plan, now))
    })

  return { renewOne, renewDue } as const
})

/** Runs the job in a background fiber for as long as the layer lives; a failure is logged, never fatal. */
export const layer = (
  options: Partial<PlanRenewerOptions> = {}
): Layer.Layer<never, never, PlanStore | OrderStore | Ledger | CardProcessor | Catalogue> => {
  const { batch, intervalMs } = { ...defaultPlanRenewerOptions, ...options }
  return Layer.effectDiscard(Effect.gen(function*() {
    const renewals = yield* makeRenewals
    const once = renewals.renewDue(batch).pipe(
      Effect.tap((results) => results.length > 0 ? Effect.logInfo(`plan renewals: ${results.join(", ")}`) : Effect.void),
      Effect.catchCause((cause) => Effect.logWarning("plan renewals failed; retrying later", cause))
    )
    yield* repeatInBackground(once, Duration.millis(intervalMs))
  }))
}

export const PlanRenewer = { layer, makeRenewals } as const
