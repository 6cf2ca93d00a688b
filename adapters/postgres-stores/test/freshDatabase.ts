import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql"

/**
 * A new empty database on the server at `baseUrl` (TEST_DATABASE_URL), so a suite that needs a
 * first start gets one even when other suites share the server.
 */
export const freshDatabaseUrl = async (baseUrl: string): Promise<string> => {
  const name = `t_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`
  await Effect.runPromise(
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql.unsafe(`CREATE DATABASE ${name}`)
    }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(baseUrl) })), Effect.scoped)
  )
  const url = new URL(baseUrl)
  url.pathname = `/${name}`
  return url.toString()
}
