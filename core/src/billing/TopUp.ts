/**
 * Automatic top-ups, the engine (docs/billing.md "Automatic top-ups"): after a settlement takes
 * the balance below the threshold, ONE off-session charge of amount_usd on the saved card, made
 * and recorded by the one off-session path (payments/OffSessionCharges.ts): a paid credits order,
 * fulfilled as every paid order is (credited through the ledger with the order's id as ref, a
 * receipt with auto_reload: true).
 *
 * Once per crossing, with any number of processes settling at once: each account's top-up state
 * (billing/AlertStore.ts TopUpState) moves armed -> charging -> below -> armed by compare-and-set
 * on its version, so of the processes that see the same crossing exactly one claims it. The
 * claim names the order (a fresh id, also the charge's idempotency key): a charge resumed after
 * a crash, or by another process once the claim is stale, is the same charge at the processor,
 * the same order, the same ledger ref and the same receipt; so is one its own process runs again
 * after a step failed (CHARGE_ATTEMPTS). A check reads the state BEFORE the
 * balance, so a balance it acts on was read after the state it swaps from:
 * - re-arming (below -> armed) needs a balance at or above the threshold seen after the crossing;
 * - a crossing (armed -> claimed) needs a balance below it seen after the last re-arm.
 *
 * The balance compared is the posted balance of every scope (credits minus settled charges):
 * calls in flight hold credits but do not move it, so only a settlement can cross the threshold.
 * A failed charge (declined, or its bank wanting the person: authentication_required) sets
 * last_error, mails the person a link to pay that top-up themselves (PayLinks.ts) and raises
 * auto_reload_failed; no top-up is tried again until the person changes the settings or saves a
 * card (`resume`). At most MAX_TOP_UPS_PER_DAY
 * charges are started per account and UTC day.
 */
import { Cause, Clock, Context, Effect, Exit, Layer } from "effect"
import { Catalogue } from "../catalogue/Catalogue.ts"
import { type AccountId, generateId, type OrderId } from "../kernel/Ids.ts"
import type { Ledger } from "../ledger/Ledger.ts"
import { MICRO_PER_CREDIT } from "../kernel/Money.ts"
import { AUTO_RELOAD_ORDER_KIND, CURRENCY, PAYMENT_WINDOW_MS } from "../payments/OrderRules.ts"
import { AlertStore, type TopUpState } from "./AlertStore.ts"
import type { CardProcessor } from "../payments/CardProcessor.ts"
import { LedgerStore, type ScopeBalance } from "../ledger/LedgerStore.ts"
import { makeOffSessionCharges } from "../payments/OffSessionCharges.ts"
import type { OrderRecord, OrderStore } from "../payments/OrderStore.ts"
import type { PlanStore } from "../plans/PlanStore.ts"
import * as Time from "../kernel/Time.ts"
import { Alerts, autoReloadFailedAlert, autoReloadPaidAlert, lowBalanceAlert } from "./Alerts.ts"
import { monthOf, dayOf } from "../kernel/Time.ts"
import { Option } from "effect"
import { PayLinks } from "./PayLinks.ts"
import type { AutoReloadSettings } from "./Settings.ts"

/** The cap against runaway charging: charges started per account and UTC day. */
export const MAX_TOP_UPS_PER_DAY = 3

/** A claim still charging after this long is taken over (its process died or hangs). */
export const STALE_CHARGE_MS = 2 * 60_000

/**
 * A claim's charge that failed part way (the processor unreachable, a store write refused) is run
 * again by its own process this many times in all, CHARGE_RETRY_MS apart and more: the same order
 * id is the same charge, so this is safe, and the top-up need not wait STALE_CHARGE_MS for a
 * takeover.
 */
export const CHARGE_ATTEMPTS = 3
export const CHARGE_RETRY_MS = 500


// ---- pure rules ---------------------------------------------------------------------------

/** The balance the threshold is compared with: posted over every scope; holds of calls in flight do not count. */
export const postedBalance = (balances: ReadonlyArray<ScopeBalance>): bigint => balances.reduce((sum, b) => sum + b.posted, 0n)

export type Step = "nothing" | "rearm" | "cross" | "resume"

/** What a check does, from the state read first and the balance read after it. */
export const stepOf = (state: TopUpState | undefined, posted: bigint, threshold: bigint, nowMillis: number): Step => {
  const phase = state?.phase ?? "armed"
  if (phase === "charging") return nowMillis - Date.parse(state!.updated_at) >= STALE_CHARGE_MS ? "resume" : "nothing"
  if (posted >= threshold) return phase === "below" ? "rearm" : "nothing"
  return phase === "armed" ? "cross" : "nothing"
}

