/**
 * Documents (core/src/kernel/Documents.ts, PgDocuments.ts): one table for every kind of versioned
 * record (agents, approvals), a row per record holding its encoded form (the kind's `encode`, from
 * the record's Schema) as jsonb, read back through that Schema, so neither a field added to a
 * record later nor a new kind of record needs a migration. Beside it the columns the store looks
 * records up by, copied from the record on every write:
 * - `kind` and `id`, the primary key (a duplicate insert conflicts on it; records of two kinds
 *   with the same id are two rows that never meet);
 * - `owner_id` and `created_at`, for `list` (one owner's records of one kind, newest first, then
 *   id in byte order as core's `newestFirst`: the index is in that order, ids under "C");
 * - `version`, which `swap` compares and sets (a compare-and-set in one conditional UPDATE).
 * No foreign keys (./migrations.ts).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export const documents = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE documents (
      kind text NOT NULL CHECK (kind <> ''),
      id text NOT NULL CHECK (id <> ''),
      owner_id text NOT NULL CHECK (owner_id <> ''),
      created_at timestamptz NOT NULL,
      version integer NOT NULL CHECK (version >= 0),
      record jsonb NOT NULL CHECK (jsonb_typeof(record) = 'object'),
      PRIMARY KEY (kind, id)
    )`
  yield* sql`CREATE INDEX documents_newest ON documents (kind, owner_id, created_at DESC, id COLLATE "C")`
})
