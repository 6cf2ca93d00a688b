/**
 * The agent store port (core/src/ports/AgentStore.ts) on Postgres (a real server or embedded
 * PGlite). The table comes from the `0020_agents` migration (./migrations/0020_agents.ts): a row
 * holds the record's encoded form (`encodeAgent`) as jsonb beside the columns it is looked up by
 * (id, account_id, created_at, version), all copied from the record on every write.
 *
 * How the port's rules hold:
 * - insert: `agentProblem(record, "insert")` is checked before any SQL (a defect); then one
 *   `INSERT ... ON CONFLICT (id) DO NOTHING RETURNING id`: no row back is a duplicate id, a defect.
 *   The CHECKs of the migration (non-empty ids, version >= 0) hold it too.
 * - get / list: reads; every stored record goes through `decodeAgent`, and one that does not
 *   decode is a defect. `list` is newest first, then by id under the "C" collation: byte order,
 *   which for the ids' characters is core's `newestFirst` (JS string order); the index
 *   `agents_newest` is in that order.
 * - swap: `agentProblem(next, "swap")` first, then ONE conditional statement,
 *   `UPDATE ... WHERE id = $id AND version = $next.version - 1 AND account_id = $account`, which
 *   answers whether it updated a row. Under READ COMMITTED a concurrent swap of the same row waits
 *   for the first to commit and then re-checks the WHERE against the row as the first left it
 *   (version already moved), so of several swaps from one version exactly one wins, across
 *   connections and processes.
 * - created_at: the record keeps its own ISO string (exact to the millisecond) in the jsonb, and
 *   that is what is read back; the column is `${created_at}::timestamptz` (microseconds), only
 *   for ordering, so equal instants compare equal and the order is that of the instants.
 * Database failures are defects (`Effect.orDie`), as in every Pg store; PgUnavailable.ts marks
 * those that mean the database cannot be reached.
 */
import { type AgentRecord, decodeAgent, encodeAgent } from "@model-platform/core/agents/Records"
import { agentProblem, AgentStore } from "@model-platform/core/ports/AgentStore"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"

interface AgentRow {
  readonly record: unknown
}

/** jsonb comes back parsed from the pg driver and PGlite; as text from anything else. */
const parsed = (value: unknown): unknown => (typeof value === "string" ? JSON.parse(value) : value)

const decoded = (row: AgentRow): Effect.Effect<AgentRecord> =>
  Effect.suspend(() => {
    const record = decodeAgent(parsed(row.record))
    return record === undefined
      ? Effect.die(new Error("AgentStore: a stored agent does not decode"))
      : Effect.succeed(record)
  })

export const AgentStorePg: Layer.Layer<AgentStore, never, SqlClient.SqlClient> = Layer.effect(
  AgentStore,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const insert = (record: AgentRecord) =>
      Effect.suspend(() => {
        const problem = agentProblem(record, "insert")
        if (problem !== undefined) return Effect.die(new Error(`AgentStore.insert: ${problem}`))
        const encoded = JSON.stringify(encodeAgent(record))
        return sql<{ readonly id: string }>`
          INSERT INTO agents (id, account_id, created_at, version, record)
          VALUES (${record.id}, ${record.account_id}, ${record.created_at}::timestamptz, ${record.version},
                  ${encoded}::jsonb)
          ON CONFLICT (id) DO NOTHING
          RETURNING id`.pipe(
          Effect.orDie,
          Effect.flatMap((rows) =>
            rows.length > 0 ? Effect.void : Effect.die(new Error(`AgentStore.insert: duplicate id ${record.id}`))
          )
        )
      }).pipe(Effect.withSpan("AgentStore.insert"))

    const get = (id: string) =>
      sql<AgentRow>`SELECT record FROM agents WHERE id = ${id}`.pipe(
        Effect.orDie,
        Effect.flatMap((rows) => (rows[0] === undefined ? Effect.succeed(undefined) : decoded(rows[0]))),
        Effect.withSpan("AgentStore.get")
      )

    const list = (accountId: string) =>
      sql<AgentRow>`
        SELECT record FROM agents WHERE account_id = ${accountId}
        ORDER BY created_at DESC, id COLLATE "C"`.pipe(
        Effect.orDie,
        Effect.flatMap((rows) => Effect.forEach(rows, decoded)),
        Effect.withSpan("AgentStore.list")
      )

    const swap = (next: AgentRecord) =>
      Effect.suspend(() => {
        const problem = agentProblem(next, "swap")
        if (problem !== undefined) return Effect.die(new Error(`AgentStore.swap: ${problem}`))
        const encoded = JSON.stringify(encodeAgent(next))
        return sql<{ readonly id: string }>`
          UPDATE agents
          SET record = ${encoded}::jsonb, version = ${next.version}, created_at = ${next.created_at}::timestamptz
          WHERE id = ${next.id} AND version = ${next.version - 1} AND account_id = ${next.account_id}
          RETURNING id`.pipe(
          Effect.orDie,
          Effect.map((rows) => rows.length > 0)
        )
      }).pipe(Effect.withSpan("AgentStore.swap"))

    return AgentStore.of({ insert, get, list, swap })
  })
)
