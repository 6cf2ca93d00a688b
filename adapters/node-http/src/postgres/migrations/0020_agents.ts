/**
 * Agents (core/src/ports/AgentStore.ts, PgAgentStore.ts): one row per agent holding the record's
 * encoded form (core/src/agents/Records.ts `encodeAgent`) as jsonb, read back through the
 * record's Schema, so a field added to the record later needs no migration. Beside it the
 * columns the store looks records up by, copied from the record on every write:
 * - `id`, the primary key (a duplicate insert conflicts on it);
 * - `account_id` and `created_at`, for `list` (newest first, then id in byte order as core's
 *   `newestFirst`: the index is in that order, ids under "C");
 * - `version`, which `swap` compares and sets (a compare-and-set in one conditional UPDATE).
 * No foreign keys (./migrations.ts).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export const agents = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE agents (
      id text PRIMARY KEY CHECK (id <> ''),
      account_id text NOT NULL CHECK (account_id <> ''),
      created_at timestamptz NOT NULL,
      version integer NOT NULL CHECK (version >= 0),
      record jsonb NOT NULL CHECK (jsonb_typeof(record) = 'object')
    )`
  yield* sql`CREATE INDEX agents_newest ON agents (account_id, created_at DESC, id COLLATE "C")`
})
