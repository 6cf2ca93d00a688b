/**
 * The usage store port on Postgres (a real server or embedded PGlite). The table is created by the
 * `0004_usage_rate_limits` migration (./migrations.ts).
 *
 * - record: `INSERT ... ON CONFLICT (ref) DO NOTHING RETURNING ref`: the primary key keeps one
 *   record per ref, and a concurrent insert of the same ref waits on the index, then does nothing.
 * - list / spent: by (account_id, at) (or (account_id, key_id, at)) through their indexes; ties of
 *   `at` ordered by ref in byte order (COLLATE "C"), as every store orders them.
 *
 * - report: from the rollups, which a trigger on usage_records keeps in the same transaction as
 *   each insert (migrations 0011_usage_rollups, 0015_usage_rollup_levels): by day from the day
 *   totals (the daily rollups when filtered by key or service); by another dimension, whole
 *   calendar months from the monthly rollups and the days at the range's ends from the daily ones.
 * - stream: keyset pages `(at, ref COLLATE "C") > (cursor)` in the order of the index
 *   (account_id, at, ref COLLATE "C"), `LIMIT pageSize`: each page is one short query (no cursor
 *   holds a connection between pages, which matters on the one-connection PGlite).
 *
 * Amounts are int8 columns (bigint through @effect/sql-pg); `sum(int8)` and the rollups' sums are
 * numeric in Postgres, so sums are read back as text and parsed as bigints: exact beyond 2^63.
 */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import {
  byGroupKey,
  pagedUsageStream,
  type UsageCursor,
  type UsageDays,
  type UsageDimension,
  type UsageGroup,
  type UsageLine,
  type UsageQuery,
  type UsageRecord,
  usageRecordProblem,
  UsageStore
} from "@model-platform/core/billing"

interface UsageRow {
  readonly ref: string
  readonly account_id: string
  readonly at: Date
  readonly key_id: string
  readonly agent_id: string | null
  readonly machine_id: string
  readonly service: string
  readonly model: string
  readonly unit: string
  readonly quantity: bigint
  readonly input_tokens: bigint
  readonly output_tokens: bigint
  readonly list_credits: bigint
  readonly credits: bigint
  readonly from_allowance: bigint
  readonly from_trial: bigint
}

/** A row of `stream`: the CSV's columns only (fewer values for the driver to decode). */
type LineRow = Omit<UsageRow, "account_id" | "machine_id" | "input_tokens" | "output_tokens">

const toLine = (row: LineRow): UsageLine => ({
  ref: row.ref,
  at: row.at.toISOString(),
  key_id: row.key_id,
  agent_id: row.agent_id,
  service: row.service,
  model: row.model,
  unit: row.unit,
  quantity: BigInt(row.quantity),
  list_credits: BigInt(row.list_credits),
  credits: BigInt(row.credits),
  from_allowance: BigInt(row.from_allowance),
  from_trial: BigInt(row.from_trial)
})

const toRecord = (row: UsageRow): UsageRecord => ({
  ref: row.ref,
  account_id: row.account_id,
  at: row.at.toISOString(),
  key_id: row.key_id,
  agent_id: row.agent_id,
  machine_id: row.machine_id,
  service: row.service,
  model: row.model,
  unit: row.unit,
  quantity: BigInt(row.quantity),
  input_tokens: BigInt(row.input_tokens),
  output_tokens: BigInt(row.output_tokens),
  list_credits: BigInt(row.list_credits),
  credits: BigInt(row.credits),
  from_allowance: BigInt(row.from_allowance),
  from_trial: BigInt(row.from_trial)
})

interface GroupRow {
  readonly key: string
  readonly calls: string
  readonly list_credits: string
  readonly credits: string
  readonly from_allowance: string
  readonly from_trial: string
}

const toGroup = (row: GroupRow): UsageGroup => ({
  key: row.key,
  calls: BigInt(row.calls),
  list_credits: BigInt(row.list_credits),
  credits: BigInt(row.credits),
  from_allowance: BigInt(row.from_allowance),
  from_trial: BigInt(row.from_trial)
})

