/**
 * The account, key and idempotency store ports on Postgres (any `SqlClient` speaking Postgres:
 * a real server or embedded PGlite). Each rule that must hold under concurrency is one statement,
 * so it holds across processes too: a unique constraint makes a duplicate insert fail (a defect,
 * like every store failure), revoke is a conditional UPDATE, touch a monotonic UPDATE, claim an
 * INSERT ... ON CONFLICT DO NOTHING after a DELETE of the records expired by the claim's time.
 * The tables are created by ./migrations.ts. Authentication reads a key and its account in one
 * query (`findCaller`, a join).
 */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { AccountRecord, KeyRecord, Permission } from "@model-platform/core/keys"
import { AccountStore, KeyStore } from "@model-platform/core/keys"
import {
  type ClaimResult,
  expiredBy,
  IdempotencyStore,
  type IdempotencyRecord,
  type StoredResponse
} from "@model-platform/core/http"

// timestamptz columns come back as Date; the ports speak ISO strings with milliseconds.
const iso = (date: Date): string => date.toISOString()
const isoOrNull = (date: Date | null): string | null => date === null ? null : date.toISOString()

// ---------------------------------------------------------------------------------------------
// accounts

interface AccountRow {
  readonly id: string
  readonly email: string
  readonly created_at: Date
}

const toAccount = (row: AccountRow): AccountRecord => ({ id: row.id, email: row.email, created_at: iso(row.created_at) })

export const AccountStorePg: Layer.Layer<AccountStore, never, SqlClient.SqlClient> = Layer.effect(
  AccountStore,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const insert = (account: AccountRecord) =>
      sql`INSERT INTO accounts (id, email, created_at)
          VALUES (${account.id}, ${account.email}, ${account.created_at})`.pipe(
        Effect.asVoid,
        Effect.orDie,
        Effect.withSpan("AccountStore.insert")
      )

    const get = (id: string) =>
      sql<AccountRow>`SELECT id, email, created_at FROM accounts WHERE id = ${id}`.pipe(
        Effect.map((rows) => rows[0] === undefined ? undefined : toAccount(rows[0])),
        Effect.orDie
      )

    const first = sql<AccountRow>`SELECT id, email, created_at FROM accounts ORDER BY created_at, seq LIMIT 1`.pipe(
      Effect.map((rows) => rows[0] === undefined ? undefined : toAccount(rows[0])),
      Effect.orDie
    )

    const findByEmail = (email: string) =>
      sql<AccountRow>`SELECT id, email, created_at FROM accounts WHERE email = ${email}`.pipe(
        Effect.map((rows) => rows[0] === undefined ? undefined : toAccount(rows[0])),
        Effect.orDie
      )

    return AccountStore.of({ insert, get, findByEmail, first })
  })
)

// ---------------------------------------------------------------------------------------------
// keys

interface KeyRow {
  readonly id: string
  readonly account_id: string
  readonly name: string
  readonly prefix: string
  readonly secret_hash: string
  readonly permissions: ReadonlyArray<Permission>
  readonly machine_id: string | null
  readonly subscription_id: string | null
  readonly rental_id: string | null
  readonly agent_id: string | null
  readonly created_at: Date
  readonly last_used_at: Date | null
  readonly revoked_at: Date | null
}

/** A key row joined with its account's columns (all NULL when the account does not exist). */
interface CallerRow extends KeyRow {
  readonly account_row_id: string | null
  readonly account_email: string | null
  readonly account_created_at: Date | null
}

const toKey = (row: KeyRow): KeyRecord => ({
  id: row.id,
  account_id: row.account_id,
  name: row.name,
  prefix: row.prefix,
  secret_hash: row.secret_hash,
  permissions: row.permissions,
  machine_id: row.machine_id,
  subscription_id: row.subscription_id,
  rental_id: row.rental_id,
  agent_id: row.agent_id,
  created_at: iso(row.created_at),
  last_used_at: isoOrNull(row.last_used_at),
  revoked_at: isoOrNull(row.revoked_at)
})

