/**
 * The account and key store ports (`AccountStore`, `KeyStore` of @model-platform/core/keys) on
 * the shared SQLite connection (SqliteDatabase.ts). A key's secret is kept only as its hash
 * (`secret_hash`, as ApiKeys makes it); `findCaller` joins the key and its account in one read.
 * Lists are oldest first: earliest created_at, then the one inserted first. The plain functions
 * (`sqliteKeys`) are what the gateway store runs inside its admission.
 */
import { type AccountRecord, AccountStore, type KeyRecord, KeyStore, type Permission } from "@model-platform/core/keys"
import { markUnavailable, type Timestamp } from "@model-platform/core/kernel"
import { isBusy, type Row, type SqliteDatabase, text, textOrNull } from "./SqliteDatabase.ts"

export const KEYS_SCHEMA = `
CREATE TABLE IF NOT EXISTS accounts (
  seq        INTEGER PRIMARY KEY AUTOINCREMENT,
  id         TEXT NOT NULL UNIQUE,
  email      TEXT NOT NULL UNIQUE,
  created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS api_keys (
  seq             INTEGER PRIMARY KEY AUTOINCREMENT,
  id              TEXT NOT NULL UNIQUE,
  account_id      TEXT NOT NULL,
  name            TEXT NOT NULL,
  prefix          TEXT NOT NULL,
  secret_hash     TEXT NOT NULL UNIQUE,
  permissions     TEXT NOT NULL,   -- JSON array
  machine_id      TEXT,
  subscription_id TEXT,
  rental_id       TEXT,
  agent_id        TEXT,
  created_at      TEXT NOT NULL,
  last_used_at    TEXT,
  revoked_at      TEXT
);
CREATE INDEX IF NOT EXISTS api_keys_account ON api_keys (account_id, created_at, seq);
CREATE INDEX IF NOT EXISTS api_keys_prefix ON api_keys (prefix);
`

const accountOf = (row: Row): AccountRecord => ({
  id: text(row, "id"),
  email: text(row, "email"),
  created_at: text(row, "created_at") as Timestamp
})

const keyOf = (row: Row): KeyRecord => ({
  id: text(row, "id"),
  account_id: text(row, "account_id"),
  name: text(row, "name"),
  prefix: text(row, "prefix"),
  secret_hash: text(row, "secret_hash"),
  permissions: JSON.parse(text(row, "permissions")) as Array<Permission>,
  machine_id: textOrNull(row, "machine_id"),
  subscription_id: textOrNull(row, "subscription_id"),
  rental_id: textOrNull(row, "rental_id"),
  agent_id: textOrNull(row, "agent_id"),
  created_at: text(row, "created_at") as Timestamp,
  last_used_at: textOrNull(row, "last_used_at") as Timestamp | null,
  revoked_at: textOrNull(row, "revoked_at") as Timestamp | null
})

/** The keys on `db`, as plain functions. */
export const sqliteKeys = (db: SqliteDatabase) => ({
  get: (accountId: string, keyId: string): KeyRecord | undefined => {
    const row = db.one("SELECT * FROM api_keys WHERE id = ? AND account_id = ?", keyId, accountId)
    return row === undefined ? undefined : keyOf(row)
  },
  /** Never moves last_used_at backwards (ISO times compare as text). */
  touch: (keyId: string, at: Timestamp): void =>
    db.run("UPDATE api_keys SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)", at, keyId, at)
})

export const accountStoreOn = (db: SqliteDatabase): AccountStore["Service"] =>
  AccountStore.of(markUnavailable("AccountStore", {
    insert: (account) =>
      db.atomically("AccountStore.insert", () =>
        db.run("INSERT INTO accounts (id, email, created_at) VALUES (?, ?, ?)", account.id, account.email, account.created_at)),
    get: (id) =>
      db.read(() => {
        const row = db.one("SELECT * FROM accounts WHERE id = ?", id)
        return row === undefined ? undefined : accountOf(row)
      }),
    findByEmail: (email) =>
      db.read(() => {
        const row = db.one("SELECT * FROM accounts WHERE email = ?", email)
        return row === undefined ? undefined : accountOf(row)
      }),
    first: db.read(() => {
      const row = db.one("SELECT * FROM accounts ORDER BY created_at, seq LIMIT 1")
      return row === undefined ? undefined : accountOf(row)
    })
  }, isBusy))

export const keyStoreOn = (db: SqliteDatabase): KeyStore["Service"] => {
  const keys = sqliteKeys(db)
  return KeyStore.of(markUnavailable("KeyStore", {
    insert: (key) =>
      db.atomically("KeyStore.insert", () =>
        db.run(
          `INSERT INTO api_keys (id, account_id, name, prefix, secret_hash, permissions, machine_id, subscription_id,
             rental_id, agent_id, created_at, last_used_at, revoked_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
          key.id,
          key.account_id,
          key.name,
          key.prefix,
          key.secret_hash,
          JSON.stringify(key.permissions),
          key.machine_id,
          key.subscription_id,
          key.rental_id,
          key.agent_id,
          key.created_at,
          key.last_used_at,
          key.revoked_at
        )),
    findByHash: (secretHash) =>
      db.read(() => {
        const row = db.one("SELECT * FROM api_keys WHERE secret_hash = ?", secretHash)
        return row === undefined ? undefined : keyOf(row)
      }),
    findCaller: (secretHash) =>
      db.read(() => {
        const row = db.one(
          `SELECT k.*, a.id AS account_id_found, a.email AS account_email, a.created_at AS account_created_at
           FROM api_keys k LEFT JOIN accounts a ON a.id = k.account_id WHERE k.secret_hash = ?`,
          secretHash
        )
        if (row === undefined) return undefined
        const account = row["account_id_found"] === null
          ? undefined
          : { id: text(row, "account_id_found"), email: text(row, "account_email"), created_at: text(row, "account_created_at") as Timestamp }
        return { key: keyOf(row), account }
      }),
    get: (accountId, keyId) => db.read(() => keys.get(accountId, keyId)),
    findByPrefix: (prefix) => db.read(() => db.all("SELECT * FROM api_keys WHERE prefix = ? ORDER BY created_at, seq", prefix).map(keyOf)),
    list: (accountId) => db.read(() => db.all("SELECT * FROM api_keys WHERE account_id = ? ORDER BY created_at, seq", accountId).map(keyOf)),
    revoke: (accountId, keyId, at) =>
      db.atomically("KeyStore.revoke", () => {
        db.run("UPDATE api_keys SET revoked_at = ? WHERE id = ? AND account_id = ? AND revoked_at IS NULL", at, keyId, accountId)
        return keys.get(accountId, keyId)
      }),
    touch: (keyId, at) => db.atomically("KeyStore.touch", () => keys.touch(keyId, at))
  }, isBusy))
}
