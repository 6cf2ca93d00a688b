/**
 * In-memory implementations of the account, key and idempotency store ports, for tests and
 * property tests. They keep every rule the ports document, so a test on memory means the same as
 * a test on Postgres: unique ids and hashes (a duplicate insert is a defect, as a constraint
 * violation is in SQL), revoke sets revoked_at once, touch never moves last_used_at backwards,
 * claim is atomic. State lives in a Ref and each operation is a single `Ref.modify`, which is
 * what makes it atomic between fibers.
 */
import { Effect, Layer, Ref } from "effect"
import type { AccountRecord, KeyRecord } from "@model-platform/core/keys"
import { AccountStore, KeyStore } from "@model-platform/core/keys"
import {
  type ClaimResult,
  expiredBy,
  IdempotencyStore,
  type IdempotencyRecord,
  type StoredResponse
} from "@model-platform/core/http"

/** Runs `f` on the current state; it returns [result, next state] or a reason to die. */
type Step<S, A> = readonly [A, S] | { readonly defect: string }

const modifyOrDie = <S, A>(ref: Ref.Ref<S>, f: (state: S) => Step<S, A>): Effect.Effect<A> =>
  Ref.modify(ref, (state): readonly [Step<S, A>, S] => {
    const step = f(state)
    return "defect" in step ? [step, state] : [step, step[1]]
  }).pipe(Effect.flatMap((step) => "defect" in step ? Effect.die(new Error(step.defect)) : Effect.succeed(step[0])))

/** Earliest created_at first; among equal timestamps, the one inserted first. */
const byCreation = <T extends { readonly created_at: string }>(
  a: { readonly record: T; readonly seq: number },
  b: { readonly record: T; readonly seq: number }
): number =>
  a.record.created_at < b.record.created_at ? -1 : a.record.created_at > b.record.created_at ? 1 : a.seq - b.seq

interface Stored<T> {
  readonly record: T
  /** Insertion order, to break ties between equal created_at. */
  readonly seq: number
}

// ---------------------------------------------------------------------------------------------
// accounts

interface AccountState {
  readonly byId: ReadonlyMap<string, Stored<AccountRecord>>
  readonly emails: ReadonlySet<string>
  readonly seq: number
}

export const AccountStoreMemory: Layer.Layer<AccountStore> = Layer.effect(
  AccountStore,
  Effect.gen(function*() {
    const state = yield* Ref.make<AccountState>({ byId: new Map(), emails: new Set(), seq: 0 })

    const insert = (account: AccountRecord) =>
      modifyOrDie(state, (s): Step<AccountState, void> => {
        if (s.byId.has(account.id)) return { defect: `AccountStore.insert: duplicate account id ${account.id}` }
        if (s.emails.has(account.email)) return { defect: `AccountStore.insert: duplicate email ${account.email}` }
        return [undefined, {
          byId: new Map(s.byId).set(account.id, { record: { ...account }, seq: s.seq }),
          emails: new Set(s.emails).add(account.email),
          seq: s.seq + 1
        }]
      })

    const get = (id: string) => Effect.map(Ref.get(state), (s) => s.byId.get(id)?.record)

    const first = Effect.map(Ref.get(state), (s) => {
      let earliest: Stored<AccountRecord> | undefined
      for (const stored of s.byId.values()) {
        if (earliest === undefined || byCreation(stored, earliest) < 0) earliest = stored
      }
      return earliest?.record
    })

    const findByEmail = (email: string) =>
      Effect.map(Ref.get(state), (s) => [...s.byId.values()].find((stored) => stored.record.email === email)?.record)

    return AccountStore.of({ insert, get, findByEmail, first })
  })
)

// ---------------------------------------------------------------------------------------------
// keys

interface KeyState {
  readonly byId: ReadonlyMap<string, Stored<KeyRecord>>
  readonly idByHash: ReadonlyMap<string, string>
  readonly seq: number
}

const copyKey = (key: KeyRecord): KeyRecord => ({ ...key, permissions: [...key.permissions] })

