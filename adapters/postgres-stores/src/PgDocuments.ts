/**
 * The document store port (core/src/kernel/Documents.ts) on Postgres (a real server or embedded
 * PGlite), one generic store for every kind of record: `documentStorePg(kind)`; `AgentStorePg`
 * and `ApprovalStorePg` are it for their kinds, `DocumentStoresPg` (the DocumentStores port) for
 * any kind. The table comes from the `0020_documents` migration (./migrations/0020_documents.ts):
 * a row holds the record's encoded form (the kind's `encode`) as jsonb beside the columns it is
 * looked up by (kind, id, owner_id, created_at, version), all copied from the record on every
 * write. Every statement names its kind, so records of two kinds never meet, even with the same id.
 *
 * How the port's rules hold:
 * - insert: `documentProblem(kind, record, "insert")` is checked before any SQL (a defect); then
 *   one `INSERT ... ON CONFLICT (kind, id) DO NOTHING RETURNING id`: no row back is a duplicate
 *   id, a defect. The CHECKs of the migration (non-empty ids, version >= 0) hold it too.
 * - get / list: reads; every stored record goes through the kind's `decode`, and one that does
 *   not decode is a defect. `list` is newest first, then by id under the "C" collation: byte
 *   order, which for the ids' characters is core's `newestFirst` (JS string order); the index
 *   `documents_newest` is in that order.
 * - swap: `documentProblem(kind, next, "swap")` first, then ONE conditional statement,
 *   `UPDATE ... WHERE kind = $kind AND id = $id AND version = $next.version - 1 AND owner_id =
 *   $owner`, which answers whether it updated a row. Under READ COMMITTED a concurrent swap of
 *   the same row waits for the first to commit and then re-checks the WHERE against the row as
 *   the first left it (version already moved), so of several swaps from one version exactly one
 *   wins, across connections and processes.
 * - remove: ONE `DELETE ... WHERE kind = $kind AND id = $id AND version = $record.version AND
 *   owner_id = $owner RETURNING id`; the owner's list is a query on the same row, so it goes with
 *   it. A concurrent remove or swap of the row waits and re-checks, as for swap: of several
 *   removes of one version exactly one answers true.
 * - created_at: the record keeps its own ISO string (exact to the millisecond) in the jsonb, and
 *   that is what is read back; the column is `${created_at}::timestamptz` (microseconds), only
 *   for ordering, so equal instants compare equal and the order is that of the instants.
 * Database failures are defects (`Effect.orDie`), as in every Pg store; PgUnavailable.ts marks
 * those that mean the database cannot be reached.
 */
import { ApprovalDocuments, ApprovalStore } from "@model-platform/core/accounts"
import { AgentDocuments, AgentStore } from "@model-platform/core/agents"
import {
  type DocumentKind,
  documentProblem,
  type DocumentStore,
  DocumentStores,
  type VersionedRecord
} from "@model-platform/core/kernel"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { batchedById } from "./PgReadBatch.ts"

interface DocumentRow {
  readonly record: unknown
}

/** jsonb comes back parsed from the pg driver and PGlite; as text from anything else. */
const parsed = (value: unknown): unknown => (typeof value === "string" ? JSON.parse(value) : value)

