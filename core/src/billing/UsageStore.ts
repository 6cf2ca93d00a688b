/**
 * Port: usage records, one per completed inference call (docs/architecture.md "Money").
 * The gateway writes a record once per call ref; writing a ref again changes nothing. Billing
 * (GET /billing/usage, usage.csv, statements, monthly limits) reads them back.
 *
 * Money is integer micro-credits (bigint). Quantities are integer units of the price table's unit
 * (tokens, requests). Every amount is >= 0 and the ref is non-empty (`usageRecordProblem`); a store
 * dies on a record that breaks this, as on any other store failure.
 *
 * Listing order: oldest `at` first; records of one `at` by ref (so that every store answers the
 * same order). Refs are unique across accounts (they are reservation refs).
 *
 * Reports read per-day rollups (account x UTC day x service x model x key x agent: calls and the
 * sums of the amounts), which a store keeps in the same atomic step that writes the record: a
 * duplicate changes neither, and a report costs the number of rollups, not of records
 * (docs/billing.md "Usage reports"). `reportOf` says what a report must equal: the records' sums.
 */
import { dayOf } from "../kernel/Time.ts"
import { Context, Effect, Option, Stream } from "effect"
import type { Timestamp } from "../kernel/Time.ts"
import type { AccountId, AgentId, KeyId } from "../kernel/Ids.ts"

export interface UsageRecord {
  /** Unique per call (the ledger reservation ref of the call). */
  readonly ref: string
  readonly account_id: AccountId
  /** When the call completed. */
  readonly at: Timestamp
  readonly key_id: KeyId
  readonly agent_id: AgentId | null
  readonly machine_id: string
  /** The price table service the model is billed under (the model's `service`). */
  readonly service: string
  readonly model: string
  /** The unit the quantity counts, e.g. "tokens" or "requests". */
  readonly unit: string
  readonly quantity: bigint
  readonly input_tokens: bigint
  readonly output_tokens: bigint
  /** The call's cost at list price, micro-credits. */
  readonly list_credits: bigint
  /** What was charged, micro-credits (zero while charging is not open). */
  readonly credits: bigint
  /** Micro-credits covered by the plan allowance and by the one-time trial. */
  readonly from_allowance: bigint
  readonly from_trial: bigint
}

export interface UsageQuery {
  readonly account_id: AccountId
  /** Inclusive lower bound. */
  readonly from: Timestamp
  /** Exclusive upper bound. */
  readonly to: Timestamp
  readonly key_id?: string | undefined
  readonly service?: string | undefined
}

export class UsageStore extends Context.Service<UsageStore, {
  /** Writes the record once per ref: "Recorded", or "Duplicate" when the ref exists (nothing changes). */
  readonly record: (record: UsageRecord) => Effect.Effect<"Recorded" | "Duplicate">
  /** The record of one call, if any. */
  readonly byRef: (ref: string) => Effect.Effect<UsageRecord | undefined>
  /** Records of an account in [from, to), oldest first (then by ref), optionally of one key and one service. */
  readonly list: (query: UsageQuery) => Effect.Effect<ReadonlyArray<UsageRecord>>
  /** Sum of `credits` charged to an account (and optionally one key) in [from, to): monthly limits. */
  readonly spent: (query: UsageQuery) => Effect.Effect<bigint>
  /**
   * The account's usage over whole UTC days, one group per value of `groupBy` with any usage,
   * ordered by key (`byGroupKey`); read from the rollups. Equals `reportOf` over the records.
   */
  readonly report: (query: UsageDays, groupBy: UsageDimension) => Effect.Effect<ReadonlyArray<UsageGroup>>
  /**
   * The records `list` answers, in its order, as the usage CSV's lines (`UsageLine`: a store may
   * leave the other fields out, and one reading a database should, since this is the export of
   * millions of records), read a page at a time (keyset pagination by (at, ref), `pageSize` records
   * per page): constant memory whatever the range. Each page is its own read, so records written
   * meanwhile may or may not appear; none appears twice.
   */
  readonly stream: (query: UsageQuery, options?: { readonly pageSize?: number | undefined }) => Stream.Stream<UsageLine>
}>()("@model-platform/core/billing/UsageStore") {}

