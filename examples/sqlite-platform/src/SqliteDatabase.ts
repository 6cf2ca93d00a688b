/**
 * One `node:sqlite` connection shared by the example's stores (the ledger, accounts and keys, rate
 * limits, usage records and the gateway's steps over them), so that one transaction can span them.
 *
 * Atomicity: `transaction` runs its function inside `BEGIN IMMEDIATE` (SQLite's write lock, so it
 * is atomic between processes too), and `DatabaseSync` runs it to the end without yielding, so no
 * other fiber of this process sees it half done. A transaction asked for inside one joins it: the
 * gateway's admission calls the ledger's reserve inside its own transaction. A throw rolls the
 * whole transaction back and becomes the effect's defect, which is what the ports ask (store
 * failures are defects).
 *
 * Unavailability: a write waits up to `busyTimeoutMs` for another connection's write lock; past
 * that SQLite answers SQLITE_BUSY, which the stores' `markUnavailable` (with `isBusy`) turns into
 * core's `StoreUnavailable` (the platform answers 503 and retries metering later) rather than a bug.
 */
import { DatabaseSync, type SQLInputValue } from "node:sqlite"
import { Effect } from "effect"

export type Row = Record<string, unknown>
type Param = SQLInputValue

export const text = (row: Row, column: string): string => row[column] as string
export const textOrNull = (row: Row, column: string): string | null => (row[column] ?? null) as string | null
export const big = (row: Row, column: string): bigint => row[column] as bigint
export const bigOrNull = (row: Row, column: string): bigint | null => (row[column] ?? null) as bigint | null

/** SQLITE_BUSY and SQLITE_LOCKED (node:sqlite's `errcode`, the primary code in the low byte). */
export const isBusy = (defect: unknown): boolean => {
  const code = (defect as { errcode?: unknown } | null)?.errcode
  return typeof code === "number" && ((code & 0xff) === 5 || (code & 0xff) === 6)
}

export interface SqliteOptions {
  /** How long a write waits for another connection's lock before the store is unavailable. */
  readonly busyTimeoutMs?: number
}

export interface SqliteDatabase {
  readonly all: (query: string, ...params: Array<Param>) => Array<Row>
  readonly one: (query: string, ...params: Array<Param>) => Row | undefined
  readonly run: (query: string, ...params: Array<Param>) => void
  /** `f` in one write transaction (or in the one already open); a throw rolls it back. */
  readonly transaction: <A>(f: () => A) => A
  /** `transaction(f)` as an effect named `name` (its span). */
  readonly atomically: <A>(name: string, f: () => A) => Effect.Effect<A>
  /** A read as an effect. */
  readonly read: <A>(f: () => A) => Effect.Effect<A>
}

/**
 * The database at `path` (":memory:" for one that lives as long as the scope), with `schemas`
 * created when missing; closed when the scope ends.
 */
export const openDatabase = (path: string, schemas: ReadonlyArray<string>, options: SqliteOptions = {}) =>
  Effect.gen(function*() {
    const db = yield* Effect.acquireRelease(
      Effect.sync(() => new DatabaseSync(path)),
      (db) => Effect.sync(() => db.close())
    )
    db.exec(`PRAGMA busy_timeout = ${options.busyTimeoutMs ?? 5000}`)
    if (path !== ":memory:") db.exec("PRAGMA journal_mode = WAL")
    for (const schema of schemas) db.exec(schema)

    const statements = new Map<string, ReturnType<DatabaseSync["prepare"]>>()
    const sql = (query: string) => {
      let statement = statements.get(query)
      if (statement === undefined) {
        statement = db.prepare(query)
        statement.setReadBigInts(true)
        statements.set(query, statement)
      }
      return statement
    }
    const transaction = <A>(f: () => A): A => {
      if (db.isTransaction) return f()
      db.exec("BEGIN IMMEDIATE")
      try {
        const result = f()
        db.exec("COMMIT")
        return result
      } catch (error) {
        if (db.isTransaction) db.exec("ROLLBACK")
        throw error
      }
    }
    const database: SqliteDatabase = {
      all: (query, ...params) => sql(query).all(...params) as Array<Row>,
      one: (query, ...params) => sql(query).get(...params) as Row | undefined,
      run: (query, ...params) => void sql(query).run(...params),
      transaction,
      atomically: (name, f) => Effect.sync(() => transaction(f)).pipe(Effect.withSpan(name)),
      read: (f) => Effect.sync(f)
    }
    return database
  })
