/**
 * Use-case: API keys. Authenticating a bearer secret, creating keys under the granting rule,
 * listing and revoking them. The HTTP layer calls these; stores only keep records.
 */
import { Context, Effect, Layer, Schema } from "effect"
import type { Caller } from "./Caller.ts"
import { Catalogue } from "../catalogue/Catalogue.ts"
import { keyError, type KeyErrorOf } from "./KeyErrors.ts"
import { type CreatedKey, generateSecret, hashSecret, type Key, type KeyRecord, looksLikeSecret, SECRET_PREFIX, toKey, VISIBLE_PREFIX_LENGTH } from "./Keys.ts"
import { type AccountId, generateId, type KeyId } from "../kernel/Ids.ts"
import { DEFAULT_PERMISSIONS, normalize, type Permission, ungrantable } from "./Permissions.ts"
import { AccountStore } from "./AccountStore.ts"
import { KeyStore } from "./KeyStore.ts"
import { ScopeTargets } from "./ScopeTargets.ts"
import { requireWithin, scopeOf } from "./KeyScope.ts"
import * as Time from "../kernel/Time.ts"
import { accountTeller } from "../kernel/AccountNotices.ts"
import { noteAccount } from "../observability/Requests.ts"

export interface CreateKeyInput {
  readonly name: string
  readonly permissions?: ReadonlyArray<Permission> | undefined
  readonly machine_id?: string | null | undefined
  readonly subscription_id?: string | null | undefined
  readonly rental_id?: string | null | undefined
}

/**
 * A secret handed in from outside (the owner key an operator made beforehand) does not have the
 * shape of a key secret. The message never contains the value.
 */
export class MalformedSecret extends Schema.TaggedError<MalformedSecret>()("MalformedSecret", {
  message: Schema.String
}) {}

/** last_used_at is written at most once per this many milliseconds per key (docs/api-decisions.md). */
export const TOUCH_INTERVAL_MS = 1000

/** How long `identify` answers a caller from memory, and for how many secrets at most. */
export const IDENTIFY_CACHE_MS = 60_000
export const IDENTIFY_CACHE_SIZE = 10_000

/** Why a bearer secret names no caller. */
type Unauthenticated = "missing_api_key" | "invalid_api_key"