/** What the usage CSV shows of a record (`stream`): its columns, USAGE_CSV_COLUMNS in billing/Schemas.ts. */
export type UsageLine = Omit<UsageRecord, "account_id" | "machine_id" | "input_tokens" | "output_tokens">

/** A record's CSV fields alone (contracts compare a stream with `list` through it). */
export const lineOf = (r: UsageLine): UsageLine => ({
  ref: r.ref,
  at: r.at,
  key_id: r.key_id,
  agent_id: r.agent_id,
  service: r.service,
  model: r.model,
  unit: r.unit,
  quantity: r.quantity,
  list_credits: r.list_credits,
  credits: r.credits,
  from_allowance: r.from_allowance,
  from_trial: r.from_trial
})

/** Why a store must refuse this record, or undefined. Pure, shared by the stores. */
export const usageRecordProblem = (record: UsageRecord): string | undefined => {
  if (record.ref.length === 0) return "the ref must be non-empty"
  for (
    const field of [
      "quantity",
      "input_tokens",
      "output_tokens",
      "list_credits",
      "credits",
      "from_allowance",
      "from_trial"
    ] as const
  ) {
    if (record[field] < 0n) return `${field} must be >= 0, got ${record[field]}`
  }
  return undefined
}

/** Whether a record answers a query: its account, at in [from, to), and the key and service asked for. */
export const matchesUsageQuery = (query: UsageQuery, record: UsageRecord): boolean =>
  record.account_id === query.account_id &&
  record.at >= query.from &&
  record.at < query.to &&
  (query.key_id === undefined || record.key_id === query.key_id) &&
  (query.service === undefined || record.service === query.service)

/** The listing order: oldest `at` first, then by ref. */
export const byTimeThenRef = (a: UsageRecord, b: UsageRecord): number =>
  a.at < b.at ? -1 : a.at > b.at ? 1 : a.ref < b.ref ? -1 : a.ref > b.ref ? 1 : 0

// ---- Reports over rollups ---------------------------------------------------------------------

/** What a report groups by: the rollup's dimensions (the day, or one of the record's fields). */
export type UsageDimension = "day" | "service" | "model" | "key" | "agent"

/** An account's usage over whole UTC days [from, to] (YYYY-MM-DD, both included). */
export interface UsageDays {
  readonly account_id: AccountId
  readonly from: string
  readonly to: string
  readonly key_id?: string | undefined
  readonly service?: string | undefined
}

/** Calls and the sums of their amounts (micro-credits). */
export interface UsageTotals {
  readonly calls: bigint
  readonly list_credits: bigint
  readonly credits: bigint
  readonly from_allowance: bigint
  readonly from_trial: bigint
}

/**
 * One group of a report. `key` is the value grouped by: the day (YYYY-MM-DD), the service, the
 * model, the key id, or the agent id (`NO_AGENT` for calls made without one).
 */
export interface UsageGroup extends UsageTotals {
  readonly key: string
}

/** The group key of calls made without an agent (no agent id is empty). */
export const NO_AGENT = ""

/** One rollup: the totals of an account's records of one UTC day, service, model, key and agent. */
export interface UsageRollup extends UsageTotals {
  readonly account_id: AccountId
  readonly day: string
  readonly service: string
  readonly model: string
  readonly key_id: KeyId
  /** NO_AGENT for calls without an agent. */
  readonly agent_id: AgentId
}

/** The rollup one record adds. */
export const rollupOf = (record: UsageRecord): UsageRollup => ({
  account_id: record.account_id,
  day: dayOf(record.at),
  service: record.service,
  model: record.model,
  key_id: record.key_id,
  agent_id: record.agent_id ?? NO_AGENT,
  calls: 1n,
  list_credits: record.list_credits,
  credits: record.credits,
  from_allowance: record.from_allowance,
  from_trial: record.from_trial
})

