/**
 * The usage store port on Postgres (a real server or embedded PGlite). The table is created by the
 * `0004_usage_rate_limits` migration (./migrations.ts).
 *
 * - record: `INSERT ... ON CONFLICT (ref) DO NOTHING RETURNING ref`: the primary key keeps one
 *   record per ref, and a concurrent insert of the same ref waits on the index, then does nothing.
 * - list / spent: by (account_id, at) (or (account_id, key_id, at)) through their indexes; ties of
 *   `at` ordered by ref in byte order (COLLATE "C"), as every store orders them.
 *
 * - report: from usage_rollups (migration 0011_usage_rollups), which a trigger on usage_records
 *   keeps in the same transaction as each insert; one grouped read of the account's days.
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
  type UsageQuery,
  type UsageRecord,
  usageRecordProblem,
  UsageStore
} from "@model-platform/core/ports/UsageStore"

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

    /** The rollup column of each dimension; a day is grouped as a date, then written YYYY-MM-DD once per group. */
    const dimension: Record<UsageDimension, { readonly key: string; readonly column: string }> = {
      day: { key: "to_char(day, 'YYYY-MM-DD')", column: "day" },
      service: { key: "service", column: "service" },
      model: { key: "model", column: "model" },
      key: { key: "key_id", column: "key_id" },
      agent: { key: "agent_id", column: "agent_id" }
    }

    const report = (q: UsageDays, groupBy: UsageDimension) =>
      sql<GroupRow>`
        SELECT ${sql.literal(dimension[groupBy].key)} AS key, sum(calls)::text AS calls,
               sum(list_credits)::text AS list_credits, sum(credits)::text AS credits,
               sum(from_allowance)::text AS from_allowance, sum(from_trial)::text AS from_trial
        FROM usage_rollups
        WHERE ${
        sql.and([
          sql`account_id = ${q.account_id}`,
          sql`day >= ${q.from}::date`,
          sql`day <= ${q.to}::date`,
          ...(q.key_id === undefined ? [] : [sql`key_id = ${q.key_id}`]),
          ...(q.service === undefined ? [] : [sql`service = ${q.service}`])
        ])
      }
        GROUP BY ${sql.literal(dimension[groupBy].column)}`.pipe(
        Effect.map((rows) => rows.map(toGroup).sort(byGroupKey)),
        Effect.orDie,
        Effect.withSpan("UsageStore.report")
      )

    const page = (q: UsageQuery) => (after: UsageCursor | undefined, limit: number) =>
      sql<UsageRow>`
        SELECT ${columns} FROM usage_records
        WHERE ${
        after === undefined
          ? where(q)
          : sql.and([where(q), sql`(at, ref COLLATE "C") > (${after.at}::timestamptz, ${after.ref} COLLATE "C")`])
      }
        ORDER BY at, ref COLLATE "C"
        LIMIT ${limit}`.pipe(
        Effect.map((rows) => rows.map(toRecord)),
        Effect.orDie,
        Effect.withSpan("UsageStore.page")
      )

    const stream = (q: UsageQuery, options?: { readonly pageSize?: number | undefined }) =>
      pagedUsageStream(page(q), options?.pageSize)

    return UsageStore.of({ record, byRef, list, spent, report, stream })
  })
)
