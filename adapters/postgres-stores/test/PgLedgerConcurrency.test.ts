/**
 * The Ledger service on the Postgres store under concurrency, beyond the store contract: many
 * calls of one account at once — reserve on a pinned machine, another machine or none, then
 * settle (with and without the allocations `reserve` answered), settle above the reservation, void,
 * or leave it to expire — racing with new credits and expiry sweeps. Afterwards the money
 * invariants hold (docs/architecture.md "Money"): posted = entries and held = pending holds per scope (audit),
 * nothing pending or held, posted sums to credits added minus charged, pinned credits never below
 * zero, the account-wide scope below zero by at most the recorded excess; and nothing died (a
 * deadlock between the ledger functions would). On embedded PGlite (one connection) and, with
 * TEST_DATABASE_URL, on a PostgreSQL server (a pool: real row locks between connections). The
 * in-memory store runs the same scenario as the reference.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { generateId, toTimestamp } from "@model-platform/core/kernel"
import { Ledger, LedgerStore } from "@model-platform/core/ledger"
import { LedgerStoreMemory } from "@model-platform/memory-stores/MemoryLedgerStore"
import * as Database from "../src/database/Database.ts"
import { LedgerStorePg } from "../src/PgLedgerStore.ts"

const CREDIT = 1_000_000n

/** A small deterministic generator (mulberry32), so a failure replays. */
const random = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

const scenario = (seed: number, calls: number) =>
  Effect.gen(function*() {
    const ledger = yield* Ledger
    const store = yield* LedgerStore
    const next = random(seed)
    const account = yield* generateId("acct")
    const m1 = yield* generateId("machine")
    const m2 = yield* generateId("machine")
    let added = 0n
    const credit = (machine: string | null, amount: bigint) =>
      Effect.gen(function*() {
        const result = yield* ledger.credit(account, { ref: yield* generateId("order"), machine_id: machine, amount, type: "credit_added" })
        assert.strictEqual(result._tag, "Posted")
        added += amount
      })
    yield* credit(null, 40n * CREDIT)
    yield* credit(m1, 15n * CREDIT)

    let charged = 0n
    let excess = 0n
    let reserved = 0
    const past = toTimestamp(Date.UTC(2001, 0, 1))
    const future = toTimestamp(Date.UTC(2100, 0, 1))

    const call = (i: number) => {
      const r = next()
      const machine = r < 0.45 ? m1 : r < 0.8 ? m2 : null
      const amount = BigInt(1 + Math.floor(next() * 3_000_000))
      const ending = next()
      const actual = BigInt(Math.floor(Number(amount) * next() * 1.2))
      // One in ten is already past its expiry: the sweeps race to expire it.
      const expiresAt = next() < 0.1 ? past : future
      return Effect.gen(function*() {
        const result = yield* ledger.reserve(account, machine, amount, expiresAt)
        if (result._tag !== "Reserved") return
        reserved++
        const hint = { account_id: account, allocations: result.allocations }
        if (ending < 0.7) {
          const settled = yield* ledger.settle(result.ref, actual, i % 2 === 0 ? hint : undefined)
          if (settled._tag === "Settled") {
            charged += settled.charged
            excess += settled.excess
          } else {
            assert.strictEqual(expiresAt, past, `only an expired reservation may refuse settlement (${settled._tag})`)
          }
        } else if (ending < 0.9) {
          yield* ledger.void(result.ref)
        }
        // else: left pending; the last sweep below expires the ones in the past, the rest are voided.
        if (ending >= 0.9 && expiresAt === future) yield* ledger.void(result.ref)
      })
    }

    const others = [
      credit(m1, 3n * CREDIT),
      credit(null, 2n * CREDIT),
      credit(m2, 1n * CREDIT),
      ledger.expireDue,
      ledger.expireDue,
      ledger.expireDue
    ]
    yield* Effect.all(
      [...Array.from({ length: calls }, (_, i) => call(i)), ...others],
      { concurrency: 16, discard: true }
    )
    yield* ledger.expireDue

    assert.isAbove(reserved, calls / 4, "most calls got a reservation")
    assert.deepStrictEqual(yield* ledger.audit(account), [])
    assert.deepStrictEqual(yield* store.pending(account), [])
    const balances = yield* store.balances(account)
    let posted = 0n
    for (const b of balances) {
      assert.strictEqual(b.held, 0n, `held in ${b.machine_id ?? "account-wide"}`)
      posted += b.posted
      if (b.machine_id !== null) assert.isTrue(b.posted >= 0n, `pinned ${b.machine_id} overspent: ${b.posted}`)
      else assert.isTrue(b.posted >= -excess, `account-wide ${b.posted} below the recorded excess ${excess}`)
    }
    assert.strictEqual(posted, added - charged, "posted = added - charged")
  })

const suite = (name: string, store: Layer.Layer<LedgerStore, unknown>) =>
  layer(Ledger.layer.pipe(Layer.provideMerge(store)), { excludeTestServices: true, timeout: "60 seconds" })(
    name,
    (it) => {
      for (const seed of [1, 2, 3]) {
        it.effect(`concurrent reserves, settles, voids, expiries and credits keep the invariants (seed ${seed})`, () =>
          scenario(seed, 150), 60_000)
      }
    }
  )

suite("Ledger on the in-memory store", LedgerStoreMemory)

suite(
  "Ledger on LedgerStorePg, in-memory PGlite",
  LedgerStorePg.pipe(Layer.provide(Database.layer({ dataDir: Database.MEMORY })))
)

const databaseUrl = process.env["TEST_DATABASE_URL"]
describe.skipIf(databaseUrl === undefined)("on PostgreSQL (TEST_DATABASE_URL)", () => {
  if (databaseUrl !== undefined) {
    suite("Ledger on LedgerStorePg", LedgerStorePg.pipe(Layer.provide(Database.layer({ databaseUrl, dataDir: "unused" }))))
  }
})
