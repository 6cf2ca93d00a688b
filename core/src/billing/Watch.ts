/**
 * What billing does when the balance or the month's spend changes (docs/billing.md "Alerts",
 * "Automatic top-ups"), called by the gateway, never by a timer:
 * - `settled`: after a batch of settlements, per account charged in it, spend passing an alert
 *   point raises org_spend (once per point and month) and the automatic top-up is checked
 *   (billing/TopUp.ts: a crossing of the threshold charges once, or raises low_balance);
 * - `refused`: a priced call refused at a monthly limit raises monthly_limit_reached or
 *   key_monthly_limit_reached (once per month).
 *
 * Cheap on the hot path: what to check is decided on an account's billing settings as read at
 * most SETTINGS_CACHE_MS ago (a change made in this process forgets them at once, one made
 * elsewhere is seen within that time, or at its notice where the shell sends them:
 * kernel/AccountCache.ts), so an account with no alert points, no threshold and
 * top-ups off costs no read at all, and one with alert points only the read of its month's spend.
 * A top-up check reads the settings afresh, and acts on those: a card removed or top-ups turned off
 * through another process is never charged from a copy kept here.
 * Checks of one account never overlap in a process: batches settling while one runs ask for one
 * more run, at least RECHECK_MS after the last one started, so a stream of batches costs at most
 * one check at a time per account and a few a second. The checks are level-triggered (spend >=
 * point, balance < threshold, read fresh each time), so a check skipped, delayed or failed is
 * made good by a later one.
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import { makeAccountCache } from "../kernel/AccountCache.ts"
import { Catalogue } from "../catalogue/Catalogue.ts"
import { BillingSettingsStore } from "./BillingSettingsStore.ts"
import type { BillingSettings } from "./Settings.ts"
import { LedgerStore } from "../ledger/LedgerStore.ts"
import { OrderStore } from "../payments/OrderStore.ts"
import { Alerts, limitReachedAlert, orgSpendAlert, pointsPassed } from "./Alerts.ts"
import { monthOf } from "../kernel/Time.ts"
import { ACCOUNT_BUDGET, monthlyLimitAt, tierTable } from "./Tiers.ts"
import { TopUps } from "./TopUp.ts"
import type { AccountId } from "../kernel/Ids.ts"

/** How long an account's tier limit (from its purchased credits) is reused, as admission caches it. */
const TIER_CACHE_MS = 10_000
/** How long an account's billing settings are used without reading them again. */
export const SETTINGS_CACHE_MS = 5_000
/** The least time between the starts of two checks of one account in a process. */
export const RECHECK_MS = 200

export class BillingWatch extends Context.Service<BillingWatch, {
  /** The accounts charged by a batch of settlements (any order, repeats allowed). Never fails. */
  readonly settled: (accountIds: Iterable<string>) => Effect.Effect<void>
  /** A priced call was refused at a monthly limit ("account" or "key:<id>") of `month`. Never fails. */
  readonly refused: (accountId: AccountId, budget: string, month: string, limit: bigint) => Effect.Effect<void>
  /** The account's settings changed in this process: read them again at its next check. */
  readonly forget: (accountId: AccountId) => Effect.Effect<void>
}>()("@model-platform/core/billing/BillingWatch") {
  static readonly layer: Layer.Layer<
    BillingWatch,
    never,
    BillingSettingsStore | LedgerStore | OrderStore | Catalogue | Alerts | TopUps
  > = Layer.effect(BillingWatch, Effect.suspend(() => makeWatch))
}

