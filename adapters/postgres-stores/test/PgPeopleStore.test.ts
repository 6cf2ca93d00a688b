/**
 * The people store contract on Postgres: embedded PGlite in memory, and a real PostgreSQL server
 * when TEST_DATABASE_URL is set (a fresh database of its own; there concurrent removals and
 * consumptions race across a pool of connections). Then what only this store does: long expired
 * sessions and tokens are pruned.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { PeopleStore } from "@model-platform/core/accounts"
import { PeopleFixtures, peopleStoreContract } from "@model-platform/contract-kit/PeopleContract"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as Database from "../src/database/Database.ts"
import { PeopleStorePg, PRUNE_EVERY, RETAIN_EXPIRED_MS } from "../src/PgPeopleStore.ts"
import { freshDatabaseUrl } from "./freshDatabase.ts"

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

const WithSql = PeopleStorePg.pipe(Layer.provideMerge(Database.layer({ dataDir: Database.MEMORY })))

layer(WithSql, { excludeTestServices: true, timeout: "60 seconds" })("PeopleStorePg pruning", (it) => {
  it.effect("sessions and tokens expired more than a day ago are deleted now and then; others stay", () =>
    Effect.gen(function*() {
      const store = yield* PeopleStore
      const sql = yield* SqlClient.SqlClient
      const { at, freshSession, freshToken } = PeopleFixtures
      const longAgo = at(-RETAIN_EXPIRED_MS - 60_000)
      const oldSession = yield* freshSession("per_old", { created_at: longAgo, expires_at: longAgo })
      const recentSession = yield* freshSession("per_old", { expires_at: at(-60_000) })
      const oldToken = yield* freshToken("recover", { created_at: longAgo, not_before: longAgo, expires_at: longAgo })
      yield* store.createSession(oldSession)
      yield* store.createSession(recentSession)
      yield* store.issueToken(oldToken)
      for (let i = 0; i < PRUNE_EVERY; i++) yield* store.issueToken(yield* freshToken("confirm_email"))
      const sessions = yield* sql<{ readonly token_hash: string }>`
        SELECT token_hash FROM sessions WHERE token_hash IN (${oldSession.token_hash}, ${recentSession.token_hash})`
      assert.deepStrictEqual(sessions.map((r) => r.token_hash), [recentSession.token_hash])
      const tokens = yield* sql`SELECT token_hash FROM one_time_tokens WHERE token_hash = ${oldToken.token_hash}`
      assert.strictEqual(tokens.length, 0)
    }), 60_000)
})
