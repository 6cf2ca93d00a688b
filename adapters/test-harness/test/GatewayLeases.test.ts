/**
 * Credit leases at the gateway (docs/performance.md "Credit leases", core/src/gateway/Leases.ts),
 * on the memory stores with notices that reach every follower (one process): calls of one key are
 * admitted from its lease, one admission store step for many calls; each answered call is charged
 * exactly once, and the next lease is taken ahead at half spent; calls arriving together wait
 * for one lease; nothing is held once the process
 * stops; a revocation elsewhere refuses the key's
 * calls from its notice; a call the machine refuses gives its draw back; near the end of the
 * balance, calls reserve alone; the rpm limit holds with the hits taken ahead; a process killed
 * with calls drawn and not metered is charged for them, once, when its journal is replayed.
 */
import { AccountNotices } from "@model-platform/core/kernel"
import { KeyStore } from "@model-platform/core/keys"
import { Gateway } from "@model-platform/core/gateway"
import { LedgerStore } from "@model-platform/core/ledger"
import { UsageStore } from "@model-platform/core/billing"
import { Deferred, Effect, Exit } from "effect"
import { describe, expect, it } from "vitest"
import { makeMemoryJournal, openOf } from "@model-platform/memory-stores/MemoryMeteringJournal"
import { newKey } from "./gatewayStub.ts"
import { buildStores, callOnce, COST, CREDIT, inProcessNotices, leasingGateway, pricedGateway } from "./pricedGateway.ts"

const ledgerOf = (accountId: string) =>
  Effect.gen(function*() {
    const scopes = yield* (yield* LedgerStore).balances(accountId)
    const records = yield* (yield* UsageStore).list({ account_id: accountId, from: "2000-01-01T00:00:00.000Z", to: "2100-01-01T00:00:00.000Z" })
    return {
      posted: scopes.reduce((n, s) => n + s.posted, 0n),
      held: scopes.reduce((n, s) => n + s.held, 0n),
      records: records.length,
      charged: records.reduce((n, r) => n + r.credits, 0n)
    }
  })

const idle = Effect.flatMap(Gateway, (g) => g.idle)

