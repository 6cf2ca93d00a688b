/**
 * The PostgreSQL and DynamoDB stores as a project outside the workspace gets them, from their
 * packed tarballs (devDependencies here: this app keeps its own stores on SQLite). Every store port
 * on PGlite embedded in this process, migrated by the package, keeps a credit; the DynamoDB stores
 * on an endpoint nothing listens on answer core's StoreUnavailable (an outage), not a defect.
 */
import { assert, it } from "@effect/vitest"
import { Cause, Effect, Exit, Layer } from "effect"
import type { SqlClient } from "effect/sql"
import type { PlatformStores } from "@model-platform/core/http"
import { isStoreUnavailableCause, toTimestamp } from "@model-platform/core/kernel"
import { LedgerStore } from "@model-platform/core/ledger"
import { DynamoConfig, DynamoPlatformStores, makeDocumentClient } from "@model-platform/dynamodb-stores"
import { PgPlatformStores } from "@model-platform/postgres-stores"
import { Database } from "@model-platform/postgres-stores/database"

// What the packed declarations promise: every store port, given the database's client or the table.
const postgresStores: Layer.Layer<PlatformStores, never, SqlClient.SqlClient> = PgPlatformStores
const dynamoStores: Layer.Layer<PlatformStores, never, DynamoConfig> = DynamoPlatformStores

const credit = {
  id: "led_1", account_id: "acct_1", machine_id: null, amount: 5_000_000n,
  type: "credit_added" as const, ref: "order_1", created_at: toTimestamp(Date.UTC(2026, 0, 1))
}

it.effect("every store port on embedded PGlite (migrated by the package): a credit is kept once", () =>
  Effect.gen(function*() {
    const ledger = yield* LedgerStore
    assert.strictEqual(yield* ledger.post(credit), "posted")
    assert.strictEqual(yield* ledger.post(credit), "duplicate")
    assert.deepStrictEqual(yield* ledger.balances("acct_1"), [{ machine_id: null, posted: 5_000_000n, held: 0n }])
  }).pipe(Effect.provide(postgresStores.pipe(Layer.provide(Database.layer({ dataDir: Database.MEMORY }))))), 60_000)

it.effect("the DynamoDB stores on an unreachable endpoint die with StoreUnavailable", () =>
  Effect.gen(function*() {
    // Nothing listens on port 1; one attempt, so the test does not wait for the SDK's backoff.
    const client = makeDocumentClient({
      endpoint: "http://127.0.0.1:1", region: "local", maxAttempts: 1,
      credentials: { accessKeyId: "local", secretAccessKey: "local" }
    })
    const exit = yield* Effect.exit(Effect.flatMap(LedgerStore, (ledger) => ledger.balances("acct_1")).pipe(
      Effect.provide(dynamoStores.pipe(Layer.provide(DynamoConfig.layer({ tableName: "unreachable", client }))))
    ))
    client.destroy()
    assert.isTrue(Exit.isFailure(exit) && isStoreUnavailableCause(exit.cause), `got ${Exit.isFailure(exit) ? Cause.pretty(exit.cause) : "success"}`)
  }))