export type CrossingPlan =
  | { readonly _tag: "Charge"; readonly chargesOnDay: number }
  | { readonly _tag: "AlertOnly"; readonly why: string }

/** What a crossing does: charge, or only raise low_balance saying why not. */
export const planCrossing = (
  auto: AutoReloadSettings,
  state: TopUpState | undefined,
  today: string,
  canCharge: boolean
): CrossingPlan => {
  if (!auto.enabled) return { _tag: "AlertOnly", why: "Automatic top-ups are off." }
  if (auto.card === null) return { _tag: "AlertOnly", why: "No card is saved for automatic top-ups." }
  if (state?.last_error != null) {
    return {
      _tag: "AlertOnly",
      why: `Automatic top-ups wait after a failed one (${state.last_error}); change the settings or save a card.`
    }
  }
  if (!canCharge) return { _tag: "AlertOnly", why: "Card payments or the credit price are not set up." }
  const today_ = state?.day === today ? state.charges_on_day : 0
  if (today_ >= MAX_TOP_UPS_PER_DAY) {
    return { _tag: "AlertOnly", why: `${MAX_TOP_UPS_PER_DAY} automatic top-ups were started today (UTC), the most a day.` }
  }
  return { _tag: "Charge", chargesOnDay: today_ + 1 }
}

const formatCredits = (micro: bigint) => (micro / MICRO_PER_CREDIT).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ",")

const topUpTitle = (micro: bigint) => `Automatic top-up: ${formatCredits(micro)} credits`

/** A top-up's order (pending), as charged off-session or, after a failure, paid by the person (PayLinks.ts). */
export const topUpOrder = (accountId: AccountId, orderId: OrderId, cents: bigint, micro: bigint, at: number): OrderRecord => ({
  id: orderId, account_id: accountId, type: "credits", title: topUpTitle(micro), amount_cents: cents, currency: CURRENCY,
  credits: micro, machine_id: null, package_id: null, gift: false, details: null, status: "pending", payment_method: "card",
  card_session_id: null, checkout_url: null, deposit: null, created_at: Time.toTimestamp(at),
  expires_at: Time.toTimestamp(at + PAYMENT_WINDOW_MS), paid_at: null, paid_with: null
})

// ---- the service ----------------------------------------------------------------------------

export class TopUps extends Context.Service<TopUps, {
  /** After a settlement charged the account: re-arm, claim a crossing and charge it, or resume a stale charge. */
  readonly check: (accountId: AccountId, auto: AutoReloadSettings) => Effect.Effect<void>
  /** The person changed the settings or saved a card: last_error cleared, armed again (unless a charge is under way). */
  readonly resume: (accountId: AccountId) => Effect.Effect<void>
  /** The account's state (undefined: never crossed). */
  readonly state: (accountId: AccountId) => Effect.Effect<TopUpState | undefined>
}>()("@model-platform/core/billing/TopUps") {
  static readonly layer: Layer.Layer<
    TopUps,
    never,
    AlertStore | LedgerStore | Ledger | OrderStore | PlanStore | CardProcessor | Catalogue | Alerts
  > = Layer.effect(TopUps, Effect.suspend(() => makeTopUps))
}