/** The store of `kind`'s records in the `documents` table, on `sql`. */
const storeOn = <R extends VersionedRecord>(sql: SqlClient.SqlClient, kind: DocumentKind<R>): DocumentStore<R> => {
  const name = `DocumentStore(${kind.kind})`
  const die = (operation: string, problem: string) => Effect.die(new Error(`${name}.${operation}: ${problem}`))

  const decoded = (row: DocumentRow): Effect.Effect<R> =>
    Effect.suspend(() => {
      const record = kind.decode(parsed(row.record))
      return record === undefined ? die("read", `a stored ${kind.kind} does not decode`) : Effect.succeed(record)
    })

  const insert = (record: R) =>
    Effect.suspend(() => {
      const problem = documentProblem(kind, record, "insert")
      if (problem !== undefined) return die("insert", problem)
      const encoded = JSON.stringify(kind.encode(record))
      return sql<{ readonly id: string }>`
        INSERT INTO documents (kind, id, owner_id, created_at, version, record)
        VALUES (${kind.kind}, ${record.id}, ${kind.owner(record)}, ${record.created_at}::timestamptz, ${record.version},
                ${encoded}::jsonb)
        ON CONFLICT (kind, id) DO NOTHING
        RETURNING id`.pipe(
        Effect.orDie,
        Effect.flatMap((rows) => (rows.length > 0 ? Effect.void : die("insert", `duplicate id ${record.id}`)))
      )
    }).pipe(Effect.withSpan(`${name}.insert`))

  // Concurrent reads in one statement (PgReadBatch.ts): an agent is read at every call of its keys.
  const getBatched = batchedById(
    (ids) =>
      sql<DocumentRow>`SELECT record FROM documents WHERE kind = ${kind.kind} AND id IN ${sql.in(ids)}`.pipe(
        Effect.orDie,
        Effect.flatMap((rows) => Effect.forEach(rows, decoded))
      )
  )
  const get = (id: string) => getBatched(id).pipe(Effect.withSpan(`${name}.get`))

  const list = (owner: string) =>
    sql<DocumentRow>`
      SELECT record FROM documents WHERE kind = ${kind.kind} AND owner_id = ${owner}
      ORDER BY created_at DESC, id COLLATE "C"`.pipe(
      Effect.orDie,
      Effect.flatMap((rows) => Effect.forEach(rows, decoded)),
      Effect.withSpan(`${name}.list`)
    )

  const swap = (next: R) =>
    Effect.suspend(() => {
      const problem = documentProblem(kind, next, "swap")
      if (problem !== undefined) return die("swap", problem)
      const encoded = JSON.stringify(kind.encode(next))
      return sql<{ readonly id: string }>`
        UPDATE documents
        SET record = ${encoded}::jsonb, version = ${next.version}, created_at = ${next.created_at}::timestamptz
        WHERE kind = ${kind.kind} AND id = ${next.id} AND version = ${next.version - 1} AND owner_id = ${kind.owner(next)}
        RETURNING id`.pipe(
        Effect.orDie,
        Effect.map((rows) => rows.length > 0)
      )
    }).pipe(Effect.withSpan(`${name}.swap`))

  const remove = (record: R) =>
    sql<{ readonly id: string }>`
      DELETE FROM documents
      WHERE kind = ${kind.kind} AND id = ${record.id} AND version = ${record.version} AND owner_id = ${kind.owner(record)}
      RETURNING id`.pipe(
      Effect.orDie,
      Effect.map((rows) => rows.length > 0),
      Effect.withSpan(`${name}.remove`)
    )

  return { insert, get, list, swap, remove }
}

/** The store of `kind`'s records in the `documents` table. */
export const documentStorePg = <R extends VersionedRecord>(
  kind: DocumentKind<R>
): Effect.Effect<DocumentStore<R>, never, SqlClient.SqlClient> => Effect.map(SqlClient.SqlClient, (sql) => storeOn(sql, kind))

/** The agent store port (core/src/agents/AgentStore.ts) on Postgres. */
export const AgentStorePg: Layer.Layer<AgentStore, never, SqlClient.SqlClient> = Layer.effect(
  AgentStore,
  Effect.map(documentStorePg(AgentDocuments), AgentStore.of)
)

/** The approval store port (core/src/accounts/ApprovalStore.ts) on Postgres. */
export const ApprovalStorePg: Layer.Layer<ApprovalStore, never, SqlClient.SqlClient> = Layer.effect(
  ApprovalStore,
  Effect.map(documentStorePg(ApprovalDocuments), ApprovalStore.of)
)

/**
 * The DocumentStores port (core/src/kernel/DocumentStores.ts) on Postgres: every kind in the one
 * `documents` table; a kind's store is made on its first `of` and kept for the next.
 */
export const DocumentStoresPg: Layer.Layer<DocumentStores, never, SqlClient.SqlClient> = Layer.effect(
  DocumentStores,
  Effect.map(SqlClient.SqlClient, (sql) => {
    const made = new Map<string, { readonly kind: DocumentKind<any>; readonly store: DocumentStore<any> }>()
    return DocumentStores.of({
      of: <R extends VersionedRecord>(kind: DocumentKind<R>): DocumentStore<R> => {
        const known = made.get(kind.kind)
        if (known !== undefined && known.kind === kind) return known.store
        const store = storeOn(sql, kind)
        if (known === undefined) made.set(kind.kind, { kind, store })
        return store
      }
    })
  })
)
