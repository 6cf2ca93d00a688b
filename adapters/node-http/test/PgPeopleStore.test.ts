/**
 * The people store contract on Postgres: embedded PGlite in memory, and a real PostgreSQL server
 * when TEST_DATABASE_URL is set (a fresh database of its own; there concurrent removals and
 * consumptions race across a pool of connections).
 */
import { describe, it } from "@effect/vitest"
import { peopleStoreContract } from "@model-platform/test-harness/PeopleContract"
import { Effect, Layer } from "effect"
import * as Database from "../src/postgres/Database.ts"
import { PeopleStorePg } from "../src/postgres/PgPeopleStore.ts"
import { freshDatabaseUrl } from "./support.ts"

const store = (options: Database.Options) => PeopleStorePg.pipe(Layer.provide(Database.layer(options)))

peopleStoreContract("PeopleStorePg on in-memory PGlite", store({ dataDir: Database.MEMORY }))

const databaseUrl = process.env["TEST_DATABASE_URL"]
describe.skipIf(databaseUrl === undefined)("PeopleStorePg on PostgreSQL (TEST_DATABASE_URL)", () => {
  if (databaseUrl !== undefined) {
    peopleStoreContract(
      "contract",
      Layer.unwrap(Effect.promise(() => freshDatabaseUrl(databaseUrl)).pipe(
        Effect.map((url) => store({ databaseUrl: url, dataDir: "unused" }))
      ))
    )
  } else it.skip("set TEST_DATABASE_URL=postgres://... to run the contract on a PostgreSQL server", () => {})
})