/** Days [from, to], YYYY-MM-DD, both included. */
type DayRange = readonly [string, string]

const DAY_MS = 86_400_000
const dayAt = (millis: number) => new Date(millis).toISOString().slice(0, 10)
const millisOf = (day: string) => Date.parse(`${day}T00:00:00.000Z`)

/**
 * The whole calendar months within [from, to] (their first days, first and last) and the days of
 * the range outside them (at most two runs, at its ends).
 */
export const splitByMonths = (
  from: string,
  to: string
): { readonly months: DayRange | undefined; readonly days: ReadonlyArray<DayRange> } => {
  const f = new Date(millisOf(from))
  const t = new Date(millisOf(to))
  // The first month starting on or after `from`; the last month ending on or before `to`.
  const first = from.endsWith("-01") ? from : dayAt(Date.UTC(f.getUTCFullYear(), f.getUTCMonth() + 1, 1))
  const lastEnd = dayAt(Date.UTC(t.getUTCFullYear(), t.getUTCMonth() + 1, 1) - DAY_MS) === to
    ? to
    : dayAt(Date.UTC(t.getUTCFullYear(), t.getUTCMonth(), 1) - DAY_MS)
  if (first > lastEnd) return { months: undefined, days: [[from, to]] }
  const days: Array<DayRange> = []
  if (from < first) days.push([from, dayAt(millisOf(first) - DAY_MS)])
  if (lastEnd < to) days.push([dayAt(millisOf(lastEnd) + DAY_MS), to])
  return { months: [first, `${lastEnd.slice(0, 7)}-01`], days }
}

