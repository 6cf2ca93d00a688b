/**
 * Usage reports (GET /billing/usage, /billing/usage.csv; docs/billing.md "Usage reports"): the
 * rules of the query (which days, at most MAX_USAGE_DAYS of them) and the use-case over the
 * UsageStore, which answers from its per-day rollups (JSON, grouped CSV) or streams the records a
 * page at a time (per-record CSV). Money stays bigint micro-credits until the JSON boundary.
 */
import { Clock, Effect, Result, Stream } from "effect"
import type { Caller } from "../keys/Caller.ts"
import { Catalogue } from "../catalogue/Catalogue.ts"
import { billingError, type BillingErrorOf } from "./BillingErrors.ts"
import { microToCredits } from "../kernel/Money.ts"
import { KeyStore } from "../keys/KeyStore.ts"
import { NO_AGENT, type UsageDays, type UsageDimension, type UsageGroup, UsageStore } from "./UsageStore.ts"
import { toTimestamp } from "../kernel/Time.ts"
import type { Usage, UsageGroupBy } from "./Schemas.ts"
import { USAGE_CSV_HEADER, USAGE_GROUP_CSV_HEADER, usageGroupLine, usageRecordLine } from "./UsageCsv.ts"
import type { AccountId } from "../kernel/Ids.ts"

/** The longest range a report or export covers: a leap year. */
export const MAX_USAGE_DAYS = 366

/** The label of the calls made without an agent (their key is NO_AGENT). */
export const NO_AGENT_LABEL = "no agent"

const DAY_MS = 86_400_000

export interface UsageRangeQuery {
  readonly from?: string | undefined
  readonly to?: string | undefined
  readonly month?: string | undefined
}

export interface UsageReportQuery extends UsageRangeQuery {
  readonly group_by?: UsageGroupBy | undefined
}

export interface UsageCsvQuery extends UsageReportQuery {
  readonly key?: string | undefined
  readonly service?: string | undefined
}

/** Whole UTC days [from, to], both YYYY-MM-DD. */
export interface UsageRange {
  readonly from: string
  readonly to: string
}

const dayMillis = (day: string) => Date.parse(`${day}T00:00:00.000Z`)
const dayText = (millis: number) => toTimestamp(millis).slice(0, 10)

const invalid = (field: string, message: string) => billingError("usage_range_invalid", `query field "${field}": ${message}`)

/**
 * The days a query asks for, given today's date (UTC). `month` alone is that calendar month;
 * otherwise `to` defaults to today and `from` to the first day of `to`'s month (of this month when
 * neither is given, as the spec says). Dates are already well formed (the API's schemas).
 */
export const usageRange = (query: UsageRangeQuery, today: string): Result.Result<UsageRange, BillingErrorOf<"usage_range_invalid">> => {
  if (query.month !== undefined) {
    if (query.from !== undefined || query.to !== undefined) {
      return Result.fail(invalid("month", "give either month or from/to, not both."))
    }
    const [year, month] = query.month.split("-").map(Number) as [number, number]
    return Result.succeed({ from: `${query.month}-01`, to: dayText(Date.UTC(year, month, 1) - DAY_MS) })
  }
  const to = query.to ?? today
  const from = query.from ?? `${to.slice(0, 7)}-01`
  if (from > to) return Result.fail(invalid("from", `${from} is after to (${to}).`))
  const days = (dayMillis(to) - dayMillis(from)) / DAY_MS + 1
  if (days > MAX_USAGE_DAYS) {
    return Result.fail(invalid("to", `${from} to ${to} is ${days} days; a report covers at most ${MAX_USAGE_DAYS} days.`))
  }
  return Result.succeed({ from, to })
}

/** One row of a report, labelled, amounts still micro-credits. */
export interface LabelledGroup extends UsageGroup {
  readonly label: string
}

/**
 * The order of a report's rows: by day, chronologically; by any other dimension, most charged
 * first (then most at list price, then by key), so the largest costs lead.
 */
