/**
 * Port: billing alerts, and the state of each account's automatic top-up (docs/billing.md
 * "Alerts", "Automatic top-ups"). Both are written when the balance or the month's spend changes
 * (after a settlement, at a refusal), by any number of processes at once, so the two operations
 * that decide "once" are ATOMIC between processes:
 *
 * - `raise` inserts an alert unless one with the same (account, kind, target, period, point)
 *   exists: of concurrent raises of one alert exactly one answers "raised" (and only that caller
 *   emails it);
 * - `swapTopUp` replaces an account's top-up state only when its version is the one the caller
 *   read (compare-and-set): of concurrent swaps from one version exactly one lands, which is how
 *   a crossing of the threshold is claimed once and charged once (billing/TopUp.ts).
 *
 * Alerts are never deleted; `seen` only ever goes false -> true. Broken input (a point out of
 * 0..100, a period that is not YYYY-MM, a version that does not follow) is a defect. The shared
 * contract is adapters/test-harness AlertContract.
 */
import { Context, type Effect } from "effect"
import type { Timestamp } from "../kernel/Time.ts"
import { type AlertKind, AlertKindValues } from "./Schemas.ts"
import type { AccountId, OrderId } from "../kernel/Ids.ts"


export interface AlertRecord {
  readonly id: string
  readonly account_id: AccountId
  readonly kind: AlertKind
  /** What it is about: "account", a key id, a top-up's order id, or a plan's id (docs/billing.md "Alerts"). */
  readonly target: string
  /** The UTC month it belongs to, YYYY-MM. */
  readonly period: string
  /** The alert point passed (a whole percentage), 0 for kinds that have none. */
  readonly point: number
  readonly message: string
  readonly seen: boolean
  readonly created_at: Timestamp
}

/**
 * An account's automatic top-up, as a small state machine claimed by compare-and-set
 * (billing/TopUp.ts has the rules):
 * - `armed`: the next time the balance is seen below the threshold is a crossing;
 * - `charging`: a crossing was claimed and its charge (order_id) is under way;
 * - `below`: the crossing was dealt with; the next one waits until the balance is seen at or
 *   above the threshold again.
 */
export interface TopUpState {
  /** 1 for the first state written, then +1 per swap. */
  readonly version: number
  readonly phase: "armed" | "charging" | "below"
  /** The top-up of the last crossing that charged (its order id, also the charge's idempotency key). */
  readonly order_id: OrderId | null
  /** The UTC day (YYYY-MM-DD) of the last charge, and how many charges were started on it. */
  readonly day: string
  readonly charges_on_day: number
  /** Why the last charge failed; automatic top-ups wait while it is set (the person clears it). */
  readonly last_error: string | null
  readonly updated_at: Timestamp
}

export class AlertStore extends Context.Service<AlertStore, {
  /** ATOMIC: inserts the alert unless its (account, kind, target, period, point) exists ("exists": nothing changed). */
  readonly raise: (alert: AlertRecord) => Effect.Effect<"raised" | "exists">
  /** The account's alerts, newest first (equal created_at: greater id first), at most `limit`. */
  readonly list: (accountId: AccountId, limit: number) => Effect.Effect<ReadonlyArray<AlertRecord>>
  /** Marks those of the ids that are the account's alerts seen (others' ids are ignored); how many changed. */
  readonly markSeen: (accountId: AccountId, ids: ReadonlyArray<string>) => Effect.Effect<number>
  /** The account's top-up state, undefined before the first swap. */
  readonly topUp: (accountId: AccountId) => Effect.Effect<TopUpState | undefined>
  /**
   * ATOMIC, conditional: writes `next` (whose version is the expected one + 1, or 1 when none is
   * expected) only when the stored version is `expected` (undefined: no state stored yet).
   * true for the call that wrote it; false when another swap got there first (nothing changed).
   */
  readonly swapTopUp: (accountId: AccountId, expected: number | undefined, next: TopUpState) => Effect.Effect<boolean>
}>()("@model-platform/core/billing/AlertStore") {}

// ---------------------------------------------------------------------------------------------
// The input rules every store enforces (breaking one is a defect). Pure, shared by the stores.

const PERIOD = /^\d{4}-(0[1-9]|1[0-2])$/
const DAY = /^\d{4}-\d{2}-\d{2}$/

/** Why `raise` must refuse this alert, or undefined. */
export const alertProblem = (alert: AlertRecord): string | undefined => {
  if (!(AlertKindValues as ReadonlyArray<string>).includes(alert.kind)) return `unknown kind ${JSON.stringify(alert.kind)}`
  if (!PERIOD.test(alert.period)) return `a period is YYYY-MM, got ${JSON.stringify(alert.period)}`
  if (!Number.isInteger(alert.point) || alert.point < 0 || alert.point > 100) return `a point is 0 to 100, got ${alert.point}`
  if (alert.id.length === 0 || alert.account_id.length === 0 || alert.target.length === 0) return "empty id, account or target"
  return undefined
}

/** Why `swapTopUp` must refuse this swap, or undefined. */
export const topUpProblem = (expected: number | undefined, next: TopUpState): string | undefined => {
  if (expected !== undefined && (!Number.isInteger(expected) || expected < 1)) return `bad expected version ${expected}`
  if (next.version !== (expected ?? 0) + 1) return `version ${next.version} does not follow ${expected ?? "none"}`
  if (!DAY.test(next.day) && next.day !== "") return `a day is YYYY-MM-DD, got ${JSON.stringify(next.day)}`
  if (!Number.isInteger(next.charges_on_day) || next.charges_on_day < 0) return `bad charges_on_day ${next.charges_on_day}`
  if (next.phase === "charging" && next.order_id === null) return "a charging state names its order"
  return undefined
}

/** Newest first; equal instants: greater id first (the order `list` answers in). */
export const newestFirst = (a: AlertRecord, b: AlertRecord): number =>
  a.created_at !== b.created_at ? (a.created_at < b.created_at ? 1 : -1) : a.id < b.id ? 1 : a.id > b.id ? -1 : 0

/** The identity `raise` is idempotent on. */
export const alertIdentity = (alert: Pick<AlertRecord, "account_id" | "kind" | "target" | "period" | "point">): string =>
  JSON.stringify([alert.account_id, alert.kind, alert.target, alert.period, alert.point])
