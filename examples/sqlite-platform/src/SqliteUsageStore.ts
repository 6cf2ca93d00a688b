/**
 * The usage store (`UsageStore` of @model-platform/core/billing) and the rate-limit counters
 * (`RateLimitStore` of @model-platform/core/kernel) on the shared SQLite connection
 * (SqliteDatabase.ts). The plain functions (`sqliteUsage`, `sqliteRateLimits`) are what the
 * gateway store runs inside its admission and its metering.
 *
 * Reports are `reportOf` over the records of the days asked (one indexed range read), not over
 * kept rollups as the platform's own stores do: enough for an app of this size, and the port's
 * answer all the same.
 */
import {
  pagedUsageStream,
  reportOf,
  type UsageCursor,
  type UsageQuery,
  type UsageRecord,
  usageRecordProblem,
  UsageStore
} from "@model-platform/core/billing"
import { hitProblem, markUnavailable, RateLimitStore, type Timestamp } from "@model-platform/core/kernel"
import { big, isBusy, type Row, type SqliteDatabase, text, textOrNull } from "./SqliteDatabase.ts"

export const USAGE_SCHEMA = `
CREATE TABLE IF NOT EXISTS usage_records (
  ref            TEXT PRIMARY KEY,
  account_id     TEXT NOT NULL,
  at             TEXT NOT NULL,
  key_id         TEXT NOT NULL,
  agent_id       TEXT,
  machine_id     TEXT NOT NULL,
  service        TEXT NOT NULL,
  model          TEXT NOT NULL,
  unit           TEXT NOT NULL,
  quantity       INTEGER NOT NULL,
  input_tokens   INTEGER NOT NULL,
  output_tokens  INTEGER NOT NULL,
  list_credits   INTEGER NOT NULL,
  credits        INTEGER NOT NULL,
  from_allowance INTEGER NOT NULL,
  from_trial     INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS usage_records_account ON usage_records (account_id, at, ref);
CREATE TABLE IF NOT EXISTS rate_counters (
  bucket       TEXT NOT NULL,
  window_start INTEGER NOT NULL,
  window_end   INTEGER NOT NULL,
  count        INTEGER NOT NULL,
  PRIMARY KEY (bucket, window_start)
);
`

const recordOf = (row: Row): UsageRecord => ({
  ref: text(row, "ref"),
  account_id: text(row, "account_id"),
  at: text(row, "at") as Timestamp,
  key_id: text(row, "key_id"),
  agent_id: textOrNull(row, "agent_id"),
  machine_id: text(row, "machine_id"),
  service: text(row, "service"),
  model: text(row, "model"),
  unit: text(row, "unit"),
  quantity: big(row, "quantity"),
  input_tokens: big(row, "input_tokens"),
  output_tokens: big(row, "output_tokens"),
  list_credits: big(row, "list_credits"),
  credits: big(row, "credits"),
  from_allowance: big(row, "from_allowance"),
  from_trial: big(row, "from_trial")
})

/** The WHERE clause of a query and its parameters. */
const matching = (query: UsageQuery): readonly [string, Array<string>] => {
  let where = "account_id = ? AND at >= ? AND at < ?"
  const params = [query.account_id, query.from, query.to]
  if (query.key_id !== undefined) {
    where += " AND key_id = ?"
    params.push(query.key_id)
  }
  if (query.service !== undefined) {
    where += " AND service = ?"
    params.push(query.service)
  }
  return [where, params]
}