export const KeyStorePg: Layer.Layer<KeyStore, never, SqlClient.SqlClient> = Layer.effect(
  KeyStore,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const columns = sql.literal(
      "id, account_id, name, prefix, secret_hash, permissions, machine_id, subscription_id, rental_id, " +
        "agent_id, created_at, last_used_at, revoked_at"
    )
    const one = (rows: ReadonlyArray<KeyRow>) => rows[0] === undefined ? undefined : toKey(rows[0])

    const insert = (key: KeyRecord) =>
      sql`INSERT INTO api_keys (${columns}) VALUES (
            ${key.id}, ${key.account_id}, ${key.name}, ${key.prefix}, ${key.secret_hash},
            ${key.permissions}::text[], ${key.machine_id}, ${key.subscription_id}, ${key.rental_id},
            ${key.agent_id}, ${key.created_at}, ${key.last_used_at}, ${key.revoked_at})`.pipe(
        Effect.asVoid,
        Effect.orDie,
        Effect.withSpan("KeyStore.insert")
      )

    const findByHash = (secretHash: string) =>
      sql<KeyRow>`SELECT ${columns} FROM api_keys WHERE secret_hash = ${secretHash}`.pipe(
        Effect.map(one),
        Effect.orDie
      )

    // The key and its account in one round trip (the accounts table is AccountStorePg's, in the
    // same database: PgStores always provides both). LEFT JOIN: an account that no longer exists
    // comes back as NULL columns.
    const callerColumns = sql.literal(
      "k.id, k.account_id, k.name, k.prefix, k.secret_hash, k.permissions, k.machine_id, k.subscription_id, " +
        "k.rental_id, k.agent_id, k.created_at, k.last_used_at, k.revoked_at, " +
        "a.id AS account_row_id, a.email AS account_email, a.created_at AS account_created_at"
    )
    const findCaller = (secretHash: string) =>
      sql<CallerRow>`SELECT ${callerColumns} FROM api_keys k LEFT JOIN accounts a ON a.id = k.account_id
                     WHERE k.secret_hash = ${secretHash}`.pipe(
        Effect.map((rows) => {
          const row = rows[0]
          if (row === undefined) return undefined
          const account = row.account_row_id === null || row.account_email === null || row.account_created_at === null
            ? undefined
            : toAccount({ id: row.account_row_id, email: row.account_email, created_at: row.account_created_at })
          return { key: toKey(row), account }
        }),
        Effect.orDie
      )

    const get = (accountId: string, keyId: string) =>
      sql<KeyRow>`SELECT ${columns} FROM api_keys WHERE id = ${keyId} AND account_id = ${accountId}`.pipe(
        Effect.map(one),
        Effect.orDie
      )

    const list = (accountId: string) =>
      sql<KeyRow>`SELECT ${columns} FROM api_keys WHERE account_id = ${accountId} ORDER BY created_at, seq`.pipe(
        Effect.map((rows) => rows.map(toKey)),
        Effect.orDie
      )

    // The UPDATE only matches an unrevoked key, so concurrent revokes set revoked_at once; when it
    // matches nothing the key is unknown or already revoked, and reading it back tells which.
    const revoke = (accountId: string, keyId: string, at: string) =>
      sql<KeyRow>`UPDATE api_keys SET revoked_at = ${at}
                  WHERE id = ${keyId} AND account_id = ${accountId} AND revoked_at IS NULL
                  RETURNING ${columns}`.pipe(
        Effect.flatMap((rows) => rows[0] === undefined ? get(accountId, keyId) : Effect.succeed(toKey(rows[0]))),
        Effect.orDie,
        Effect.withSpan("KeyStore.revoke")
      )

    const touch = (keyId: string, at: string) =>
      sql`UPDATE api_keys SET last_used_at = ${at}::timestamptz
          WHERE id = ${keyId} AND (last_used_at IS NULL OR last_used_at < ${at}::timestamptz)`.pipe(
        Effect.asVoid,
        Effect.orDie
      )

    const findByPrefix = (prefix: string) =>
      sql<KeyRow>`SELECT ${columns} FROM api_keys WHERE prefix = ${prefix} ORDER BY created_at, seq`.pipe(
        Effect.map((rows) => rows.map(toKey)),
        Effect.orDie
      )

    return KeyStore.of({ insert, findByHash, findByPrefix, findCaller, get, list, revoke, touch })
  })
)

