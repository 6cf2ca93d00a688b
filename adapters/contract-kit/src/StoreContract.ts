/**
 * The contract suites of the account, key and idempotency store ports. Every implementation
 * (memory, Postgres, DynamoDB...) runs them against its own layer, in the style of Effect's
 * KeyValueStoreTest: `accountStoreContract("memory", AccountStoreMemory)` declares the tests.
 *
 * The layer is built once per suite and shared by its tests, so every test works on fresh random
 * ids and never assumes an empty store: the suites can run against a persistent database that
 * earlier runs (or other suites) have written to.
 */
import { assert, describe, layer, type Vitest } from "@effect/vitest"
import { Effect, Exit, type Layer } from "effect"
import type { AccountRecord } from "@model-platform/core/keys"
import { AccountStore, type KeyRecord, KeyStore } from "@model-platform/core/keys"
import { generateId, toTimestamp } from "@model-platform/core/kernel"
import { IdempotencyStore, RETENTION_MS } from "@model-platform/core/http"
import { assertDies } from "./ContractSupport.ts"
import { at, randomHex, sampleKey } from "./SampleRecords.ts"

type Stores = AccountStore | KeyStore | IdempotencyStore

/** Store layers may open a database, which takes a few seconds on embedded Postgres. */
const layerOptions = { excludeTestServices: true, timeout: "60 seconds" } as const

// ---------------------------------------------------------------------------------------------
// fixtures

/** A fixed instant plus `ms`: explicit times keep the assertions exact. */


const makeAccount = Effect.fnUntraced(function*(overrides: Partial<AccountRecord> = {}) {
  const id = yield* generateId("acct")
  const account: AccountRecord = { id, email: `${id}@contract.test`, created_at: at(0), ...overrides }
  return account
})

const makeKey = Effect.fnUntraced(function*(accountId: string, overrides: Partial<KeyRecord> = {}) {
  return sampleKey(yield* generateId("key"), accountId, yield* randomHex, overrides)
})

/** Store failures are defects: a broken rule (a duplicate id) must die, not succeed or fail. */

const unbounded = { concurrency: "unbounded" } as const

// ---------------------------------------------------------------------------------------------
// AccountStore

const accountTests = (it: Vitest.MethodsNonLive<AccountStore>) =>
  describe("AccountStore", () => {
    it.effect("insert then get returns every field", () =>
      Effect.gen(function*() {
        const store = yield* AccountStore
        const account = yield* makeAccount({ created_at: at(1) })
        yield* store.insert(account)
        assert.deepStrictEqual(yield* store.get(account.id), account)
      }))

    it.effect("findByEmail answers the account with that email, undefined for an unknown email", () =>
      Effect.gen(function*() {
        const store = yield* AccountStore
        const account = yield* makeAccount({ created_at: at(2) })
        yield* store.insert(account)
        assert.deepStrictEqual(yield* store.findByEmail(account.email), account)
        assert.isUndefined(yield* store.findByEmail(`other-${account.email}`))
      }))

    it.effect("get of an unknown id is undefined", () =>
      Effect.gen(function*() {
        const store = yield* AccountStore
        assert.isUndefined(yield* store.get(yield* generateId("acct")))
      }))

    it.effect("a duplicate id is a defect and leaves the first account", () =>
      Effect.gen(function*() {
        const store = yield* AccountStore
        const account = yield* makeAccount()
        yield* store.insert(account)
        yield* assertDies(store.insert({ ...account, email: `other-${account.email}` }), "duplicate id")
        assert.deepStrictEqual(yield* store.get(account.id), account)
      }))

    it.effect("a duplicate email is a defect", () =>
      Effect.gen(function*() {
        const store = yield* AccountStore
        const account = yield* makeAccount()
        yield* store.insert(account)
        const other = yield* makeAccount({ email: account.email })
        yield* assertDies(store.insert(other), "duplicate email")
        assert.isUndefined(yield* store.get(other.id))
      }))

    it.effect("concurrent inserts of one id: exactly one succeeds", () =>
      Effect.gen(function*() {
        const store = yield* AccountStore
        const account = yield* makeAccount()
        const exits = yield* Effect.all(
          Array.from({ length: 10 }, (_, i) => Effect.exit(store.insert({ ...account, email: `${i}-${account.email}` }))),
          unbounded
        )
        assert.strictEqual(exits.filter(Exit.isSuccess).length, 1)
        assert.isDefined(yield* store.get(account.id))
      }))

    it.effect("first is the earliest created account, whatever the insertion order", () =>
      Effect.gen(function*() {
        const store = yield* AccountStore
        // The store may hold accounts from earlier runs: go a second before the current first.
        const current = yield* store.first
        const base = current === undefined ? Date.UTC(2000, 0, 1) : Date.parse(current.created_at) - 1000
        const later = yield* makeAccount({ created_at: toTimestamp(base + 500) })
        const earliest = yield* makeAccount({ created_at: toTimestamp(base) })
        yield* store.insert(later)
        yield* store.insert(earliest)
        assert.deepStrictEqual(yield* store.first, earliest)
      }))
  })

