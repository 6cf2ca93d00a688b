/**
 * The agent store contract on Postgres: embedded PGlite in memory, and a real PostgreSQL server
 * when TEST_DATABASE_URL is set (there the concurrent swaps from one version race on the row
 * across a pool of connections). The server suite runs on a new database each time, as the other
 * Pg store suites do, so nothing an earlier run left is in the way.
 */
import { describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { agentStoreContract } from "@model-platform/test-harness/AgentContract"
import * as Database from "../src/postgres/Database.ts"
import { AgentStorePg } from "../src/postgres/PgAgentStore.ts"
import { freshDatabaseUrl } from "./support.ts"

const store = (options: Database.Options) => AgentStorePg.pipe(Layer.provide(Database.layer(options)))

agentStoreContract("AgentStorePg on in-memory PGlite", store({ dataDir: Database.MEMORY }))

/** The store on a new database of the server at `serverUrl`, created when the layer is built. */
const onFreshDatabase = (serverUrl: string) =>
  Layer.unwrap(Effect.map(Effect.promise(() => freshDatabaseUrl(serverUrl)), (databaseUrl) => store({ databaseUrl, dataDir: "unused" })))

const databaseUrl = process.env["TEST_DATABASE_URL"]
describe.skipIf(databaseUrl === undefined)("AgentStorePg on PostgreSQL (TEST_DATABASE_URL)", () => {
  if (databaseUrl !== undefined) agentStoreContract("contract", onFreshDatabase(databaseUrl))
  else it.skip("set TEST_DATABASE_URL=postgres://... to run the contract on a PostgreSQL server", () => {})
})