export const UsageStorePg: Layer.Layer<UsageStore, never, SqlClient.SqlClient> = Layer.effect(
  UsageStore,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const columns = sql.literal(
      "ref, account_id, at, key_id, agent_id, machine_id, service, model, unit, quantity, input_tokens, " +
        "output_tokens, list_credits, credits, from_allowance, from_trial"
    )

    const record = (r: UsageRecord) => {
      const problem = usageRecordProblem(r)
      if (problem !== undefined) return Effect.die(new Error(`UsageStore.record: ${problem}`))
      return sql`
        INSERT INTO usage_records (${columns})
        VALUES (${r.ref}, ${r.account_id}, ${r.at}, ${r.key_id}, ${r.agent_id}, ${r.machine_id}, ${r.service},
                ${r.model}, ${r.unit}, ${r.quantity}, ${r.input_tokens}, ${r.output_tokens}, ${r.list_credits},
                ${r.credits}, ${r.from_allowance}, ${r.from_trial})
        ON CONFLICT (ref) DO NOTHING
        RETURNING ref`.pipe(
        Effect.map((rows) => rows.length === 0 ? "Duplicate" as const : "Recorded" as const),
        Effect.orDie,
        Effect.withSpan("UsageStore.record")
      )
    }

    const byRef = (ref: string) =>
      sql<UsageRow>`SELECT ${columns} FROM usage_records WHERE ref = ${ref}`.pipe(
        Effect.map((rows) => rows[0] === undefined ? undefined : toRecord(rows[0])),
        Effect.orDie
      )

    const where = (q: UsageQuery) =>
      sql.and([
        sql`account_id = ${q.account_id}`,
        sql`at >= ${q.from}::timestamptz`,
        sql`at < ${q.to}::timestamptz`,
        ...(q.key_id === undefined ? [] : [sql`key_id = ${q.key_id}`]),
        ...(q.service === undefined ? [] : [sql`service = ${q.service}`])
      ])

    const list = (q: UsageQuery) =>
      sql<UsageRow>`SELECT ${columns} FROM usage_records WHERE ${where(q)} ORDER BY at, ref COLLATE "C"`.pipe(
        Effect.map((rows) => rows.map(toRecord)),
        Effect.orDie,
        Effect.withSpan("UsageStore.list")
      )

    const spent = (q: UsageQuery) =>
      sql<{ readonly spent: string }>`
        SELECT COALESCE(sum(credits), 0)::text AS spent FROM usage_records WHERE ${where(q)}`.pipe(
        Effect.map((rows) => BigInt(rows[0]?.spent ?? "0")),
        Effect.orDie,
        Effect.withSpan("UsageStore.spent")
      )

    const totals = sql.literal(
      "sum(calls)::text AS calls, sum(list_credits)::text AS list_credits, sum(credits)::text AS credits, " +
        "sum(from_allowance)::text AS from_allowance, sum(from_trial)::text AS from_trial"
    )
    const measures = sql.literal("calls, list_credits, credits, from_allowance, from_trial")
    const filters = (q: UsageDays) => [
      sql`account_id = ${q.account_id}`,
      ...(q.key_id === undefined ? [] : [sql`key_id = ${q.key_id}`]),
      ...(q.service === undefined ? [] : [sql`service = ${q.service}`])
    ]
    const dayIn = ([from, to]: DayRange) => sql`(day >= ${from}::date AND day <= ${to}::date)`

    /** A day's text, written once per day; the other dimensions are columns of the rollups. */
    const column: Record<Exclude<UsageDimension, "day">, string> = {
      service: "service",
      model: "model",
      key: "key_id",
      agent: "agent_id"
    }

    const byDay = (q: UsageDays) =>
      q.key_id === undefined && q.service === undefined
        ? sql<GroupRow>`
          SELECT to_char(day, 'YYYY-MM-DD') AS key, ${totals} FROM usage_day_totals
          WHERE ${sql.and([sql`account_id = ${q.account_id}`, dayIn([q.from, q.to])])} GROUP BY day`
        : sql<GroupRow>`
          SELECT to_char(day, 'YYYY-MM-DD') AS key, ${totals} FROM usage_rollups
          WHERE ${sql.and([...filters(q), dayIn([q.from, q.to])])} GROUP BY day`

    /** Whole months from the monthly rollups, the days at the ends from the daily ones. */
    const byColumn = (q: UsageDays, name: string) => {
      const { months, days } = splitByMonths(q.from, q.to)
      const dim = sql.literal(name)
      const daily = days.length === 0
        ? []
        : [sql`SELECT ${dim} AS key, ${measures} FROM usage_rollups WHERE ${sql.and([...filters(q), sql.or(days.map(dayIn))])}`]
      const monthly = months === undefined ? [] : [sql`
        SELECT ${dim} AS key, ${measures} FROM usage_rollups_monthly
        WHERE ${sql.and([...filters(q), sql`month >= ${months[0]}::date AND month <= ${months[1]}::date`])}`]
      const parts = [...monthly, ...daily]
      return sql<GroupRow>`SELECT key, ${totals} FROM (${sql.join(" UNION ALL ", false)(parts)}) AS u GROUP BY key`
    }

    const report = (q: UsageDays, groupBy: UsageDimension): Effect.Effect<ReadonlyArray<UsageGroup>> => {
      if (q.from > q.to) return Effect.succeed([])
      const rows = groupBy === "day" ? byDay(q) : byColumn(q, column[groupBy])
      return rows.pipe(
        Effect.map((groups) => groups.map(toGroup).sort(byGroupKey)),
        Effect.orDie,
        Effect.withSpan("UsageStore.report")
      )
    }

    const lineColumns = sql.literal(
      "ref, at, key_id, agent_id, service, model, unit, quantity, list_credits, credits, from_allowance, from_trial"
    )

    const page = (q: UsageQuery) => (after: UsageCursor | undefined, limit: number) =>
      sql<LineRow>`
        SELECT ${lineColumns} FROM usage_records
        WHERE ${
        after === undefined
          ? where(q)
          : sql.and([where(q), sql`(at, ref COLLATE "C") > (${after.at}::timestamptz, ${after.ref} COLLATE "C")`])
      }
        ORDER BY at, ref COLLATE "C"
        LIMIT ${limit}`.pipe(
        Effect.map((rows) => rows.map(toLine)),
        Effect.orDie,
        Effect.withSpan("UsageStore.page")
      )

    const stream = (q: UsageQuery, options?: { readonly pageSize?: number | undefined }) =>
      pagedUsageStream(page(q), options?.pageSize)

    return UsageStore.of({ record, byRef, list, spent, report, stream })
  })
)
