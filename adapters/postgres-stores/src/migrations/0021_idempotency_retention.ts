/**
 * Idempotency records are kept 24 hours and their answers sealed (core/src/http/IdempotencyStore.ts,
 * core/src/http/IdempotencySeal.ts). The index serves the sweep of expired records each claim runs
 * (PgStores.ts). Answers kept before this migration are in clear and may hold a key's secret: they
 * are erased (the port's ERASED_RESPONSE_BODY, written out here: a migration never changes). Their
 * records stay until they expire, with a fingerprint of the earlier form that no request matches
 * now, so a replay of one is a 409 rather than the write a second time.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export const idempotencyRetention = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`UPDATE idempotency_records SET response_body = 'erased' WHERE response_body IS NOT NULL`
  yield* sql`CREATE INDEX idempotency_records_created_at ON idempotency_records (created_at)`
})