describe("credit leases at the gateway", () => {
  it("calls of one key share a lease: one admission step for up to 16 calls, the next taken ahead, each charged once, nothing held once stopped", async () => {
    const stores = await buildStores()
    const { counted, runtime } = leasingGateway(stores)
    const { accountId, auth } = await runtime.runPromise(newKey(CREDIT))
    // A lease takes 16 rpm hits ahead (rpm / 8, at most 16). Half spent, fast, it has its
    // successor taken in the background: by the 8th call's end there are two.
    for (let i = 0; i < 8; i++) expect(Exit.isSuccess(await runtime.runPromise(callOnce(auth)))).toBe(true)
    await runtime.runPromise(idle)
    expect(counted.admits).toBe(2)
    // The successor lends once the first is out of hits: 20 calls, still two leases.
    for (let i = 8; i < 20; i++) expect(Exit.isSuccess(await runtime.runPromise(callOnce(auth)))).toBe(true)
    await runtime.runPromise(idle)
    expect(counted.admits).toBe(2)
    const during = await runtime.runPromise(ledgerOf(accountId))
    expect(during).toMatchObject({ posted: CREDIT - 20n * COST, records: 20, charged: 20n * COST })
    expect(during.held).toBeGreaterThan(0n) // the open lease
    await runtime.dispose()
    const after = await Effect.runPromise(Effect.provide(ledgerOf(accountId), stores))
    expect(after).toEqual({ posted: CREDIT - 20n * COST, held: 0n, records: 20, charged: 20n * COST })
  })

  it("calls of one key arriving together wait for the lease one of them takes, rather than each take one", async () => {
    // One lease for the 16, and its successor, taken ahead when the 8th drew.
    const stores = await buildStores()
    const { counted, runtime } = leasingGateway(stores)
    try {
      const { accountId, auth } = await runtime.runPromise(newKey(CREDIT))
      const exits = await runtime.runPromise(Effect.all(Array.from({ length: 16 }, () => callOnce(auth)), { concurrency: "unbounded" }))
      expect(exits.every(Exit.isSuccess)).toBe(true)
      await runtime.runPromise(idle)
      expect(counted.admits).toBe(2)
      await runtime.runPromise(idle)
      expect(await runtime.runPromise(ledgerOf(accountId))).toMatchObject({ records: 16, charged: 16n * COST })
    } finally {
      await runtime.dispose()
    }
  })

  it("a key revoked elsewhere is refused from its account's notice", async () => {
    const stores = await buildStores()
    const { counted, runtime } = leasingGateway(stores)
    try {
      const { accountId, auth, keyId } = await runtime.runPromise(newKey(CREDIT))
      expect(Exit.isSuccess(await runtime.runPromise(callOnce(auth)))).toBe(true)
      // Another process revokes the key: this one's memory of it and its lease do not know yet.
      await runtime.runPromise(Effect.flatMap(KeyStore, (keys) => keys.revoke(accountId, keyId as never, new Date().toISOString() as never)))
      expect(Exit.isSuccess(await runtime.runPromise(callOnce(auth)))).toBe(true)
      expect(counted.admits).toBe(1)
      // Its notice arrives: the lease closes, and the next call is refused by the store step.
      await runtime.runPromise(Effect.flatMap(AccountNotices, (n) => n.tell(accountId)))
      const refused = await runtime.runPromise(callOnce(auth))
      expect(Exit.isFailure(refused) && JSON.stringify(refused.cause)).toContain("key_revoked")
      await runtime.runPromise(idle)
      expect(await runtime.runPromise(ledgerOf(accountId))).toMatchObject({ records: 2, charged: 2n * COST })
    } finally {
      await runtime.dispose()
    }
  })

  it("a call its machine refuses gives its draw back, and is not charged", async () => {
    const stores = await buildStores()
    const { counted, runtime } = leasingGateway(stores)
    try {
      const { accountId, auth } = await runtime.runPromise(newKey(CREDIT))
      for (const extra of [{}, { user: "bad" }, {}, { user: "bad" }, {}]) await runtime.runPromise(callOnce(auth, extra))
      await runtime.runPromise(idle)
      expect(counted.admits).toBe(1)
      expect(await runtime.runPromise(ledgerOf(accountId))).toMatchObject({ posted: CREDIT - 3n * COST, records: 3, charged: 3n * COST })
    } finally {
      await runtime.dispose()
    }
  })

  it("near the end of the balance a lease is refused: the call reserves alone, and the key's next calls too", async () => {
    const stores = await buildStores()
    const { counted, runtime } = leasingGateway(stores)
    try {
      // Enough for a few calls' estimates, not for a lease of 32.
      const { accountId, auth } = await runtime.runPromise(newKey(2_000n))
      expect(Exit.isSuccess(await runtime.runPromise(callOnce(auth)))).toBe(true)
      expect(counted.admits).toBe(2) // the lease refused, then the call alone
      expect(Exit.isSuccess(await runtime.runPromise(callOnce(auth)))).toBe(true)
      expect(counted.admits).toBe(3)
      await runtime.runPromise(idle)
      expect(await runtime.runPromise(ledgerOf(accountId))).toEqual({ posted: 2_000n - 2n * COST, held: 0n, records: 2, charged: 2n * COST })
    } finally {
      await runtime.dispose()
    }
  })

  it("near the end of the balance, the process's own lease gives back what it holds before a call is refused", async () => {
    const stores = await buildStores()
    const { runtime } = leasingGateway(stores)
    try {
      // The first call's lease tells the estimate: it reserves 32 of them.
      const probe = await runtime.runPromise(newKey(CREDIT))
      expect(Exit.isSuccess(await runtime.runPromise(callOnce(probe.auth)))).toBe(true)
      const [lease] = await runtime.runPromise(Effect.flatMap(LedgerStore, (l) => l.pending(probe.accountId)))
      const estimate = lease!.allocations.reduce((n, a) => n + a.amount, 0n) / 32n
      // An account with a lease's worth and half an estimate more: its lease lends 16 calls (its
      // hits), then the next call finds no lease to draw from, no room for another lease, and
      // less than an estimate outside the lease, which holds what the call needs.
      const { accountId, auth } = await runtime.runPromise(newKey(32n * estimate + estimate / 2n))
      // Each call right after the last one's answer, its metering still under way.
      for (let i = 0; i < 17; i++) expect(Exit.isSuccess(await runtime.runPromise(callOnce(auth))), `call ${i + 1}`).toBe(true)
      await runtime.runPromise(idle)
      expect(await runtime.runPromise(ledgerOf(accountId))).toMatchObject({ records: 17, charged: 17n * COST })
    } finally {
      await runtime.dispose()
    }
  })

  it("the rpm limit holds with hits taken ahead: 16 a minute, 16 admitted", async () => {
    const stores = await buildStores()
    // rpm 16: a lease takes 2 hits.
    const { runtime } = leasingGateway(stores, { rpm: 16 })
    try {
      const { accountId, auth } = await runtime.runPromise(newKey(CREDIT))
      // The window is the wall clock's minute: start early in one, so all 20 calls count in it.
      const left = 60_000 - (Date.now() % 60_000)
      if (left < 5_000) await new Promise((resolve) => setTimeout(resolve, left + 10))
      const exits = []
      for (let i = 0; i < 20; i++) exits.push(await runtime.runPromise(callOnce(auth)))
      expect(exits.filter(Exit.isSuccess).length).toBe(16)
      expect(exits.slice(16).every((e) => Exit.isFailure(e) && JSON.stringify(e.cause).includes("rate_limited"))).toBe(true)
      await runtime.runPromise(idle)
      expect(await runtime.runPromise(ledgerOf(accountId))).toMatchObject({ records: 16, charged: 16n * COST })
    } finally {
      await runtime.dispose()
    }
  })

  it("a process killed with drawn calls not metered: its journal, replayed, charges each once and releases its lease", async () => {
    const stores = await buildStores()
    const journal = makeMemoryJournal()
    // Its metering never reaches the store (it is killed first).
    const killed = pricedGateway(stores, {
      config: { creditLeases: true },
      journal,
      notices: inProcessNotices(),
      store: (store) => ({ admit: store.admit, commit: () => Effect.never })
    })
    const { accountId, auth } = await killed.runPromise(newKey(CREDIT))
    for (let i = 0; i < 3; i++) expect(Exit.isSuccess(await killed.runPromise(callOnce(auth)))).toBe(true)
    const admitted = await killed.runPromise(Deferred.make<void>())
    killed.runFork(Effect.andThen(Deferred.succeed(admitted, undefined), callOnce(auth, { user: "hang" })))
    await killed.runPromise(Deferred.await(admitted))
    await killed.runPromise(Effect.sleep(20))
    const left = openOf(journal)
    expect(left.completed.length).toBe(3)
    expect(left.completed.every((m) => m.drawn !== undefined)).toBe(true)
    expect(left.opened.length).toBe(1) // the lease
    expect((await Effect.runPromise(Effect.provide(ledgerOf(accountId), stores))).held).toBeGreaterThan(0n)

    const restarted = makeMemoryJournal([{ name: "killed", entries: journal.entries }])
    const { runtime } = leasingGateway(stores, { journal: restarted })
    try {
      await runtime.runPromise(idle)
      expect(restarted.released).toEqual(["killed"])
      expect(await runtime.runPromise(ledgerOf(accountId))).toEqual({ posted: CREDIT - 3n * COST, held: 0n, records: 3, charged: 3n * COST })
    } finally {
      await runtime.dispose()
    }
  })
})