/** The usage records on `db`, as plain functions. */
export const sqliteUsage = (db: SqliteDatabase) => ({
  /** Once per ref; a record breaking the port's rules throws (a defect, the transaction rolled back). */
  record: (record: UsageRecord): "Recorded" | "Duplicate" => {
    const problem = usageRecordProblem(record)
    if (problem !== undefined) throw new Error(`UsageStore.record: ${problem}`)
    if (db.one("SELECT 1 FROM usage_records WHERE ref = ?", record.ref) !== undefined) return "Duplicate"
    db.run(
      `INSERT INTO usage_records (ref, account_id, at, key_id, agent_id, machine_id, service, model, unit, quantity,
         input_tokens, output_tokens, list_credits, credits, from_allowance, from_trial)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      record.ref,
      record.account_id,
      record.at,
      record.key_id,
      record.agent_id,
      record.machine_id,
      record.service,
      record.model,
      record.unit,
      record.quantity,
      record.input_tokens,
      record.output_tokens,
      record.list_credits,
      record.credits,
      record.from_allowance,
      record.from_trial
    )
    return "Recorded"
  }
})

/** How long a rate counter is kept after its window ended (as the memory store keeps them). */
const RETAIN_MS = 5 * 60_000

/** The rate-limit counters on `db`, as plain functions. */
export const sqliteRateLimits = (db: SqliteDatabase) => ({
  /** Counts one hit; the bucket's windows that ended RETAIN_MS ago are dropped meanwhile. */
  hit: (bucket: string, windowStart: number, windowMs: number): number => {
    const problem = hitProblem(bucket, windowStart, windowMs)
    if (problem !== undefined) throw new Error(`RateLimitStore.hit: ${problem}`)
    db.run("DELETE FROM rate_counters WHERE bucket = ? AND window_end < ?", bucket, Date.now() - RETAIN_MS)
    const row = db.one(
      `INSERT INTO rate_counters (bucket, window_start, window_end, count) VALUES (?, ?, ?, 1)
       ON CONFLICT (bucket, window_start) DO UPDATE SET count = count + 1 RETURNING count`,
      bucket,
      windowStart,
      windowStart + windowMs
    )
    return Number(big(row!, "count"))
  }
})

export const rateLimitStoreOn = (db: SqliteDatabase): RateLimitStore["Service"] => {
  const counters = sqliteRateLimits(db)
  return RateLimitStore.of(markUnavailable("RateLimitStore", {
    hit: (bucket, windowStart, windowMs) => db.atomically("RateLimitStore.hit", () => counters.hit(bucket, windowStart, windowMs))
  }, isBusy))
}

export const usageStoreOn = (db: SqliteDatabase): UsageStore["Service"] => {
  const usage = sqliteUsage(db)
  const list = (query: UsageQuery) => {
    const [where, params] = matching(query)
    return db.all(`SELECT * FROM usage_records WHERE ${where} ORDER BY at, ref`, ...params).map(recordOf)
  }
  const page = (query: UsageQuery) => (after: UsageCursor | undefined, limit: number) =>
    db.read(() => {
      const [where, params] = matching(query)
      const [cursor, cursorParams] = after === undefined ? ["", []] : [" AND (at > ? OR (at = ? AND ref > ?))", [after.at, after.at, after.ref]]
      return db.all(`SELECT * FROM usage_records WHERE ${where}${cursor} ORDER BY at, ref LIMIT ?`, ...params, ...cursorParams, BigInt(limit))
        .map(recordOf)
    })
  return UsageStore.of(markUnavailable("UsageStore", {
    record: (record) => db.atomically("UsageStore.record", () => usage.record(record)),
    byRef: (ref) =>
      db.read(() => {
        const row = db.one("SELECT * FROM usage_records WHERE ref = ?", ref)
        return row === undefined ? undefined : recordOf(row)
      }),
    list: (query) => db.read(() => list(query)),
    // Summed here, not by SQLite: its SUM stops at 2^63 (an integer overflow), a bigint does not.
    spent: (query) =>
      db.read(() => {
        const [where, params] = matching(query)
        return db.all(`SELECT credits FROM usage_records WHERE ${where}`, ...params).reduce((sum, row) => sum + big(row, "credits"), 0n)
      }),
    report: (query, groupBy) =>
      db.read(() => {
        // Whole UTC days [from, to]: every `at` from the first day's start to the last day's end.
        const records = db.all(
          "SELECT * FROM usage_records WHERE account_id = ? AND at >= ? AND at < ?",
          query.account_id,
          `${query.from}T00:00:00.000Z`,
          `${query.to}T99`
        ).map(recordOf)
        return reportOf(records, query, groupBy)
      }),
    stream: (query, options) => pagedUsageStream(page(query), options?.pageSize)
  }, isBusy))
}
