/**
 * API keys: the resource, the secret format and its hash.
 * A secret is a fixed service prefix plus 256 bits from the platform's CSPRNG (Web Crypto, so the
 * same code runs on Node and Lambda); only its SHA-256 hash is stored and keys are found by hash.
 */
import { Effect, Schema } from "effect"
import { Permission } from "./Permissions.ts"
import { sha256Hex, toHex } from "../kernel/Sha256.ts"
import { Timestamp } from "../kernel/Time.ts"
import { type AccountId, type AgentId, base64url, type KeyId, randomBytes } from "../kernel/Ids.ts"

export const SECRET_PREFIX = "mpk_"
/** How many leading characters of a secret the `prefix` field shows. */
export const VISIBLE_PREFIX_LENGTH = 12

/** What a key may reach; null on the key when it reaches every machine (docs/api-decisions.md). */
export const KeyScope = Schema.Struct({
  machine_id: Schema.NullOr(Schema.String),
  subscription_id: Schema.NullOr(Schema.String),
  rental_id: Schema.NullOr(Schema.String)
})
export type KeyScope = typeof KeyScope.Type

/** A key as the API shows it. */
export const Key = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  prefix: Schema.String,
  permissions: Schema.Array(Permission),
  scope: Schema.NullOr(KeyScope),
  subscription_id: Schema.NullOr(Schema.String),
  rental_id: Schema.NullOr(Schema.String),
  agent_id: Schema.optionalKey(Schema.String),
  created_at: Timestamp,
  last_used_at: Schema.NullOr(Timestamp),
  revoked_at: Schema.NullOr(Timestamp)
})
export type Key = typeof Key.Type

/** A key as POST /keys answers it: with its secret, returned this once. */
export const CreatedKey = Schema.Struct({ ...Key.fields, secret: Schema.String })
export type CreatedKey = typeof CreatedKey.Type

/** A key as the stores keep it: never the secret, only its hash. */
export interface KeyRecord {
  readonly id: KeyId
  readonly account_id: AccountId
  readonly name: string
  readonly prefix: string
  readonly secret_hash: string
  readonly permissions: ReadonlyArray<Permission>
  readonly machine_id: string | null
  readonly subscription_id: string | null
  readonly rental_id: string | null
  readonly agent_id: AgentId | null
  readonly created_at: Timestamp
  readonly last_used_at: Timestamp | null
  readonly revoked_at: Timestamp | null
}

export const toKey = (record: KeyRecord): Key => {
  const scoped = record.machine_id !== null || record.subscription_id !== null || record.rental_id !== null
  return {
    id: record.id,
    name: record.name,
    prefix: record.prefix,
    permissions: record.permissions,
    scope: scoped
      ? { machine_id: record.machine_id, subscription_id: record.subscription_id, rental_id: record.rental_id }
      : null,
    subscription_id: record.subscription_id,
    rental_id: record.rental_id,
    ...(record.agent_id === null ? {} : { agent_id: record.agent_id }),
    created_at: record.created_at,
    last_used_at: record.last_used_at,
    revoked_at: record.revoked_at
  }
}

/** A new secret: the service prefix and 32 random bytes (256 bits), base64url. */
export const generateSecret: Effect.Effect<string> = Effect.map(
  randomBytes(32),
  (bytes) => SECRET_PREFIX + base64url(bytes)
)

/** Up to this many characters are hashed synchronously (Sha256.ts), beyond by WebCrypto. */
const SYNC_HASH_MAX_CHARS = 4096

/**
 * Hex SHA-256 of a secret: what the stores keep and look keys up by (also used for request
 * fingerprints). A key secret is hashed synchronously in plain TypeScript (~2 µs, where
 * WebCrypto's asynchronous digest costs ~30 µs and a thread-pool hop on every call); long inputs
 * by WebCrypto. The digest is the same either way.
 */
export const hashSecret = (secret: string): Effect.Effect<string> =>
  secret.length <= SYNC_HASH_MAX_CHARS
    ? Effect.sync(() => sha256Hex(secret))
    : Effect.promise(async () => toHex(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(secret)))))

/** Whether a bearer value has the shape of one of our secrets (cheap check before any lookup). */
export const looksLikeSecret = (value: string): boolean =>
  value.startsWith(SECRET_PREFIX) && /^[A-Za-z0-9_-]{43}$/.test(value.slice(SECRET_PREFIX.length))
