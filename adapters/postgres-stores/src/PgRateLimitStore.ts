/**
 * The rate-limit store port on Postgres. The table is created by the `0004_usage_rate_limits`
 * migration (./migrations.ts): one row per (bucket, window start).
 *
 * A hit is ONE statement, `INSERT ... ON CONFLICT DO UPDATE SET count = count + 1 RETURNING count`:
 * the row lock serialises concurrent hits of one window (in any number of processes), so N hits
 * answer 1..N. Every PRUNE_EVERY hits of this process, windows that ended more than RETAIN_MS
 * before the window being hit are deleted (indexed by window_end; several processes pruning at
 * once delete disjoint or already-deleted rows, which is harmless).
 */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { hitProblem, RateLimitStore } from "@model-platform/core/kernel"

/** How long a counter is kept after its window ends. */
export const RETAIN_MS = 5 * 60_000
/** Hits of one process between two prunes. */
export const PRUNE_EVERY = 500

/**
 * Counts this process's hits and, every PRUNE_EVERY of them, deletes the windows that ended more
 * than RETAIN_MS before the window being hit (shared with PgGatewayStore's admissions).
 */
export const makePruner = (sql: SqlClient.SqlClient) => {
  let hits = 0
  return (windowStart: number): Effect.Effect<void> => {
    hits++
    return hits % PRUNE_EVERY === 0
      ? sql`DELETE FROM rate_limit_windows WHERE window_end < ${windowStart - RETAIN_MS}`.pipe(Effect.orDie, Effect.asVoid)
      : Effect.void
  }
}

export const RateLimitStorePg: Layer.Layer<RateLimitStore, never, SqlClient.SqlClient> = Layer.effect(
  RateLimitStore,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const pruneAfterHit = makePruner(sql)

    const hit = (bucket: string, windowStart: number, windowMs: number) => {
      const problem = hitProblem(bucket, windowStart, windowMs)
      if (problem !== undefined) return Effect.die(new Error(`RateLimitStore.hit: ${problem}`))
      return Effect.gen(function*() {
        const rows = yield* sql<{ readonly count: number }>`
          INSERT INTO rate_limit_windows (bucket, window_start, window_end, count)
          VALUES (${bucket}, ${windowStart}, ${windowStart + windowMs}, 1)
          ON CONFLICT (bucket, window_start) DO UPDATE SET count = rate_limit_windows.count + 1
          RETURNING count`.pipe(Effect.orDie)
        yield* pruneAfterHit(windowStart)
        return Number(rows[0]!.count)
      }).pipe(Effect.withSpan("RateLimitStore.hit"))
    }

    return RateLimitStore.of({ hit })
  })
)