const makeTopUps = Effect.gen(function*() {
  const store = yield* AlertStore
  const ledgerStore = yield* LedgerStore
  const offSession = yield* makeOffSessionCharges
  const catalogue = yield* Catalogue
  const alerts = yield* Alerts
  const payLinks = Option.getOrUndefined(yield* Effect.serviceOption(PayLinks))
  const perUsd = catalogue.config.prices.credits_per_usd
  const canCharge = perUsd !== null && catalogue.config.payments.card !== null

  const swap = (accountId: AccountId, from: TopUpState | undefined, patch: Partial<TopUpState>, nowMillis: number) => {
    const next: TopUpState = {
      phase: "armed",
      order_id: null,
      day: dayOf(nowMillis),
      charges_on_day: 0,
      last_error: null,
      ...from,
      ...patch,
      version: (from?.version ?? 0) + 1,
      updated_at: Time.toTimestamp(nowMillis)
    }
    return Effect.map(store.swapTopUp(accountId, from?.version, next), (won) => (won ? next : undefined))
  }

  /** Charges a claim (state in phase charging, as written) and records its outcome. */
  const charge = Effect.fnUntraced(function*(accountId: AccountId, auto: AutoReloadSettings, claim: TopUpState) {
    const orderId = claim.order_id!
    const cents = BigInt(auto.amount_usd) * 100n
    const micro = BigInt(auto.amount_usd) * BigInt(perUsd ?? 0) * MICRO_PER_CREDIT
    const order = topUpOrder(accountId, orderId, cents, micro, yield* Clock.currentTimeMillis)
    const outcome = auto.card === null || perUsd === null
      ? { _tag: "Declined" as const, reason: "no_card", message: "No card is saved for automatic top-ups." }
      : yield* offSession.charge(order, auto.card.reference)
    const now = yield* Clock.currentTimeMillis
    if (outcome._tag === "Declined") {
      const error = `${outcome.message} (${outcome.reason})`
      if ((yield* swap(accountId, claim, { phase: "below", last_error: error }, now)) !== undefined) {
        // Once per failure (the swap's winner): the person may pay it themselves; nothing is retried.
        const link = perUsd === null || payLinks === undefined
          ? undefined
          : yield* payLinks.offer(topUpOrder(accountId, orderId, cents, micro, now), `Your automatic top-up was not charged: ${error}`)
        yield* alerts.raise(accountId, autoReloadFailedAlert(monthOf(now), orderId, error, link !== undefined))
      }
      return
    }
    yield* alerts.raise(accountId, autoReloadPaidAlert(monthOf(now), orderId, micro, cents))
    // Seen at or above the threshold after its credit: the next fall below it is a new crossing.
    const posted = postedBalance(yield* ledgerStore.balances(accountId))
    yield* swap(accountId, claim, { phase: posted >= auto.threshold ? "armed" : "below", last_error: null }, yield* Clock.currentTimeMillis)
  })

  /** `charge`, run again after a failure (CHARGE_ATTEMPTS); still failing, the claim waits for a takeover. */
  const chargeClaim = (accountId: AccountId, auto: AutoReloadSettings, claim: TopUpState) =>
    Effect.gen(function*() {
      for (let attempt = 1;; attempt++) {
        const exit = yield* Effect.exit(charge(accountId, auto, claim))
        if (Exit.isSuccess(exit) || Cause.hasInterruptsOnly(exit.cause) || attempt >= CHARGE_ATTEMPTS) return yield* exit
        yield* Effect.logWarning(`automatic top-up of ${accountId}: the charge of order ${claim.order_id} failed part way; running it again`, exit.cause)
        yield* Effect.sleep(CHARGE_RETRY_MS * attempt)
      }
    })

  const check = (accountId: AccountId, auto: AutoReloadSettings) =>
    Effect.gen(function*() {
      const state = yield* store.topUp(accountId)
      const posted = postedBalance(yield* ledgerStore.balances(accountId))
      const now = yield* Clock.currentTimeMillis
      switch (stepOf(state, posted, auto.threshold, now)) {
        case "nothing":
          return
        case "rearm":
          return yield* Effect.asVoid(swap(accountId, state, { phase: "armed" }, now))
        case "resume": {
          const claim = yield* swap(accountId, state, {}, now)
          if (claim !== undefined) yield* chargeClaim(accountId, auto, claim)
          return
        }
        case "cross": {
          const today = dayOf(now)
          const plan = planCrossing(auto, state, today, canCharge)
          if (plan._tag === "AlertOnly") {
            if ((yield* swap(accountId, state, { phase: "below" }, now)) !== undefined) {
              yield* alerts.raise(accountId, lowBalanceAlert(monthOf(now), posted, auto.threshold, plan.why))
            }
            return
          }
          const claim = yield* swap(accountId, state, {
            phase: "charging",
            order_id: yield* generateId(AUTO_RELOAD_ORDER_KIND),
            day: today,
            charges_on_day: plan.chargesOnDay
          }, now)
          if (claim !== undefined) yield* chargeClaim(accountId, auto, claim)
        }
      }
    }).pipe(Effect.withSpan("TopUps.check"))

  const resume = (accountId: AccountId): Effect.Effect<void> =>
    Effect.gen(function*() {
      for (let attempt = 0; attempt < 5; attempt++) {
        const state = yield* store.topUp(accountId)
        if (state === undefined || state.phase === "charging") return
        if (state.phase === "armed" && state.last_error === null) return
        if ((yield* swap(accountId, state, { phase: "armed", last_error: null }, yield* Clock.currentTimeMillis)) !== undefined) return
      }
    }).pipe(Effect.withSpan("TopUps.resume"))

  return TopUps.of({ check, resume, state: store.topUp })
})