const makeWatch = Effect.gen(function*() {
  const settingsStore = yield* BillingSettingsStore
  const ledger = yield* LedgerStore
  const orders = yield* OrderStore
  const catalogue = yield* Catalogue
  const alerts = yield* Alerts
  const topUps = yield* TopUps
  const tiers = tierTable(catalogue.config.tiers)

  // Per account, kept as kernel/AccountCache.ts says: the tier's limit and the billing settings.
  const tierLimits = yield* makeAccountCache(
    TIER_CACHE_MS,
    (accountId: AccountId) => Effect.map(orders.purchasedCredits(accountId), (purchased) => monthlyLimitAt(tiers, purchased))
  )
  const known = yield* makeAccountCache(SETTINGS_CACHE_MS, settingsStore.get)

  /** org_spend for every alert point the month's spend has passed (raised once each). */
  const spend = Effect.fnUntraced(function*(accountId: AccountId, points: ReadonlyArray<number>) {
    const now = yield* Clock.currentTimeMillis
    const month = monthOf(now)
    const account = (yield* ledger.budgets(accountId, month)).find((b) => b.budget === ACCOUNT_BUDGET)
    if (account === undefined || account.spent <= 0n) return
    const limit = account.limit ?? (yield* tierLimits.through(accountId, now))
    if (limit === null) return
    for (const point of pointsPassed(points, account.spent, limit)) {
      yield* alerts.raise(accountId, orgSpendAlert(month, point, account.spent, limit))
    }
  })

  /** The kept settings while fresh enough (`read: false`), else read now. */
  const settingsOf = (accountId: AccountId, now: number) => {
    const cached = known.get(accountId, now)
    return Option.isSome(cached)
      ? Effect.succeed({ settings: cached.value, read: false })
      : Effect.map(known.read(accountId, now), (settings) => ({ settings, read: true }))
  }
  /** The top-up check, on settings read in this check (read now unless they just were): it may charge a card. */
  const topUp = (accountId: AccountId, settings: BillingSettings, justRead: boolean, now: number) =>
    Effect.flatMap(justRead ? Effect.succeed(settings) : known.read(accountId, now), (fresh) => topUps.check(accountId, fresh.auto_reload))

  const checking = Effect.fnUntraced(function*(accountId: AccountId) {
    const now = yield* Clock.currentTimeMillis
    const { settings, read: justRead } = yield* settingsOf(accountId, now)
    const auto = settings.auto_reload
    const watchSpend = settings.alert_points.length > 0
    const watchBalance = auto.enabled || auto.threshold > 0n
    if (!watchSpend && !watchBalance) return
    yield* Effect.all([
      watchSpend ? spend(accountId, settings.alert_points) : Effect.void,
      watchBalance ? topUp(accountId, settings, justRead, now) : Effect.void
    ], { concurrency: 2, discard: true })
  })
  const check = (accountId: AccountId) =>
    checking(accountId).pipe(
      Effect.catchCause((cause) => Effect.logError(`billing watch: the check of ${accountId} failed; its next settlement checks again`, cause)),
      Effect.withSpan("BillingWatch.check")
    )

  /** Per account: whether another run was asked for while one runs. */
  const running = new Map<string, { again: boolean }>()

  const watch = (accountId: AccountId): Effect.Effect<void> =>
    Effect.suspend(() => {
      const current = running.get(accountId)
      if (current !== undefined) {
        current.again = true
        return Effect.void
      }
      const entry = { again: false }
      running.set(accountId, entry)
      // Deciding to stop and leaving the map are one synchronous step: a request arriving after
      // it starts a run of its own, one arriving before it is served by another round here.
      const loop = (started: number): Effect.Effect<void> =>
        Effect.andThen(
          check(accountId),
          Effect.flatMap(Clock.currentTimeMillis, (now) => {
            if (!entry.again) {
              running.delete(accountId)
              return Effect.void
            }
            const wait = started + RECHECK_MS - now
            return Effect.andThen(
              wait > 0 ? Effect.sleep(wait) : Effect.void,
              Effect.suspend(() => {
                entry.again = false
                return Effect.flatMap(Clock.currentTimeMillis, loop)
              })
            )
          })
        )
      return Effect.onInterrupt(Effect.flatMap(Clock.currentTimeMillis, loop), () => Effect.sync(() => running.delete(accountId)))
    })

  return BillingWatch.of({
    settled: (accountIds) => Effect.forEach(new Set(accountIds), watch, { concurrency: "unbounded", discard: true }),
    refused: (accountId, budget, month, limit) => Effect.asVoid(alerts.raise(accountId, limitReachedAlert(budget, month, limit))),
    forget: (accountId) => Effect.sync(() => known.forget(accountId))
  })
})
