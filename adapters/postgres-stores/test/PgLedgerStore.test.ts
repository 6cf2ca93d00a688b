/**
 * The ledger store contract on Postgres: embedded PGlite in memory, and a real PostgreSQL server
 * when TEST_DATABASE_URL is set (there the concurrency tests exercise real row locks across a
 * pool of connections).
 */
import { describe, it } from "@effect/vitest"
import { Layer } from "effect"
import { ledgerStoreContract } from "@model-platform/contract-kit/LedgerContract"
import * as Database from "../src/database/Database.ts"
import { LedgerStorePg } from "../src/PgLedgerStore.ts"

const store = (options: Database.Options) => LedgerStorePg.pipe(Layer.provide(Database.layer(options)))

ledgerStoreContract("LedgerStorePg on in-memory PGlite", store({ dataDir: Database.MEMORY }))

const databaseUrl = process.env["TEST_DATABASE_URL"]
describe.skipIf(databaseUrl === undefined)("LedgerStorePg on PostgreSQL (TEST_DATABASE_URL)", () => {
  if (databaseUrl !== undefined) ledgerStoreContract("contract", store({ databaseUrl, dataDir: "unused" }))
  else it.skip("set TEST_DATABASE_URL=postgres://... to run the contract on a PostgreSQL server", () => {})
})