export const reportOrder = (groupBy: UsageDimension) => (a: UsageGroup, b: UsageGroup): number => {
  if (groupBy !== "day") {
    if (a.credits !== b.credits) return a.credits > b.credits ? -1 : 1
    if (a.list_credits !== b.list_credits) return a.list_credits > b.list_credits ? -1 : 1
  }
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0
}

/** A report's file name: usage-<from>-<to>.csv, or usage-by-<group>-<from>-<to>.csv. */
export const usageCsvFilename = (range: UsageRange, groupBy: UsageGroupBy | undefined) =>
  `usage-${groupBy === undefined ? "" : `by-${groupBy}-`}${range.from}-${range.to}.csv`

export interface UsageCsvExport {
  readonly filename: string
  /** The file, header first, produced as it is read (a page of records at a time). */
  readonly body: Stream.Stream<string>
}

/** Builds the usage reports over the services (UsageStore, KeyStore for key names, the catalogue for service names). */
export const makeUsageReports = Effect.gen(function*() {
  const usage = yield* UsageStore
  const keys = yield* KeyStore
  const catalogue = yield* Catalogue
  const serviceNames = new Map(catalogue.config.prices.services.map((s) => [s.service, s.name]))

  const rangeOf = (query: UsageRangeQuery) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.fromResult(usageRange(query, dayText(now))))

  const labelled = Effect.fnUntraced(function*(accountId: AccountId, days: UsageDays, groupBy: UsageDimension) {
    const groups = [...(yield* usage.report(days, groupBy))].sort(reportOrder(groupBy))
    // Revoked keys keep their names: usage of a key revoked since is still theirs.
    const keyNames = groupBy === "key"
      ? new Map((yield* keys.list(accountId)).map((k) => [k.id, k.name]))
      : new Map<string, string>()
    const labelOf = (key: string): string => {
      switch (groupBy) {
        case "service":
          return serviceNames.get(key) ?? key
        case "key":
          return keyNames.get(key) ?? key
        case "agent":
          return key === NO_AGENT ? NO_AGENT_LABEL : key
        default:
          return key
      }
    }
    return groups.map((g): LabelledGroup => ({ ...g, label: labelOf(g.key) }))
  })

  const report = Effect.fn("Usage.report")(function*(caller: Caller, query: UsageReportQuery) {
    const range = yield* rangeOf(query)
    const groupBy = query.group_by ?? "day"
    const groups = yield* labelled(caller.account.id, { account_id: caller.account.id, ...range }, groupBy)
    return {
      from: range.from,
      to: range.to,
      group_by: groupBy,
      data: groups.map((g) => ({
        key: g.key,
        label: g.label,
        calls: Number(g.calls),
        list_credits: microToCredits(g.list_credits),
        credits: microToCredits(g.credits)
      }))
    } satisfies Usage
  })

  const csv = Effect.fn("Usage.csv")(function*(caller: Caller, query: UsageCsvQuery) {
    const range = yield* rangeOf(query)
    const accountId = caller.account.id
    const filename = usageCsvFilename(range, query.group_by)
    if (query.group_by !== undefined) {
      const days = { account_id: accountId, ...range, key_id: query.key, service: query.service }
      const groups = yield* labelled(accountId, days, query.group_by)
      return { filename, body: Stream.make(USAGE_GROUP_CSV_HEADER + groups.map(usageGroupLine).join("")) }
    }
    const records = usage.stream({
      account_id: accountId,
      from: `${range.from}T00:00:00.000Z`,
      to: toTimestamp(dayMillis(range.to) + DAY_MS),
      key_id: query.key,
      service: query.service
    })
    // One string per page of records: few, large writes. The next page is read and formatted while
    // one is written (at most two pages ahead: memory stays bounded).
    const lines = Stream.mapArray(records, (page) => [page.map(usageRecordLine).join("")] as const).pipe(
      Stream.bufferArray({ capacity: 2 })
    )
    return { filename, body: Stream.concat(Stream.make(USAGE_CSV_HEADER), lines) } satisfies UsageCsvExport
  })

  return { report, csv } as const
})

export type UsageReports = Effect.Success<typeof makeUsageReports>
