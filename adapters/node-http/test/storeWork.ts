/**
 * What PostgreSQL does for the platform, counted, never timed (docs/performance.md "The guard"):
 * - round trips: SQL statements the client sends (spans carrying `db.query.text`: a tracer);
 * - statements: what the server runs, those inside functions and triggers too (pg_stat_statements
 *   with `track = all`, when the server preloads it: scripts/ci-postgres.sh does; undefined when
 *   it does not), and how many of them it planned (`track_planning`);
 * - rows written: inserted, updated and deleted, by table, and rows read by sequential scans
 *   (pg_stat_user_tables, after asking the one connection to flush its counts).
 * For one database reached through ONE connection, so that every count is the platform's and the
 * flush covers all of it: `meteredDatabase` gives the client layer, `measure` the counts of an
 * effect. Deterministic for deterministic work; the gateway's cost guard (GatewayCost.test.ts)
 * compares them with recorded figures.
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted, Tracer } from "effect"
import { SqlClient } from "effect/sql"
import { migrate } from "@model-platform/postgres-stores"

export interface Work {
  readonly roundTrips: number
  /** Statements the server ran; undefined without pg_stat_statements. */
  readonly statements: number | undefined
  /**
   * Statements the server planned (a statement whose plan is kept is planned once per connection);
   * undefined without pg_stat_statements.
   */
  readonly plans: number | undefined
  /** Rows inserted, updated or deleted, by table (tables with none left out). */
  readonly rows: Readonly<Record<string, number>>
  readonly rowsTotal: number
  /**
   * Rows read by sequential scans, by table: work that grows with the table, not with the call
   * (an index lookup reads none).
   */
  readonly scanned: Readonly<Record<string, number>>
  readonly scannedTotal: number
}

/** Counts the SQL statements sent by everything under it. */
const countingTracer = () => {
  let sent = 0
  const tracer = Tracer.make({
    span(options) {
      const span = new Tracer.NativeSpan(options)
      const end = span.end.bind(span)
      span.end = (endTime, exit) => {
        end(endTime, exit)
        if (span.attributes.has("db.query.text")) sent++
      }
      return span
    }
  })
  return { tracer, sent: () => sent }
}

/**
 * The migrated database at `url` through one connection, with pg_stat_statements tracking every
 * statement when the server preloads it (`CREATE EXTENSION` and `ALTER DATABASE ... SET` need a
 * superuser, as the test clusters have). Provide `layer`; `tracer` goes under everything measured.
 */
export const meteredDatabase = async (url: string) => {
  const name = new URL(url).pathname.slice(1)
  const admin = PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })
  const tracked = await Effect.runPromise(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql<{ readonly libs: string }>`SELECT current_setting('shared_preload_libraries') AS libs`
    if (!row!.libs.split(",").map((l) => l.trim()).includes("pg_stat_statements")) return false
    yield* sql`CREATE EXTENSION IF NOT EXISTS pg_stat_statements`
    yield* sql.unsafe(`ALTER DATABASE "${name}" SET pg_stat_statements.track = 'all'`)
    yield* sql.unsafe(`ALTER DATABASE "${name}" SET pg_stat_statements.track_planning = on`)
    return true
  }).pipe(Effect.provide(admin), Effect.scoped))
  const client = PgClient.layer({ url: Redacted.make(url), maxConnections: 1, minConnections: 1 })
  const layer = Layer.effectDiscard(Effect.orDie(migrate)).pipe(Layer.provideMerge(client))
  const counter = countingTracer()

  type Snapshot = {
    readonly sent: number
    readonly statements: number | undefined
    readonly plans: number | undefined
    readonly rows: Map<string, number>
    readonly scanned: Map<string, number>
  }
  const stats = Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`SELECT pg_stat_force_next_flush()`
    const rows = yield* sql<{ readonly relname: string; readonly written: bigint | number; readonly scanned: bigint | number }>`
      SELECT relname, n_tup_ins + n_tup_upd + n_tup_del AS written, seq_tup_read AS scanned FROM pg_stat_user_tables`
    const counted = !tracked ? undefined : (yield* sql<{ readonly n: bigint | number; readonly plans: bigint | number }>`
      SELECT coalesce(sum(calls), 0) AS n, coalesce(sum(plans), 0) AS plans FROM pg_stat_statements
      WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND query NOT LIKE '%pg_stat%'`)[0]!
    return {
      statements: counted === undefined ? undefined : Number(counted.n),
      plans: counted === undefined ? undefined : Number(counted.plans),
      rows: new Map(rows.map((r) => [r.relname, Number(r.written)])),
      scanned: new Map(rows.map((r) => [r.relname, Number(r.scanned)]))
    }
  })

  /** The work `effect` made the database do, divided by `per` (the calls it made). */
  const measure = <A, E, R>(effect: Effect.Effect<A, E, R>, per = 1) =>
    Effect.gen(function*() {
      const s0 = yield* stats
      const before: Snapshot = { ...s0, sent: counter.sent() }
      const value = yield* effect
      const sent = counter.sent()
      const s1 = yield* stats
      const perTable = (after: Map<string, number>, earlier: Map<string, number>) => {
        const byTable: Record<string, number> = {}
        let total = 0
        for (const [table, n] of after) {
          const d = n - (earlier.get(table) ?? 0)
          if (d !== 0) byTable[table] = d / per
          total += d
        }
        return { byTable, total: total / per }
      }
      const written = perTable(s1.rows, before.rows)
      const scanned = perTable(s1.scanned, before.scanned)
      const work: Work = {
        roundTrips: (sent - before.sent) / per,
        statements: s1.statements === undefined || before.statements === undefined ? undefined : (s1.statements - before.statements) / per,
        plans: s1.plans === undefined || before.plans === undefined ? undefined : (s1.plans - before.plans) / per,
        rows: written.byTable,
        rowsTotal: written.total,
        scanned: scanned.byTable,
        scannedTotal: scanned.total
      }
      return { value, work }
    })

  return { layer, tracer: Layer.succeed(Tracer.Tracer, counter.tracer), tracked, measure }
}

/** One line of a Work, for logs and the bench. */
export const describeWork = (work: Work): string =>
  `${work.roundTrips} round trips, ${work.statements === undefined ? "? (no pg_stat_statements)" : work.statements} statements, ` +
  `${work.plans === undefined ? "?" : work.plans} planned, ` +
  `${work.rowsTotal} rows written (${byTable(work.rows)}), ${work.scannedTotal} rows read by sequential scans (${byTable(work.scanned)})`

const byTable = (counts: Readonly<Record<string, number>>) =>
  Object.entries(counts).sort(([a], [b]) => (a < b ? -1 : 1)).map(([t, n]) => `${t} ${n}`).join(", ")

/** Drops the database at `url` (made by freshDatabaseUrl) through the server at `serverUrl`. */
export const dropDatabase = (serverUrl: string, url: string | undefined) =>
  url === undefined ? Promise.resolve() : Effect.runPromise(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql.unsafe(`DROP DATABASE IF EXISTS "${new URL(url).pathname.slice(1)}" WITH (FORCE)`)
  }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(serverUrl) })), Effect.scoped))