// ---------------------------------------------------------------------------------------------
// KeyStore

const keyTests = (it: Vitest.MethodsNonLive<KeyStore>) =>
  describe("KeyStore", () => {
    it.effect("insert then get and findByHash return every field (nulls, values, order)", () =>
      Effect.gen(function*() {
        const store = yield* KeyStore
        const accountId = yield* generateId("acct")
        const plain = yield* makeKey(accountId, { created_at: at(1) })
        const full = yield* makeKey(accountId, {
          name: "full: ünïcödé, 'quotes' and \"double\"",
          prefix: "mpk_0123456789",
          // Not the canonical order: the store keeps the order it was given.
          permissions: ["manage", "inference", "read", "datasets:write"],
          machine_id: "machine_1",
          subscription_id: "sub_1",
          rental_id: "rent_1",
          agent_id: "agent_1",
          created_at: at(2),
          last_used_at: at(3),
          revoked_at: at(4)
        })
        const none = yield* makeKey(accountId, { permissions: [], created_at: at(5) })
        for (const key of [plain, full, none]) {
          yield* store.insert(key)
          assert.deepStrictEqual(yield* store.get(accountId, key.id), key)
          assert.deepStrictEqual(yield* store.findByHash(key.secret_hash), key)
        }
      }))

    it.effect("findByPrefix answers every key with that prefix (revoked ones too, of any account), oldest first", () =>
      Effect.gen(function*() {
        const store = yield* KeyStore
        const prefix = `mpk_${(yield* randomHex).slice(0, 8)}`
        const older = yield* makeKey(yield* generateId("acct"), { prefix, created_at: at(1) })
        const newer = yield* makeKey(yield* generateId("acct"), { prefix, created_at: at(2) })
        const other = yield* makeKey(older.account_id, { prefix: `${prefix.slice(0, -1)}z`, created_at: at(3) })
        for (const key of [newer, other, older]) yield* store.insert(key)
        const revoked = yield* store.revoke(newer.account_id, newer.id, at(4))
        assert.deepStrictEqual(yield* store.findByPrefix(prefix), [older, revoked!])
        assert.deepStrictEqual(yield* store.findByPrefix(`${prefix.slice(0, -1)}y`), [])
      }))

    it.effect("unknown hash, unknown id and another account's key are undefined", () =>
      Effect.gen(function*() {
        const store = yield* KeyStore
        const key = yield* makeKey(yield* generateId("acct"))
        yield* store.insert(key)
        assert.isUndefined(yield* store.findByHash(yield* randomHex))
        assert.isUndefined(yield* store.get(key.account_id, yield* generateId("key")))
        assert.isUndefined(yield* store.get(yield* generateId("acct"), key.id))
      }))

    it.effect("a duplicate id or secret hash is a defect", () =>
      Effect.gen(function*() {
        const store = yield* KeyStore
        const key = yield* makeKey(yield* generateId("acct"))
        yield* store.insert(key)
        yield* assertDies(store.insert({ ...key, secret_hash: yield* randomHex }), "duplicate id")
        const sameHash = yield* makeKey(key.account_id, { secret_hash: key.secret_hash })
        yield* assertDies(store.insert(sameHash), "duplicate secret hash")
        assert.isUndefined(yield* store.get(key.account_id, sameHash.id))
        assert.deepStrictEqual(yield* store.findByHash(key.secret_hash), key)
        assert.deepStrictEqual(yield* store.list(key.account_id), [key])
      }))

    it.effect("concurrent inserts of one secret hash: exactly one succeeds", () =>
      Effect.gen(function*() {
        const store = yield* KeyStore
        const accountId = yield* generateId("acct")
        const hash = yield* randomHex
        const keys = yield* Effect.all(Array.from({ length: 10 }, () => makeKey(accountId, { secret_hash: hash })))
        const exits = yield* Effect.all(keys.map((key) => Effect.exit(store.insert(key))), unbounded)
        assert.strictEqual(exits.filter(Exit.isSuccess).length, 1)
        assert.strictEqual((yield* store.list(accountId)).length, 1)
      }))

    it.effect("list is per account, oldest first, revoked keys included", () =>
      Effect.gen(function*() {
        const store = yield* KeyStore
        const accountId = yield* generateId("acct")
        const otherId = yield* generateId("acct")
        const k1 = yield* makeKey(accountId, { created_at: at(1_000) })
        const k2 = yield* makeKey(accountId, { created_at: at(2_000), revoked_at: at(2_500) })
        const k3 = yield* makeKey(accountId, { created_at: at(3_000) })
        const other = yield* makeKey(otherId, { created_at: at(1_500) })
        // Inserted out of order: the list follows created_at, not insertion.
        for (const key of [k3, other, k1, k2]) yield* store.insert(key)
        assert.deepStrictEqual(yield* store.list(accountId), [k1, k2, k3])
        assert.deepStrictEqual(yield* store.list(otherId), [other])
        assert.deepStrictEqual(yield* store.list(yield* generateId("acct")), [])
      }))

    it.effect("revoke sets revoked_at once and returns the key afterwards", () =>
      Effect.gen(function*() {
        const store = yield* KeyStore
        const key = yield* makeKey(yield* generateId("acct"))
        yield* store.insert(key)
        const revoked = { ...key, revoked_at: at(10) }
        assert.deepStrictEqual(yield* store.revoke(key.account_id, key.id, at(10)), revoked)
        // A second revoke, later or earlier, keeps the first revoked_at.
        assert.deepStrictEqual(yield* store.revoke(key.account_id, key.id, at(20)), revoked)
        assert.deepStrictEqual(yield* store.revoke(key.account_id, key.id, at(5)), revoked)
        assert.deepStrictEqual(yield* store.get(key.account_id, key.id), revoked)
        assert.deepStrictEqual(yield* store.findByHash(key.secret_hash), revoked)
      }))

    it.effect("revoke of an unknown key or of another account's key is undefined and changes nothing", () =>
      Effect.gen(function*() {
        const store = yield* KeyStore
        const key = yield* makeKey(yield* generateId("acct"))
        yield* store.insert(key)
        assert.isUndefined(yield* store.revoke(key.account_id, yield* generateId("key"), at(10)))
        assert.isUndefined(yield* store.revoke(yield* generateId("acct"), key.id, at(10)))
        assert.deepStrictEqual(yield* store.get(key.account_id, key.id), key)
      }))

    it.effect("concurrent revokes: one revoked_at wins and every caller sees it", () =>
      Effect.gen(function*() {
        const store = yield* KeyStore
        const key = yield* makeKey(yield* generateId("acct"))
        yield* store.insert(key)
        const times = Array.from({ length: 20 }, (_, i) => at(100 + i))
        const results = yield* Effect.all(times.map((t) => store.revoke(key.account_id, key.id, t)), unbounded)
        const winner = results[0]?.revoked_at
        assert.isTrue(winner !== undefined && winner !== null && times.includes(winner))
        for (const result of results) assert.deepStrictEqual(result, { ...key, revoked_at: winner ?? null })
        assert.deepStrictEqual(yield* store.get(key.account_id, key.id), { ...key, revoked_at: winner ?? null })
      }))

    it.effect("touch moves last_used_at forward only and changes nothing else", () =>
      Effect.gen(function*() {
        const store = yield* KeyStore
        const key = yield* makeKey(yield* generateId("acct"))
        yield* store.insert(key)
        const lastUsed = Effect.map(store.get(key.account_id, key.id), (k) => k?.last_used_at)
        yield* store.touch(key.id, at(2_000))
        assert.strictEqual(yield* lastUsed, at(2_000))
        yield* store.touch(key.id, at(1_000))
        assert.strictEqual(yield* lastUsed, at(2_000))
        yield* store.touch(key.id, at(2_001))
        assert.deepStrictEqual(yield* store.get(key.account_id, key.id), { ...key, last_used_at: at(2_001) })
        // Touching an unknown key is not an error.
        yield* store.touch(yield* generateId("key"), at(3_000))
      }))

    it.effect("concurrent touches keep the latest", () =>
      Effect.gen(function*() {
        const store = yield* KeyStore
        const key = yield* makeKey(yield* generateId("acct"))
        yield* store.insert(key)
        const times = Array.from({ length: 20 }, (_, i) => at(((i * 7) % 20) * 1_000))
        yield* Effect.all(times.map((t) => store.touch(key.id, t)), unbounded)
        assert.strictEqual((yield* store.get(key.account_id, key.id))?.last_used_at, at(19_000))
      }))
  })

