/**
 * Billing alerts (docs/billing.md "Alerts"): what each kind says, and the `Alerts` service that
 * raises them once (AlertStore.raise is idempotent on account, kind, target, period and point),
 * emails each new one when the account asked for it (alert_email), lists them (GET
 * /billing/alerts) and marks them seen.
 *
 * Alerts are raised where the balance or the month's spend changes: after a settlement
 * (billing/Watch.ts: spend passing an alert point, the balance crossing the low-balance level,
 * a top-up paid or failed) and at a refusal (gateway/Admission.ts: a monthly limit reached);
 * never by a timer. Raising never fails its caller: the store's or the mail's trouble is logged.
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import type { Caller } from "../keys/Caller.ts"
import { billingError, type BillingErrorOf } from "./BillingErrors.ts"
import { type AccountId, generateId, type OrderId } from "../kernel/Ids.ts"
import { microToCredits } from "../kernel/Money.ts"
import { centsToUsd } from "../payments/OrderRules.ts"
import { AccountStore } from "../keys/AccountStore.ts"
import { budgetScopeOf } from "../ledger/BudgetScope.ts"
import { alertIdentity, type AlertRecord, AlertStore } from "./AlertStore.ts"
import { BillingSettingsStore } from "./BillingSettingsStore.ts"
import { type EmailMessage, EmailSender } from "../kernel/EmailSender.ts"
import * as Time from "../kernel/Time.ts"
import type { Alert, AlertList } from "./Schemas.ts"

export const ALERTS_DEFAULT_LIMIT = 50
export const ALERTS_MAX_LIMIT = 200

/** What a use-case raises; the service adds the id, the account, `seen` and the time. */
export type AlertDraft = Pick<AlertRecord, "kind" | "target" | "period" | "point" | "message">

// ---- the kinds ----------------------------------------------------------------------------

const credits = (micro: bigint) => microToCredits(micro).toLocaleString("en-US", { maximumFractionDigits: 6 })

/** The alert points (ascending percentages) the month's spend has reached against `limit`. */
export const pointsPassed = (points: ReadonlyArray<number>, spent: bigint, limit: bigint): ReadonlyArray<number> =>
  spent <= 0n || limit <= 0n ? [] : points.filter((p) => spent * 100n >= BigInt(p) * limit)

export const orgSpendAlert = (period: string, point: number, spent: bigint, limit: bigint): AlertDraft => ({
  kind: "org_spend",
  target: "account",
  period,
  point,
  message: `This month's spend passed ${point}% of the monthly limit: ${credits(spent)} of ${credits(limit)} credits.`
})

/** A priced call refused at a monthly limit: the account's ("account") or a key's ("key:<id>"). */
export const limitReachedAlert = (budget: string, period: string, limit: bigint): AlertDraft => {
  const scope = budgetScopeOf(budget)
  return scope?._tag === "Key"
    ? {
      kind: "key_monthly_limit_reached",
      target: scope.key_id,
      period,
      point: 0,
      message: `Key ${scope.key_id} reached its monthly limit of ${credits(limit)} credits: its priced calls are refused until next month or until its limit is raised.`
    }
    : {
      kind: "monthly_limit_reached",
      target: "account",
      period,
      point: 0,
      message: `The account reached its monthly limit of ${credits(limit)} credits: priced calls are refused until next month or until the limit is raised.`
    }
}

export const lowBalanceAlert = (period: string, balance: bigint, level: bigint, why: string): AlertDraft => ({
  kind: "low_balance",
  target: "account",
  period,
  point: 0,
  message: `The balance fell to ${credits(balance)} credits, below ${credits(level)}. ${why}`
})

export const autoReloadPaidAlert = (period: string, orderId: OrderId, micro: bigint, cents: bigint): AlertDraft => ({
  kind: "auto_reload_paid",
  target: orderId,
  period,
  point: 0,
  message: `Automatic top-up paid: ${credits(micro)} credits for $${centsToUsd(cents).toFixed(2)} (order ${orderId}).`
})

export const autoReloadFailedAlert = (period: string, orderId: OrderId, reason: string, linkMailed = false): AlertDraft => ({
  kind: "auto_reload_failed",
  target: orderId,
  period,
  point: 0,
  message: `Automatic top-up failed: ${reason} ${linkMailed ? "A link to pay it yourself was mailed to the account's address. " : ""}` +
    "Automatic top-ups wait until the settings are changed or a card is saved."
})

/** A card plan's renewal failed: the plan ends at its period's end (docs/plans.md "Renewals"). */
export const planRenewalFailedAlert = (
  period: string,
  subscriptionId: string,
  planName: string,
  reason: string,
  linkMailed = false
): AlertDraft => ({
  kind: "plan_renewal_failed",
  target: subscriptionId,
  period,
  point: 0,
  message: `The ${planName} plan (${subscriptionId}) was not renewed: ${reason} ` +
    (linkMailed
      ? "A link to pay its renewal yourself was mailed to the account's address; until then it has ended."
      : "It has ended; buy it again on the plans page.")
})

