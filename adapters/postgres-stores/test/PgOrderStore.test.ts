/**
 * The order store contract on Postgres: embedded PGlite in memory, and a real PostgreSQL server
 * when TEST_DATABASE_URL is set (there the concurrency tests exercise real row locks and unique
 * indexes across a pool of connections). Also what only Postgres can be given: details that do not
 * fit OrderDetails are refused when written, a row whose details JSON has another shape is a
 * defect when read, never an OrderRecord, and receipts written before migration 0025 keep counting
 * toward the tier as they did.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Redacted } from "effect"
import { Migrator, SqlClient } from "effect/sql"
import { generateId } from "@model-platform/core/kernel"
import { type OrderRecord, OrderStore } from "@model-platform/core/payments"
import { type OrderDetails } from "@model-platform/core/plans"
import { assertDies } from "@model-platform/contract-kit/ContractSupport"
import { orderStoreContract } from "@model-platform/contract-kit/OrderContract"
import * as Database from "../src/database/Database.ts"
import { migrate, migrations } from "../src/migrations.ts"
import { OrderStorePg } from "../src/PgOrderStore.ts"
import { freshDatabaseUrl } from "./freshDatabase.ts"

const store = (options: Database.Options) => OrderStorePg.pipe(Layer.provide(Database.layer(options)))

orderStoreContract("OrderStorePg on in-memory PGlite", store({ dataDir: Database.MEMORY }))

const databaseUrl = process.env["TEST_DATABASE_URL"]
describe.skipIf(databaseUrl === undefined)("OrderStorePg on PostgreSQL (TEST_DATABASE_URL)", () => {
  if (databaseUrl !== undefined) orderStoreContract("contract", store({ databaseUrl, dataDir: "unused" }))
  else it.skip("set TEST_DATABASE_URL=postgres://... to run the contract on a PostgreSQL server", () => {})

  it.live("receipts written before migration 0025, or by the previous release after it, count toward the tier as before (credits and packages)", () =>
    Effect.gen(function*() {
      const url = yield* Effect.promise(() => freshDatabaseUrl(databaseUrl!))
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* Migrator.make({})({ loader: Migrator.fromRecord(Object.fromEntries(Object.entries(migrations).filter(([id]) => id < "0025"))) })
        const receipt = (id: string, kind: string, credits: bigint) =>
          sql`INSERT INTO receipts (id, account_id, order_id, kind, title, paid_at, amount_cents, currency, credits, paid_with, auto_reload)
              VALUES (${id}, 'acct_old', ${`ord_${id}`}, ${kind}, 'bought before', '2026-01-15T10:00:00Z', 100, 'USD', ${credits}, 'card', false)`
        yield* receipt("rcpt_credits", "credits", 5_000_000n)
        yield* receipt("rcpt_package", "package", 7_000_001n)
        yield* receipt("rcpt_plan", "subscription", 100_000_000n)
        yield* migrate
        // A server of the previous release, still running, writes a receipt as it always did.
        yield* receipt("rcpt_during_deploy", "credits", 3n)
        yield* Effect.gen(function*() {
          const orders = yield* OrderStore
          assert.strictEqual(yield* orders.purchasedCredits("acct_old"), 12_000_004n)
          assert.deepStrictEqual(
            (yield* orders.listReceipts("acct_old")).map((r) => [r.id, r.counts_toward_tier]).sort(),
            [["rcpt_credits", true], ["rcpt_during_deploy", true], ["rcpt_package", true], ["rcpt_plan", false]]
          )
        }).pipe(Effect.provide(OrderStorePg.pipe(Layer.provide(Layer.succeed(SqlClient.SqlClient, sql)))))
      }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url) })), Effect.scoped)
    }), 60_000)
})

const rentalOrder = Effect.fnUntraced(function*(details: OrderDetails) {
  const order: OrderRecord = {
    id: yield* generateId("ord"),
    account_id: yield* generateId("acct"),
    type: details.kind,
    title: "Rent 4 cores",
    amount_cents: 1_000n,
    currency: "USD",
    credits: 0n,
    machine_id: "m-1",
    package_id: null,
    gift: false,
    details,
    status: "pending",
    payment_method: null,
    card_session_id: null,
    checkout_url: null,
    deposit: null,
    created_at: "2026-01-15T10:20:30.456Z",
    expires_at: "2026-01-16T10:20:30.456Z",
    paid_at: null,
    paid_with: null
  }
  return order
})
const rental: OrderDetails = { kind: "rental", cpu_cores: 4, memory_gb: 16, gpu: 1, storage_gb: 0, hours: 720 }

const withSql = Layer.unwrap(Effect.sync(() => {
  const database = Database.layer({ dataDir: Database.MEMORY })
  return Layer.merge(OrderStorePg.pipe(Layer.provide(database)), database)
}))

layer(withSql, { excludeTestServices: true, timeout: "60 seconds" })("OrderStorePg details on PGlite", (it) => {
  it.effect("details that do not fit OrderDetails are a defect when inserted, and store nothing", () =>
    Effect.gen(function*() {
      const store = yield* OrderStore
      for (const details of [{ ...rental, hours: 1.5 }, { ...rental, kind: "lease" }, { kind: "subscription", plan_id: "b" }]) {
        const order = yield* rentalOrder(details as OrderDetails)
        yield* assertDies(store.insertOrder(order), JSON.stringify(details))
        assert.isUndefined(yield* store.findOrder(order.id))
      }
    }))

  it.effect("a stored details JSON of another shape is a defect on every read, never an order", () =>
    Effect.gen(function*() {
      const store = yield* OrderStore
      const sql = yield* SqlClient.SqlClient
      const order = yield* rentalOrder(rental)
      yield* store.insertOrder(order)
      assert.deepStrictEqual(yield* store.findOrder(order.id), order)
      for (const json of [`{"kind": "rental", "cpu_cores": "4"}`, `{"kind": "rental", "cpu_cores": 4.5, "memory_gb": 16, "gpu": 1, "storage_gb": 0, "hours": 720}`, `{}`]) {
        yield* sql`UPDATE orders SET details = ${json}::jsonb WHERE id = ${order.id}`
        yield* assertDies(store.findOrder(order.id), json)
        yield* assertDies(store.getOrder(order.account_id, order.id), json)
        yield* assertDies(store.listOrders(order.account_id, 10), json)
      }
    }))
})