// ---------------------------------------------------------------------------------------------
// idempotency records

interface IdempotencyRow {
  readonly scope: string
  readonly key: string
  readonly fingerprint: string
  readonly created_at: Date
  readonly response_status: number | null
  readonly response_body: string | null
}

const toRecord = (row: IdempotencyRow): IdempotencyRecord => ({
  scope: row.scope,
  key: row.key,
  fingerprint: row.fingerprint,
  created_at: iso(row.created_at),
  response: row.response_status === null || row.response_body === null
    ? undefined
    : { status: row.response_status, body: row.response_body }
})

export const IdempotencyStorePg: Layer.Layer<IdempotencyStore, never, SqlClient.SqlClient> = Layer.effect(
  IdempotencyStore,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** One attempt: Claimed, Exists, or undefined when the record vanished in between (released). */
    const attempt = (record: Omit<IdempotencyRecord, "response">) =>
      Effect.gen(function*() {
        // The sweep: every record expired by now goes, this key's included (then it is claimed anew).
        yield* sql`DELETE FROM idempotency_records WHERE created_at <= ${expiredBy(record.created_at)}`
        const inserted = yield* sql`
          INSERT INTO idempotency_records (scope, key, fingerprint, created_at)
          VALUES (${record.scope}, ${record.key}, ${record.fingerprint}, ${record.created_at})
          ON CONFLICT (scope, key) DO NOTHING
          RETURNING 1 AS claimed`
        if (inserted.length > 0) return { _tag: "Claimed" } as const
        const rows = yield* sql<IdempotencyRow>`
          SELECT scope, key, fingerprint, created_at, response_status, response_body
          FROM idempotency_records WHERE scope = ${record.scope} AND key = ${record.key}`
        return rows[0] === undefined ? undefined : { _tag: "Exists", record: toRecord(rows[0]) } as const
      })

    const claim = (record: Omit<IdempotencyRecord, "response">): Effect.Effect<ClaimResult> =>
      attempt(record).pipe(
        // A release between our INSERT and SELECT leaves nothing to report: try again.
        Effect.repeat({ until: (result) => result !== undefined, times: 10 }),
        Effect.flatMap((result) =>
          result === undefined ? Effect.die(new Error("IdempotencyStore.claim: record kept vanishing")) : Effect.succeed(result)
        ),
        Effect.orDie,
        Effect.withSpan("IdempotencyStore.claim")
      )

    const complete = (scope: string, key: string, response: StoredResponse) =>
      sql`UPDATE idempotency_records SET response_status = ${response.status}, response_body = ${response.body}
          WHERE scope = ${scope} AND key = ${key}`.pipe(Effect.asVoid, Effect.orDie)

    // Only an unfinished claim is released: a late release must not erase a stored response.
    const release = (scope: string, key: string) =>
      sql`DELETE FROM idempotency_records
          WHERE scope = ${scope} AND key = ${key} AND response_status IS NULL`.pipe(Effect.asVoid, Effect.orDie)

    return IdempotencyStore.of({ claim, complete, release })
  })
)

/** The three stores on one `SqlClient`. */
export const PgStores: Layer.Layer<AccountStore | KeyStore | IdempotencyStore, never, SqlClient.SqlClient> =
  Layer.mergeAll(AccountStorePg, KeyStorePg, IdempotencyStorePg)