/** A rollup's identity (what a store keys it by), as one string. */
export const rollupId = (r: Pick<UsageRollup, "account_id" | "day" | "service" | "model" | "key_id" | "agent_id">): string =>
  JSON.stringify([r.account_id, r.day, r.service, r.model, r.key_id, r.agent_id])

export const addTotals = <T extends UsageTotals>(a: T, b: UsageTotals): T => ({
  ...a,
  calls: a.calls + b.calls,
  list_credits: a.list_credits + b.list_credits,
  credits: a.credits + b.credits,
  from_allowance: a.from_allowance + b.from_allowance,
  from_trial: a.from_trial + b.from_trial
})

/** Whether a rollup answers a report's query: its account, a day in [from, to], the key and service asked for. */
export const matchesUsageDays = (query: UsageDays, r: UsageRollup): boolean =>
  r.account_id === query.account_id &&
  r.day >= query.from &&
  r.day <= query.to &&
  (query.key_id === undefined || r.key_id === query.key_id) &&
  (query.service === undefined || r.service === query.service)

/** The value a rollup is grouped under. */
export const groupKeyOf = (r: UsageRollup, groupBy: UsageDimension): string => {
  switch (groupBy) {
    case "day":
      return r.day
    case "service":
      return r.service
    case "model":
      return r.model
    case "key":
      return r.key_id
    case "agent":
      return r.agent_id
  }
}

/** A report's order: by key, in UTF-16 code units (days sort chronologically). */
export const byGroupKey = (a: UsageGroup, b: UsageGroup): number => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)

/** Groups the rollups that answer `query` by `groupBy`; ordered by key. */
export const groupRollups = (
  rollups: Iterable<UsageRollup>,
  query: UsageDays,
  groupBy: UsageDimension
): Array<UsageGroup> => {
  const groups = new Map<string, UsageGroup>()
  for (const r of rollups) {
    if (!matchesUsageDays(query, r)) continue
    const key = groupKeyOf(r, groupBy)
    const group = groups.get(key)
    groups.set(key, group === undefined ? {
      key,
      calls: r.calls,
      list_credits: r.list_credits,
      credits: r.credits,
      from_allowance: r.from_allowance,
      from_trial: r.from_trial
    } : addTotals(group, r))
  }
  return [...groups.values()].sort(byGroupKey)
}

/** The report as the records themselves say it: what every store's `report` must equal. */
export const reportOf = (records: Iterable<UsageRecord>, query: UsageDays, groupBy: UsageDimension): Array<UsageGroup> =>
  groupRollups(Array.from(records, rollupOf), query, groupBy)

// ---- Streaming by pages -----------------------------------------------------------------------

/** Records per page of `stream` unless asked otherwise: a few thousand rows per round trip. */
export const DEFAULT_USAGE_PAGE_SIZE = 5_000

/** Where a page starts: after this record in the listing order. */
export interface UsageCursor {
  readonly at: Timestamp
  readonly ref: string
}

/** Whether a record comes after the cursor in the listing order. */
export const isAfterCursor = (cursor: UsageCursor, record: UsageCursor): boolean =>
  record.at > cursor.at || (record.at === cursor.at && record.ref > cursor.ref)

/**
 * The stream of a store's pages: `page(after, limit)` answers at most `limit` records after the
 * cursor (from the start when undefined), in the listing order. A short page is the last.
 */
export const pagedUsageStream = <A extends UsageCursor>(
  page: (after: UsageCursor | undefined, limit: number) => Effect.Effect<ReadonlyArray<A>>,
  pageSize: number | undefined
): Stream.Stream<A> => {
  const size = Math.max(1, Math.floor(pageSize ?? DEFAULT_USAGE_PAGE_SIZE))
  return Stream.paginate<UsageCursor | undefined, A>(undefined, (after) =>
    Effect.map(page(after, size), (records) => {
      const last = records[records.length - 1]
      return [
        records,
        records.length < size || last === undefined ? Option.none() : Option.some({ at: last.at, ref: last.ref })
      ] as const
    }))
}
