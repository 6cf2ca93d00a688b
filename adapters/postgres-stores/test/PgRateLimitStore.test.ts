/**
 * The rate-limit store contract on Postgres: embedded PGlite in memory, and a real PostgreSQL
 * server when TEST_DATABASE_URL is set (there concurrent hits race on one row across a pool of
 * connections). Then what only this store does: old windows are pruned.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { generateId, RateLimitStore, windowStartOf } from "@model-platform/core/kernel"
import { rateLimitStoreContract } from "@model-platform/contract-kit/RateLimitContract"
import * as Database from "../src/database/Database.ts"
import { PRUNE_EVERY, RateLimitStorePg, RETAIN_MS } from "../src/PgRateLimitStore.ts"

const store = (options: Database.Options) => RateLimitStorePg.pipe(Layer.provide(Database.layer(options)))

rateLimitStoreContract("RateLimitStorePg on in-memory PGlite", store({ dataDir: Database.MEMORY }))

const databaseUrl = process.env["TEST_DATABASE_URL"]
describe.skipIf(databaseUrl === undefined)("RateLimitStorePg on PostgreSQL (TEST_DATABASE_URL)", () => {
  if (databaseUrl !== undefined) rateLimitStoreContract("contract", store({ databaseUrl, dataDir: "unused" }))
  else it.skip("set TEST_DATABASE_URL=postgres://... to run the contract on a PostgreSQL server", () => {})
})

const WithSql = RateLimitStorePg.pipe(Layer.provideMerge(Database.layer({ dataDir: Database.MEMORY })))

layer(WithSql, { excludeTestServices: true, timeout: "60 seconds" })("RateLimitStorePg pruning", (it) => {
  it.effect("windows that ended more than RETAIN_MS ago are deleted now and then; current ones stay", () =>
    Effect.gen(function*() {
      const store = yield* RateLimitStore
      const sql = yield* SqlClient.SqlClient
      const now = windowStartOf(Date.now(), 60_000)
      const old = yield* generateId("key")
      const current = yield* generateId("key")
      assert.strictEqual(yield* store.hit(old, now - RETAIN_MS - 120_000, 60_000), 1)
      assert.strictEqual(yield* store.hit(current, now, 60_000), 1)
      for (let i = 0; i < PRUNE_EVERY; i++) yield* store.hit(current, now, 60_000)
      const rows = yield* sql<{ readonly bucket: string }>`
        SELECT bucket FROM rate_limit_windows WHERE bucket IN (${old}, ${current})`
      assert.deepStrictEqual(rows.map((r) => r.bucket), [current])
      assert.strictEqual(yield* store.hit(current, now, 60_000), PRUNE_EVERY + 2)
    }), 60_000)
})