export class ApiKeys extends Context.Service<ApiKeys, {
  /**
   * The caller behind a bearer secret, or 401 missing_api_key / invalid_api_key. Records the use.
   * What stands behind a live key (its agent, plan or rental) is the surfaces' to check next
   * (gateway/KeyStanding.ts: the authentication middleware, the file routes, the gateway).
   */
  readonly authenticate: (secret: string) => Effect.Effect<Caller, KeyErrorOf<Unauthenticated>>
  /**
   * For the inference gateway's hot path: as `authenticate`, but without recording the use, and
   * answered from memory for up to IDENTIFY_CACHE_MS after the store was read (a key's fields
   * never change, only revoked_at and last_used_at). A revocation by another process is
   * therefore not seen here: the caller must confirm the key is live in the store step that
   * admits the call (GatewayStore.admit does, and records the use) and `forget` it when not.
   * A revocation through this service is seen at once.
   */
  readonly identify: (secret: string) => Effect.Effect<Caller, KeyErrorOf<Unauthenticated>>
  /** Drops a key from identify's memory (it was found revoked). */
  readonly forget: (keyId: KeyId) => Effect.Effect<void>
  readonly create: (
    caller: Caller,
    input: CreateKeyInput
  ) => Effect.Effect<
    CreatedKey,
    KeyErrorOf<"key_lacks_permission" | "key_scope_too_narrow" | "scopes_conflict" | "machine_not_found" | "subscription_not_found" | "rental_not_found">
  >
  /**
   * Creates a key for an account directly: the owner's first key at first start, and an agent's
   * keys (`agent_id`: the agents use-cases check the agent first).
   */
  readonly issue: (
    accountId: AccountId,
    input: CreateKeyInput & { readonly permissions: ReadonlyArray<Permission>; readonly agent_id?: string | undefined }
  ) => Effect.Effect<CreatedKey>
  /**
   * Like `issue`, but with a secret made beforehand (by `generateSecret`, elsewhere) instead of a
   * fresh one: the owner's first key on shells without a terminal to print it on (Lambda). The
   * secret must look like one of ours; only its hash is stored.
   */
  readonly issueWithSecret: (
    accountId: AccountId,
    secret: string,
    input: CreateKeyInput & { readonly permissions: ReadonlyArray<Permission> }
  ) => Effect.Effect<CreatedKey, MalformedSecret>
  readonly list: (caller: Caller) => Effect.Effect<ReadonlyArray<Key>>
  readonly revoke: (caller: Caller, keyId: KeyId) => Effect.Effect<{ id: string; revoked: true }, KeyErrorOf<"key_not_found" | "key_scope_too_narrow">>
}>()("@model-platform/core/keys/ApiKeys") {
  static readonly layer = Layer.effect(
    ApiKeys,
    Effect.gen(function*() {
      // A revocation is told to this process's followers at once (credit leases close: gateway/Leases.ts).
      const tell = yield* accountTeller
      const keys = yield* KeyStore
      const accounts = yield* AccountStore
      const catalogue = yield* Catalogue
      const { machineOf } = yield* ScopeTargets

      const invalid = (message: string) => keyError("invalid_api_key", message)

      /** The key behind a secret hash and its account: one read where the store can join them. */
      const findCaller = keys.findCaller ?? ((secretHash: string) =>
        Effect.flatMap(keys.findByHash(secretHash), (key) =>
          key === undefined
            ? Effect.succeed(undefined)
            : key.revoked_at !== null // refused anyway: no need to read the account
            ? Effect.succeed({ key, account: undefined })
            : Effect.map(accounts.get(key.account_id), (account) => ({ key, account }))))

      /** The hash of a well-formed secret, or 401 missing_api_key / invalid_api_key. */
      const secretHash = (secret: string) => {
        if (secret.length === 0) {
          return keyError("missing_api_key", "No API key: send it as `Authorization: Bearer <API_KEY>`.")
        }
        if (!looksLikeSecret(secret)) return invalid("The API key is malformed.")
        return hashSecret(secret)
      }

      /** The live key behind a secret hash and its account, read from the store. */
      const lookup = Effect.fnUntraced(function*(hash: string) {
        const found = yield* findCaller(hash)
        if (found === undefined) return yield* invalid("The API key is not known.")
        const { key, account } = found
        if (key.revoked_at !== null) return yield* invalid("The API key was revoked.")
        if (account === undefined) return yield* invalid("The API key's account no longer exists.")
        return { key, account } satisfies Caller
      })

      // identify's memory: secret hash -> caller and when it was read (insertion order = age).
      const identified = new Map<string, { readonly caller: Caller; readonly at: number }>()
      const forgetKey = (keyId: KeyId) => {
        for (const [hash, entry] of identified) if (entry.caller.key.id === keyId) identified.delete(hash)
      }

      const identify = Effect.fn("ApiKeys.identify")(function*(secret: string) {
        const hash = yield* secretHash(secret)
        const now = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
        const known = identified.get(hash)
        if (known !== undefined && now - known.at < IDENTIFY_CACHE_MS) {
          yield* noteAccount(known.caller.account.id)
          return known.caller
        }
        const caller = yield* lookup(hash)
        yield* noteAccount(caller.account.id)
        identified.delete(hash)
        if (identified.size >= IDENTIFY_CACHE_SIZE) identified.delete(identified.keys().next().value!)
        identified.set(hash, { caller, at: now })
        return caller
      })

      const authenticate = Effect.fn("ApiKeys.authenticate")(function*(secret: string) {
        const { key, account } = yield* lookup(yield* secretHash(secret))
        // The request's access line names the account (observability/Requests.ts), never the key.
        yield* noteAccount(account.id)
        const millis = yield* Effect.clockWith((clock) => clock.currentTimeMillis)
        const last = key.last_used_at === null ? 0 : Date.parse(key.last_used_at)
        const now = Time.toTimestamp(millis)
        if (millis - last >= TOUCH_INTERVAL_MS) yield* keys.touch(key.id, now)
        return { key: { ...key, last_used_at: now }, account } satisfies Caller
      })

      const issueKey = Effect.fnUntraced(function*(
        accountId: AccountId,
        secret: string,
        input: CreateKeyInput & { readonly permissions: ReadonlyArray<Permission>; readonly agent_id?: string | undefined }
      ) {
        const record: KeyRecord = {
          id: yield* generateId("key"),
          account_id: accountId,
          name: input.name,
          prefix: secret.slice(0, VISIBLE_PREFIX_LENGTH),
          secret_hash: yield* hashSecret(secret),
          permissions: normalize(input.permissions),
          machine_id: input.machine_id ?? null,
          subscription_id: input.subscription_id ?? null,
          rental_id: input.rental_id ?? null,
          agent_id: input.agent_id ?? null,
          created_at: yield* Time.now,
          last_used_at: null,
          revoked_at: null
        }
        yield* keys.insert(record)
        return { ...toKey(record), secret }
      })

      const issue = Effect.fn("ApiKeys.issue")(function*(
        accountId: AccountId,
        input: CreateKeyInput & { readonly permissions: ReadonlyArray<Permission>; readonly agent_id?: string | undefined }
      ) {
        return yield* issueKey(accountId, yield* generateSecret, input)
      })

      const issueWithSecret = Effect.fn("ApiKeys.issueWithSecret")(function*(
        accountId: AccountId,
        secret: string,
        input: CreateKeyInput & { readonly permissions: ReadonlyArray<Permission> }
      ) {
        if (!looksLikeSecret(secret)) {
          return yield* new MalformedSecret({
            message: `The key secret does not have the shape of a platform secret (${SECRET_PREFIX} and 43 base64url characters).`
          })
        }
        return yield* issueKey(accountId, secret, input)
      })

      const create = Effect.fn("ApiKeys.create")(function*(caller: Caller, input: CreateKeyInput) {
        const permissions = input.permissions ?? DEFAULT_PERMISSIONS
        const missing = ungrantable(caller.key.permissions, permissions)
        if (missing.length > 0) {
          return yield* keyError(
            "key_lacks_permission",
            `A key can only grant permissions it holds; this key lacks ${missing.join(", ")}.`,
            missing[0]
          )
        }
        const scopes = [input.machine_id, input.subscription_id, input.rental_id].filter((s) => s != null)
        if (scopes.length > 1) {
          return yield* keyError(
            "scopes_conflict",
            "A key can be scoped by at most one of machine_id, subscription_id and rental_id."
          )
        }
        // A scoped key makes keys of its own scope only (KeyScope.ts), else it could escape it.
        yield* requireWithin(machineOf, caller, {
          _tag: "Key",
          scope: scopeOf({ machine_id: input.machine_id ?? null, subscription_id: input.subscription_id ?? null, rental_id: input.rental_id ?? null })
        })
        if (input.machine_id != null && catalogue.machineConfig(input.machine_id) === undefined) {
          return yield* keyError("machine_not_found", `No machine "${input.machine_id}".`)
        }
        // A plan or a rental of the caller's account (ended ones too: their keys are refused on every
        // surface, 403 subscription_inactive or rental_ended: gateway/KeyStanding.ts).
        if (input.subscription_id != null && (yield* machineOf(caller.account.id, { _tag: "Subscription", id: input.subscription_id })) === undefined) {
          return yield* keyError("subscription_not_found", `No subscription "${input.subscription_id}" in this account.`)
        }
        if (input.rental_id != null && (yield* machineOf(caller.account.id, { _tag: "Rental", id: input.rental_id })) === undefined) {
          return yield* keyError("rental_not_found", `No rental "${input.rental_id}" in this account.`)
        }
        return yield* issue(caller.account.id, { ...input, permissions })
      })

      return ApiKeys.of({
        authenticate,
        identify,
        forget: (keyId) => Effect.sync(() => forgetKey(keyId)),
        create,
        issue,
        issueWithSecret,
        list: (caller) => Effect.map(keys.list(caller.account.id), (records) => records.map(toKey)),
        revoke: Effect.fn("ApiKeys.revoke")(function*(caller: Caller, keyId: KeyId) {
          const notFound = keyError("key_not_found", `No key "${keyId}".`)
          if (scopeOf(caller.key)._tag !== "Account") {
            const target = yield* keys.get(caller.account.id, keyId)
            if (target === undefined) return yield* notFound
            yield* requireWithin(machineOf, caller, { _tag: "Key", scope: scopeOf(target) })
          }
          const revoked = yield* keys.revoke(caller.account.id, keyId, yield* Time.now)
          if (revoked === undefined) return yield* notFound
          forgetKey(revoked.id)
          yield* tell(caller.account.id)
          return { id: revoked.id, revoked: true as const }
        })
      })
    })
  )
}