// ---------------------------------------------------------------------------------------------
// IdempotencyStore

const idempotencyTests = (it: Vitest.MethodsNonLive<IdempotencyStore>) =>
  describe("IdempotencyStore", () => {
    const fresh = Effect.gen(function*() {
      return { scope: yield* generateId("acct"), key: yield* generateId("idem") }
    })

    it.effect("claim, then a second claim sees the first record", () =>
      Effect.gen(function*() {
        const store = yield* IdempotencyStore
        const { scope, key } = yield* fresh
        assert.deepStrictEqual(yield* store.claim({ scope, key, fingerprint: "fp-1", created_at: at(1) }), {
          _tag: "Claimed"
        })
        // Another fingerprint under the same key: the store reports the first record as it is.
        assert.deepStrictEqual(yield* store.claim({ scope, key, fingerprint: "fp-2", created_at: at(2) }), {
          _tag: "Exists",
          record: { scope, key, fingerprint: "fp-1", created_at: at(1), response: undefined }
        })
      }))

    it.effect("a key is claimed per scope", () =>
      Effect.gen(function*() {
        const store = yield* IdempotencyStore
        const { scope, key } = yield* fresh
        const otherScope = yield* generateId("acct")
        assert.strictEqual((yield* store.claim({ scope, key, fingerprint: "a", created_at: at(1) }))._tag, "Claimed")
        assert.strictEqual(
          (yield* store.claim({ scope: otherScope, key, fingerprint: "b", created_at: at(1) }))._tag,
          "Claimed"
        )
      }))

    it.effect("complete stores the response and a later claim returns it", () =>
      Effect.gen(function*() {
        const store = yield* IdempotencyStore
        const { scope, key } = yield* fresh
        yield* store.claim({ scope, key, fingerprint: "fp", created_at: at(1) })
        const response = { status: 201, body: JSON.stringify({ id: "x", note: "ünïcödé \u{1F600}" }) }
        yield* store.complete(scope, key, response)
        assert.deepStrictEqual(yield* store.claim({ scope, key, fingerprint: "fp", created_at: at(2) }), {
          _tag: "Exists",
          record: { scope, key, fingerprint: "fp", created_at: at(1), response }
        })
        // A release after completion does not erase the stored response.
        yield* store.release(scope, key)
        const again = yield* store.claim({ scope, key, fingerprint: "fp", created_at: at(3) })
        assert.deepStrictEqual(again, { _tag: "Exists", record: { scope, key, fingerprint: "fp", created_at: at(1), response } })
      }))

    it.effect("an empty body round-trips", () =>
      Effect.gen(function*() {
        const store = yield* IdempotencyStore
        const { scope, key } = yield* fresh
        yield* store.claim({ scope, key, fingerprint: "fp", created_at: at(1) })
        yield* store.complete(scope, key, { status: 200, body: "" })
        const result = yield* store.claim({ scope, key, fingerprint: "fp", created_at: at(2) })
        assert.deepStrictEqual(result._tag === "Exists" ? result.record.response : undefined, { status: 200, body: "" })
      }))

    it.effect("release allows a new claim", () =>
      Effect.gen(function*() {
        const store = yield* IdempotencyStore
        const { scope, key } = yield* fresh
        yield* store.claim({ scope, key, fingerprint: "fp-1", created_at: at(1) })
        yield* store.release(scope, key)
        assert.deepStrictEqual(yield* store.claim({ scope, key, fingerprint: "fp-2", created_at: at(2) }), {
          _tag: "Claimed"
        })
        assert.deepStrictEqual(yield* store.claim({ scope, key, fingerprint: "fp-3", created_at: at(3) }), {
          _tag: "Exists",
          record: { scope, key, fingerprint: "fp-2", created_at: at(2), response: undefined }
        })
      }))

    it.effect("complete and release of an unknown record do nothing", () =>
      Effect.gen(function*() {
        const store = yield* IdempotencyStore
        const { scope, key } = yield* fresh
        yield* store.complete(scope, key, { status: 200, body: "{}" })
        yield* store.release(scope, key)
        assert.deepStrictEqual(yield* store.claim({ scope, key, fingerprint: "fp", created_at: at(1) }), {
          _tag: "Claimed"
        })
      }))

    it.effect("a record is kept 24 hours: a claim before then finds it, a claim at 24 hours replaces it", () =>
      Effect.gen(function*() {
        const store = yield* IdempotencyStore
        const { scope, key } = yield* fresh
        const response = { status: 200, body: "v1.sealed" }
        yield* store.claim({ scope, key, fingerprint: "fp-1", created_at: at(0) })
        yield* store.complete(scope, key, response)
        assert.deepStrictEqual(yield* store.claim({ scope, key, fingerprint: "fp-2", created_at: at(RETENTION_MS - 1) }), {
          _tag: "Exists",
          record: { scope, key, fingerprint: "fp-1", created_at: at(0), response }
        })
        assert.deepStrictEqual(yield* store.claim({ scope, key, fingerprint: "fp-2", created_at: at(RETENTION_MS) }), {
          _tag: "Claimed"
        })
        // The new record is the key's record now: unfinished, and released as any claim.
        assert.deepStrictEqual(yield* store.claim({ scope, key, fingerprint: "fp-3", created_at: at(RETENTION_MS + 1) }), {
          _tag: "Exists",
          record: { scope, key, fingerprint: "fp-2", created_at: at(RETENTION_MS), response: undefined }
        })
        yield* store.release(scope, key)
        assert.strictEqual((yield* store.claim({ scope, key, fingerprint: "fp-4", created_at: at(RETENTION_MS + 2) }))._tag, "Claimed")
      }))

    it.effect("an unfinished claim expires after 24 hours too", () =>
      Effect.gen(function*() {
        const store = yield* IdempotencyStore
        const { scope, key } = yield* fresh
        yield* store.claim({ scope, key, fingerprint: "fp-1", created_at: at(0) })
        assert.deepStrictEqual(yield* store.claim({ scope, key, fingerprint: "fp-2", created_at: at(RETENTION_MS) }), {
          _tag: "Claimed"
        })
      }))

    it.effect("concurrent claims of an expired record: exactly one replaces it, the others see the new record", () =>
      Effect.gen(function*() {
        const store = yield* IdempotencyStore
        const { scope, key } = yield* fresh
        yield* store.claim({ scope, key, fingerprint: "old", created_at: at(0) })
        yield* store.complete(scope, key, { status: 200, body: "v1.old" })
        const results = yield* Effect.all(
          Array.from({ length: 20 }, (_, i) => store.claim({ scope, key, fingerprint: `fp-${i}`, created_at: at(RETENTION_MS + i) })),
          unbounded
        )
        const winners = results.flatMap((result, i) => result._tag === "Claimed" ? [i] : [])
        assert.strictEqual(winners.length, 1)
        const winner = winners[0] ?? -1
        const record = { scope, key, fingerprint: `fp-${winner}`, created_at: at(RETENTION_MS + winner), response: undefined }
        for (const result of results) {
          if (result._tag === "Exists") assert.deepStrictEqual(result.record, record)
        }
      }))

    it.effect("concurrent claims of one key: exactly one is Claimed, the others see its record", () =>
      Effect.gen(function*() {
        const store = yield* IdempotencyStore
        const { scope, key } = yield* fresh
        const results = yield* Effect.all(
          Array.from({ length: 20 }, (_, i) => store.claim({ scope, key, fingerprint: `fp-${i}`, created_at: at(i) })),
          unbounded
        )
        const winners = results.flatMap((result, i) => result._tag === "Claimed" ? [i] : [])
        assert.strictEqual(winners.length, 1)
        const winner = winners[0] ?? -1
        const record = { scope, key, fingerprint: `fp-${winner}`, created_at: at(winner), response: undefined }
        for (const result of results) {
          if (result._tag === "Exists") assert.deepStrictEqual(result.record, record)
        }
      }))
  })

