/**
 * The document store contract on Postgres, for agents and approvals on one `documents` table (and
 * that records of the two kinds with the same id never meet): embedded PGlite in memory, and a
 * real PostgreSQL server when TEST_DATABASE_URL is set (there the concurrent swaps from one
 * version race on the row across a pool of connections). The server suite runs on a new database
 * each time, as the other Pg store suites do, so nothing an earlier run left is in the way. Then,
 * on PGlite, what only this store has: its rows (gone after a remove), the DocumentStores port on
 * the same rows, and a stored record that does not decode being a defect.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { AgentDocuments, AgentStore, encodeAgent } from "@model-platform/core/agents"
import { DocumentStores, generateId } from "@model-platform/core/kernel"
import { AgentDocumentsContract, makeAgent } from "@model-platform/contract-kit/AgentContract"
import { ApprovalDocumentsContract } from "@model-platform/contract-kit/ApprovalContract"
import { assertDies } from "@model-platform/contract-kit/ContractSupport"
import { documentStoresContract } from "@model-platform/contract-kit/DocumentContract"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as Database from "../src/database/Database.ts"
import { AgentStorePg, ApprovalStorePg, DocumentStoresPg } from "../src/PgDocuments.ts"
import { freshDatabaseUrl } from "./freshDatabase.ts"

const kinds = [AgentDocumentsContract, ApprovalDocumentsContract]

const stores = (options: Database.Options) =>
  Layer.mergeAll(AgentStorePg, ApprovalStorePg, DocumentStoresPg).pipe(Layer.provide(Database.layer(options)))

documentStoresContract("AgentStorePg + ApprovalStorePg + DocumentStoresPg on in-memory PGlite", stores({ dataDir: Database.MEMORY }), kinds)

/** The stores on a new database of the server at `serverUrl`, created when the layer is built. */
const onFreshDatabase = (serverUrl: string) =>
  Layer.unwrap(Effect.map(Effect.promise(() => freshDatabaseUrl(serverUrl)), (databaseUrl) => stores({ databaseUrl, dataDir: "unused" })))

const databaseUrl = process.env["TEST_DATABASE_URL"]
describe.skipIf(databaseUrl === undefined)("AgentStorePg + ApprovalStorePg + DocumentStoresPg on PostgreSQL (TEST_DATABASE_URL)", () => {
  if (databaseUrl !== undefined) documentStoresContract("contract", onFreshDatabase(databaseUrl), kinds)
  else it.skip("set TEST_DATABASE_URL=postgres://... to run the contract on a PostgreSQL server", () => {})
})

// ---------------------------------------------------------------------------------------------
// this store's own rows (PGlite)

const StoresAndSql = Layer.mergeAll(AgentStorePg, ApprovalStorePg, DocumentStoresPg).pipe(Layer.provideMerge(Database.layer({ dataDir: Database.MEMORY })))

layer(StoresAndSql, {
  excludeTestServices: true,
  timeout: "60 seconds"
})("DocumentStore rows on PGlite", (it) => {
  it.effect("a record is one row of its kind: the encoded record beside kind, id, owner_id, created_at and version", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const agents = yield* AgentStore
      const account = yield* generateId("acct")
      const agent = yield* makeAgent(account)
      yield* agents.insert(agent)
      const rows = yield* sql<{ kind: string; owner_id: string; version: number; created_at: unknown; record: unknown }>`
        SELECT kind, owner_id, version, created_at, record FROM documents WHERE id = ${agent.id}`
      assert.lengthOf(rows, 1)
      assert.deepStrictEqual([rows[0]?.kind, rows[0]?.owner_id, rows[0]?.version], ["agent", account, 0])
      assert.deepStrictEqual(rows[0]?.record, encodeAgent(agent))
    }))

  it.effect("a remove deletes the row; DocumentStores' store of a kind is on the same rows as its own port's", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const agents = yield* AgentStore
      const viaPort = (yield* DocumentStores).of(AgentDocuments)
      const agent = yield* makeAgent(yield* generateId("acct"))
      yield* agents.insert(agent)
      assert.deepStrictEqual(yield* viaPort.get(agent.id), agent)
      assert.isTrue(yield* viaPort.remove(agent))
      assert.isUndefined(yield* agents.get(agent.id))
      assert.lengthOf(yield* sql`SELECT 1 FROM documents WHERE kind = 'agent' AND id = ${agent.id}`, 0)
    }))

  it.effect("a stored record that does not decode is a defect, by id and in its owner's list", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const agents = yield* AgentStore
      const account = yield* generateId("acct")
      const agent = yield* makeAgent(account)
      yield* agents.insert(agent)
      const broken = JSON.stringify({ ...(encodeAgent(agent) as Record<string, unknown>), status: "sleeping" })
      yield* sql`UPDATE documents SET record = ${broken}::jsonb WHERE kind = 'agent' AND id = ${agent.id}`
      yield* assertDies(agents.get(agent.id), "a record that does not decode")
      yield* assertDies(agents.list(account), "a listed record that does not decode")
    }))
})