export const KeyStoreMemory: Layer.Layer<KeyStore> = Layer.effect(
  KeyStore,
  Effect.gen(function*() {
    const state = yield* Ref.make<KeyState>({ byId: new Map(), idByHash: new Map(), seq: 0 })

    /** Replaces one stored key, keeping its insertion order. */
    const replace = (s: KeyState, stored: Stored<KeyRecord>, record: KeyRecord): KeyState => ({
      ...s,
      byId: new Map(s.byId).set(record.id, { record, seq: stored.seq })
    })

    const insert = (key: KeyRecord) =>
      modifyOrDie(state, (s): Step<KeyState, void> => {
        if (s.byId.has(key.id)) return { defect: `KeyStore.insert: duplicate key id ${key.id}` }
        if (s.idByHash.has(key.secret_hash)) return { defect: "KeyStore.insert: duplicate secret hash" }
        return [undefined, {
          byId: new Map(s.byId).set(key.id, { record: copyKey(key), seq: s.seq }),
          idByHash: new Map(s.idByHash).set(key.secret_hash, key.id),
          seq: s.seq + 1
        }]
      })

    const findByHash = (secretHash: string) =>
      Effect.map(Ref.get(state), (s) => {
        const id = s.idByHash.get(secretHash)
        return id === undefined ? undefined : s.byId.get(id)?.record
      })

    const ownedBy = (s: KeyState, accountId: string, keyId: string) => {
      const stored = s.byId.get(keyId)
      return stored !== undefined && stored.record.account_id === accountId ? stored : undefined
    }

    const get = (accountId: string, keyId: string) =>
      Effect.map(Ref.get(state), (s) => ownedBy(s, accountId, keyId)?.record)

    const list = (accountId: string) =>
      Effect.map(Ref.get(state), (s) =>
        Array.from(s.byId.values())
          .filter((stored) => stored.record.account_id === accountId)
          .sort(byCreation)
          .map((stored) => stored.record))

    const revoke = (accountId: string, keyId: string, at: string) =>
      Ref.modify(state, (s): readonly [KeyRecord | undefined, KeyState] => {
        const stored = ownedBy(s, accountId, keyId)
        if (stored === undefined) return [undefined, s]
        // Already revoked: the first revoked_at stays.
        if (stored.record.revoked_at !== null) return [stored.record, s]
        const revoked = { ...stored.record, revoked_at: at }
        return [revoked, replace(s, stored, revoked)]
      })

    const touch = (keyId: string, at: string) =>
      Ref.update(state, (s) => {
        const stored = s.byId.get(keyId)
        // Timestamps share one fixed ISO format, so comparing strings compares instants.
        if (stored === undefined || (stored.record.last_used_at !== null && stored.record.last_used_at >= at)) return s
        return replace(s, stored, { ...stored.record, last_used_at: at })
      })

    const findByPrefix = (prefix: string) =>
      Effect.map(Ref.get(state), (s) =>
        [...s.byId.values()].filter((stored) => stored.record.prefix === prefix).sort(byCreation).map((stored) => copyKey(stored.record)))

    return KeyStore.of({ insert, findByHash, findByPrefix, get, list, revoke, touch })
  })
)

// ---------------------------------------------------------------------------------------------
// idempotency records

const recordKey = (scope: string, key: string) => JSON.stringify([scope, key])

/** What the memory idempotency store holds, by (scope, key): a test may read it as a table. */
export type IdempotencyRecords = Ref.Ref<ReadonlyMap<string, IdempotencyRecord>>

/** The idempotency store over `state`. */
export const idempotencyStoreMemoryOn = (state: IdempotencyRecords): Layer.Layer<IdempotencyStore> =>
  Layer.sync(IdempotencyStore, () => {
    // A claim at `now` first removes every record expired by then (the port's 24 hours).
    const withoutExpired = (s: ReadonlyMap<string, IdempotencyRecord>, now: string) => {
      const cutoff = expiredBy(now)
      const kept = [...s].filter(([, record]) => record.created_at > cutoff)
      return kept.length === s.size ? s : new Map(kept)
    }

    const claim = (record: Omit<IdempotencyRecord, "response">) =>
      Ref.modify(state, (all): readonly [ClaimResult, ReadonlyMap<string, IdempotencyRecord>] => {
        const s = withoutExpired(all, record.created_at)
        const id = recordKey(record.scope, record.key)
        const existing = s.get(id)
        if (existing !== undefined) return [{ _tag: "Exists", record: existing }, s]
        const created: IdempotencyRecord = {
          scope: record.scope,
          key: record.key,
          fingerprint: record.fingerprint,
          created_at: record.created_at,
          response: undefined
        }
        return [{ _tag: "Claimed" }, new Map(s).set(id, created)]
      })

    const complete = (scope: string, key: string, response: StoredResponse) =>
      Ref.update(state, (s) => {
        const id = recordKey(scope, key)
        const existing = s.get(id)
        if (existing === undefined) return s
        return new Map(s).set(id, { ...existing, response: { status: response.status, body: response.body } })
      })

    // Only an unfinished claim is released: a late release must not erase a stored response.
    const release = (scope: string, key: string) =>
      Ref.update(state, (s) => {
        const id = recordKey(scope, key)
        const existing = s.get(id)
        if (existing === undefined || existing.response !== undefined) return s
        const next = new Map(s)
        next.delete(id)
        return next
      })

    return IdempotencyStore.of({ claim, complete, release })
  })

export const IdempotencyStoreMemory: Layer.Layer<IdempotencyStore> = Layer.unwrap(
  Effect.map(Ref.make<ReadonlyMap<string, IdempotencyRecord>>(new Map()), idempotencyStoreMemoryOn)
)

/** The three stores above, each with its own empty state. */
export const MemoryStores: Layer.Layer<AccountStore | KeyStore | IdempotencyStore> = Layer.mergeAll(
  AccountStoreMemory,
  KeyStoreMemory,
  IdempotencyStoreMemory
)