// ---------------------------------------------------------------------------------------------
// KeyStore.findCaller (optional), beside the AccountStore it reads

const callerTests = (it: Vitest.MethodsNonLive<AccountStore | KeyStore>) =>
  describe("KeyStore.findCaller (when the store has it)", () => {
    it.effect("answers what findByHash and AccountStore.get answer: key and account, revoked, no account, unknown", () =>
      Effect.gen(function*() {
        const keys = yield* KeyStore
        const accounts = yield* AccountStore
        const findCaller = keys.findCaller
        if (findCaller === undefined) return
        const account = yield* makeAccount()
        yield* accounts.insert(account)
        const key = yield* makeKey(account.id, {
          permissions: ["manage", "inference"],
          machine_id: "machine_1",
          agent_id: "agent_1",
          last_used_at: at(3)
        })
        const revoked = yield* makeKey(account.id, { revoked_at: at(4) })
        const orphan = yield* makeKey(yield* generateId("acct"))
        for (const k of [key, revoked, orphan]) yield* keys.insert(k)
        assert.deepStrictEqual(yield* findCaller(key.secret_hash), { key, account })
        assert.deepStrictEqual(yield* findCaller(revoked.secret_hash), { key: revoked, account })
        assert.deepStrictEqual(yield* findCaller(orphan.secret_hash), { key: orphan, account: undefined })
        assert.isUndefined(yield* findCaller(yield* randomHex))
        // It reads the key as it is now: a revocation bites on the next call.
        yield* keys.revoke(account.id, key.id, at(5))
        assert.deepStrictEqual(yield* findCaller(key.secret_hash), { key: { ...key, revoked_at: at(5) }, account })
      }))
  })

// ---------------------------------------------------------------------------------------------
// suites

export const accountStoreContract = <E>(name: string, storeLayer: Layer.Layer<AccountStore, E>): void =>
  layer(storeLayer, layerOptions)(name, accountTests)

export const keyStoreContract = <E>(name: string, storeLayer: Layer.Layer<KeyStore, E>): void =>
  layer(storeLayer, layerOptions)(name, keyTests)

export const idempotencyStoreContract = <E>(name: string, storeLayer: Layer.Layer<IdempotencyStore, E>): void =>
  layer(storeLayer, layerOptions)(name, idempotencyTests)

/** All three suites on one layer, built once (one database for all of them). */
export const allStoreContracts = <E>(name: string, storeLayer: Layer.Layer<Stores, E>): void =>
  layer(storeLayer, layerOptions)(name, (it) => {
    accountTests(it)
    keyTests(it)
    callerTests(it)
    idempotencyTests(it)
  })