// ---- views and mail -----------------------------------------------------------------------

export const toAlert = (record: AlertRecord): Alert => ({
  id: record.id,
  kind: record.kind,
  target: record.target,
  period: record.period,
  point: record.point,
  message: record.message,
  seen: record.seen,
  created_at: record.created_at
})

const SUBJECTS: Record<AlertRecord["kind"], string> = {
  org_spend: "Spend alert",
  monthly_limit_reached: "Monthly limit reached",
  key_monthly_limit_reached: "A key reached its monthly limit",
  low_balance: "Low balance",
  auto_reload_paid: "Automatic top-up paid",
  auto_reload_failed: "Automatic top-up failed",
  plan_renewal_failed: "A plan was not renewed"
}

/** The mail of an alert (plain text: the message holds no link or secret). */
export const alertMail = (to: string, alert: AlertRecord): EmailMessage => ({
  to,
  subject: `Model Platform: ${SUBJECTS[alert.kind]}`,
  text: [
    alert.message,
    "",
    `Account ${alert.account_id}, ${alert.period}. Every alert is listed at GET /billing/alerts and on the billing page.`,
    "You get these mails because alert_email is on (POST /billing/limits turns it off)."
  ].join("\n")
})

// ---- the service ----------------------------------------------------------------------------

/** Identities raised (or found raised) lately in this process, so repeated checks skip the store. */
const MAX_KNOWN = 50_000

export class Alerts extends Context.Service<Alerts, {
  /**
   * Raises the alert unless it exists; true for the raise that inserted it, which then emails it
   * when the account's alert_email is on. Never fails: trouble is logged and answers false.
   */
  readonly raise: (accountId: AccountId, draft: AlertDraft) => Effect.Effect<boolean>
  /** GET /billing/alerts: newest first; limit 1 to 200, default 50, else 400 invalid_request. Marks nothing seen. */
  readonly list: (caller: Caller, limit?: number | undefined) => Effect.Effect<AlertList, BillingErrorOf<"invalid_limit">>
  /** A person saw these alerts (the billing page marks what it shows); how many changed. */
  readonly markSeen: (accountId: AccountId, ids: ReadonlyArray<string>) => Effect.Effect<number>
}>()("@model-platform/core/billing/Alerts") {
  static readonly layer: Layer.Layer<Alerts, never, AlertStore | BillingSettingsStore | AccountStore> = Layer.effect(
    Alerts,
    Effect.gen(function*() {
      const store = yield* AlertStore
      const settings = yield* BillingSettingsStore
      const accounts = yield* AccountStore
      const email = Option.getOrUndefined(yield* Effect.serviceOption(EmailSender))
      const known = new Set<string>()

      const mail = Effect.fnUntraced(function*(alert: AlertRecord) {
        if (email === undefined || !(yield* settings.get(alert.account_id)).alert_email) return
        const account = yield* accounts.get(alert.account_id)
        if (account === undefined) return
        yield* email.send(alertMail(account.email, alert)).pipe(
          Effect.catch((e) => Effect.logWarning(`alerts: the mail of alert ${alert.id} was not sent`, { reason: e.reason }))
        )
      })

      const raise = (accountId: AccountId, draft: AlertDraft): Effect.Effect<boolean> => {
        const identity = alertIdentity({ account_id: accountId, ...draft })
        if (known.has(identity)) return Effect.succeed(false)
        return Effect.gen(function*() {
          const alert: AlertRecord = {
            ...draft,
            id: yield* generateId("alrt"),
            account_id: accountId,
            seen: false,
            created_at: Time.toTimestamp(yield* Clock.currentTimeMillis)
          }
          const raised = (yield* store.raise(alert)) === "raised"
          if (known.size >= MAX_KNOWN) known.clear()
          known.add(identity)
          if (raised) yield* mail(alert)
          return raised
        }).pipe(
          Effect.catchCause((cause) => Effect.as(Effect.logError(`alerts: could not raise ${draft.kind} for ${accountId}`, cause), false)),
          Effect.withSpan("Alerts.raise")
        )
      }

      const list = Effect.fn("Alerts.list")(function*(caller: Caller, limit?: number) {
        const n = limit ?? ALERTS_DEFAULT_LIMIT
        if (!Number.isInteger(n) || n < 1 || n > ALERTS_MAX_LIMIT) {
          return yield* billingError(
            "invalid_limit",
            `limit must be an integer from 1 to ${ALERTS_MAX_LIMIT} (default ${ALERTS_DEFAULT_LIMIT}); got ${limit}.`
          )
        }
        return { data: (yield* store.list(caller.account.id, n)).map(toAlert) } satisfies AlertList
      })

      return Alerts.of({ raise, list, markSeen: store.markSeen })
    })
  )
}
