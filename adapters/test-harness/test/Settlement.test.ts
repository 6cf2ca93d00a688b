/**
 * Issue 10, finding 11: a call the machine answered is charged exactly once, whatever happens after
 * the answer (core/src/gateway/Settlement.ts, docs/gateway.md "Metering that survives faults").
 *
 * - The store unavailable for a while after the answer: metering is retried until it is back.
 * - settleInline (Lambda): retried within the call; a store that stays down answers 503
 *   (StoreUnavailable) instead of the answer, and nothing is charged.
 * - A process killed between answer and metering: its journal, replayed at the next start, meters
 *   each completed call once (twice replayed: still once) and releases at once the reservations of
 *   calls that never completed.
 */
import { Gateway, type GatewayConfig, GatewayStore, MeteringJournal } from "@model-platform/core/gateway"
import { Ledger, LedgerStore } from "@model-platform/core/ledger"
import { isStoreUnavailableCause, StoreUnavailable } from "@model-platform/core/kernel"
import { UsageStore } from "@model-platform/core/billing"
import { type Context, Deferred, Effect, Exit, Layer, Stream } from "effect"
import { describe, expect, it } from "vitest"
import { makeMemoryJournal, type MemoryJournal, openOf } from "@model-platform/memory-stores/MemoryMeteringJournal"
import { newKey } from "./gatewayStub.ts"
import { buildStores, callOnce, chatBody, COST, CREDIT, pricedGateway, type Stores } from "./pricedGateway.ts"

/** Commit fails (store unavailable) `failures.n` times, then works; or hangs while `hang` is set. */
interface CommitFaults {
  n: number
  hang: boolean
  attempts: number
}

const gatewayOn = (
  stores: Context.Context<Stores>,
  faults: CommitFaults,
  config: Partial<GatewayConfig>,
  journal?: MemoryJournal
) =>
  pricedGateway(stores, {
    config: { keepAliveMs: 10, ...config },
    journal,
    notices: Layer.empty,
    store: (store) => ({
      admit: store.admit,
      commit: (calls) =>
        Effect.suspend(() => {
          faults.attempts += 1
          if (faults.hang) return Effect.never
          if (faults.n > 0) {
            faults.n -= 1
            return Effect.die(new StoreUnavailable("GatewayStore.commit", new Error("connect ECONNREFUSED")))
          }
          return store.commit(calls)
        })
    })
  })

/** What the ledger and the usage store say about an account. */
const ledgerOf = (accountId: string) =>
  Effect.gen(function*() {
    const scopes = yield* (yield* LedgerStore).balances(accountId)
    const records = yield* (yield* UsageStore).list({ account_id: accountId, from: "2000-01-01T00:00:00.000Z", to: "2100-01-01T00:00:00.000Z" })
    return {
      available: scopes.reduce((n, s) => n + s.posted - s.held, 0n),
      held: scopes.reduce((n, s) => n + s.held, 0n),
      records: records.length,
      charged: records.reduce((n, r) => n + r.credits, 0n)
    }
  })

describe("metering through a store outage", () => {
  it("retries until the store is back: each answered call recorded and charged once", async () => {
    const stores = await buildStores()
    const faults: CommitFaults = { n: 6, hang: false, attempts: 0 }
    const runtime = gatewayOn(stores, faults, {})
    try {
      const { accountId, auth } = await runtime.runPromise(newKey(CREDIT))
      const exits = await runtime.runPromise(Effect.all([callOnce(auth), callOnce(auth, { stream: true }), callOnce(auth)], { concurrency: "unbounded" }))
      expect(exits.every(Exit.isSuccess)).toBe(true)
      await runtime.runPromise(Effect.flatMap(Gateway, (g) => g.idle))
      expect(faults.n).toBe(0)
      expect(faults.attempts).toBeGreaterThan(6)
      expect(await runtime.runPromise(ledgerOf(accountId))).toEqual({
        available: CREDIT - 3n * COST,
        held: 0n,
        records: 3,
        charged: 3n * COST
      })
    } finally {
      await runtime.dispose()
    }
  })

  it("settleInline: retried within the call; a store that stays down answers StoreUnavailable and charges nothing", async () => {
    const stores = await buildStores()
    const faults: CommitFaults = { n: 2, hang: false, attempts: 0 }
    const runtime = gatewayOn(stores, faults, { settleInline: true, inlineRetryMs: 300 })
    try {
      const { accountId, auth } = await runtime.runPromise(newKey(CREDIT))
      // Two failures fit in the budget: answered, charged once.
      expect(Exit.isSuccess(await runtime.runPromise(callOnce(auth)))).toBe(true)
      expect(await runtime.runPromise(ledgerOf(accountId))).toMatchObject({ held: 0n, records: 1, charged: COST })
      // Down for longer than the budget: no answer, 503 (StoreUnavailable), not charged.
      faults.n = 1_000
      const exit = await runtime.runPromise(callOnce(auth))
      expect(Exit.isFailure(exit) && isStoreUnavailableCause(exit.cause)).toBe(true)
      faults.n = 0
      await runtime.runPromise(Effect.flatMap(Gateway, (g) => g.idle))
      expect(await runtime.runPromise(ledgerOf(accountId))).toEqual({ available: CREDIT - COST, held: 0n, records: 1, charged: COST })
    } finally {
      await runtime.dispose()
    }
  })
})

describe("settleInline streams", () => {
  /** The text a client receives of a streamed call. */
  const streamed = (auth: string) =>
    Effect.gen(function*() {
      const response = yield* (yield* Gateway).call("/v1/chat/completions", auth, chatBody({ stream: true }))
      if (response._tag !== "Events") return ""
      const chunks = yield* Stream.runCollect(response.stream)
      return Array.from(chunks, (c) => new TextDecoder().decode(c)).join("")
    })

  it("end with [DONE] once metered; with a store_unavailable error event, not charged, when metering cannot be written", async () => {
    const stores = await buildStores()
    const faults: CommitFaults = { n: 0, hang: false, attempts: 0 }
    const runtime = gatewayOn(stores, faults, { settleInline: true, inlineRetryMs: 200 })
    try {
      const { accountId, auth } = await runtime.runPromise(newKey(CREDIT))
      expect(await runtime.runPromise(streamed(auth))).toMatch(/data: \[DONE\]\n\n$/)
      faults.n = 1_000
      const refused = await runtime.runPromise(streamed(auth))
      expect(refused).not.toContain("[DONE]")
      expect(refused).toMatch(/"code":"store_unavailable"\}\}\n\n$/)
      faults.n = 0
      await runtime.runPromise(Effect.flatMap(Gateway, (g) => g.idle))
      expect(await runtime.runPromise(ledgerOf(accountId))).toEqual({ available: CREDIT - COST, held: 0n, records: 1, charged: COST })
    } finally {
      await runtime.dispose()
    }
  })
})

describe("the metering journal, replayed at start", () => {
  it("meters each completed call once and releases uncompleted reservations at once", async () => {
    const stores = await buildStores()
    // The first process answers 3 calls, but its metering never reaches the store (it is killed
    // before); a fourth call is admitted and still waiting for its machine when it dies.
    const killed = makeMemoryJournal()
    const first = gatewayOn(stores, { n: 0, hang: true, attempts: 0 }, {}, killed)
    const { accountId, auth } = await first.runPromise(newKey(CREDIT))
    for (const extra of [{}, { stream: true }, {}]) expect(Exit.isSuccess(await first.runPromise(callOnce(auth, extra)))).toBe(true)
    const admitted = await first.runPromise(Deferred.make<void>())
    first.runFork(Effect.andThen(Deferred.succeed(admitted, undefined), callOnce(auth, { user: "hang" })))
    await first.runPromise(Deferred.await(admitted))
    await first.runPromise(Effect.sleep(20))
    const left = openOf(killed)
    expect(left.completed.length).toBe(3)
    expect(left.opened.length).toBe(1)
    const before = await first.runPromise(ledgerOf(accountId))
    expect(before.records).toBe(0)
    expect(before.held).toBeGreaterThan(0n)

    // The next start: the journal of the killed process is replayed.
    const restarted = makeMemoryJournal([{ name: "killed", entries: killed.entries }])
    const second = gatewayOn(stores, { n: 0, hang: false, attempts: 0 }, {}, restarted)
    try {
      await second.runPromise(Effect.flatMap(Gateway, (g) => g.idle))
      expect(restarted.released).toEqual(["killed"])
      expect(await second.runPromise(ledgerOf(accountId))).toEqual({ available: CREDIT - 3n * COST, held: 0n, records: 3, charged: 3n * COST })
    } finally {
      await second.dispose()
    }

    // Replayed again (a crash during the replay): nothing changes.
    const again = gatewayOn(stores, { n: 0, hang: false, attempts: 0 }, {}, makeMemoryJournal([{ name: "killed", entries: killed.entries }]))
    try {
      await again.runPromise(Effect.flatMap(Gateway, (g) => g.idle))
      expect(await again.runPromise(ledgerOf(accountId))).toEqual({ available: CREDIT - 3n * COST, held: 0n, records: 3, charged: 3n * COST })
    } finally {
      await again.dispose()
    }
  })

  it("closes what it opened: a process that meters everything leaves nothing open", async () => {
    const stores = await buildStores()
    const journal = makeMemoryJournal()
    const runtime = gatewayOn(stores, { n: 2, hang: false, attempts: 0 }, {}, journal)
    try {
      const { auth } = await runtime.runPromise(newKey(CREDIT))
      for (const extra of [{}, { stream: true }]) await runtime.runPromise(callOnce(auth, extra))
      // Refused at admission (no credit): its journaled ref is closed too.
      const broke = await runtime.runPromise(newKey(CREDIT))
      await runtime.runPromise(Effect.flatMap(Ledger, (l) => l.reserve(broke.accountId, null, CREDIT, "2100-01-01T00:00:00.000Z")))
      const refused = await runtime.runPromise(callOnce(broke.auth))
      expect(Exit.isFailure(refused) && JSON.stringify(refused.cause)).toContain("insufficient_credit")
      await runtime.runPromise(Effect.flatMap(Gateway, (g) => g.idle))
      expect(openOf(journal)).toEqual({ opened: [], completed: [] })
      expect(journal.entries.filter((e) => e._tag === "completed").length).toBe(2)
    } finally {
      await runtime.dispose()
    }
  })

  it("closes a metering batch in one append: as many appends as batches written, each call's ref once", async () => {
    const stores = await buildStores()
    const journal = makeMemoryJournal()
    const closedAppends: Array<number> = []
    const counting = {
      ...journal,
      layer: Layer.succeed(MeteringJournal, {
        ...journal.service,
        closed: (refs) => Effect.andThen(Effect.sync(() => closedAppends.push(refs.length)), journal.service.closed(refs))
      })
    }
    const faults = { n: 0, hang: false, attempts: 0 }
    const runtime = gatewayOn(stores, faults, {}, counting)
    try {
      const { auth } = await runtime.runPromise(newKey(CREDIT))
      const exits = await runtime.runPromise(Effect.all(Array.from({ length: 16 }, () => callOnce(auth)), { concurrency: "unbounded" }))
      expect(exits.every(Exit.isSuccess)).toBe(true)
      await runtime.runPromise(Effect.flatMap(Gateway, (g) => g.idle))
      expect(openOf(journal)).toEqual({ opened: [], completed: [] })
      const closed = journal.entries.filter((e) => e._tag === "closed").map((e) => e._tag === "closed" ? e.ref : "")
      expect(new Set(closed).size).toBe(16)
      expect(closed.length).toBe(16)
      // One append per batch the store wrote, and the calls did share batches.
      expect(closedAppends.length).toBe(faults.attempts)
      expect(closedAppends.length).toBeLessThan(16)
    } finally {
      await runtime.dispose()
    }
  })
})

describe("a replayed commit on the composed stores (memory, DynamoDB)", () => {
  it("whose settlement went through before a crash records what was charged, once", async () => {
    const stores = await buildStores()
    const runtime = gatewayOn(stores, { n: 0, hang: false, attempts: 0 }, {})
    try {
      const { accountId, auth } = await runtime.runPromise(newKey(CREDIT))
      const journal = makeMemoryJournal()
      const killed = gatewayOn(stores, { n: 0, hang: true, attempts: 0 }, {}, journal)
      expect(Exit.isSuccess(await killed.runPromise(callOnce(auth)))).toBe(true)
      const [metered] = openOf(journal).completed
      // The crash came between the two writes: settled, not recorded.
      await runtime.runPromise(Effect.flatMap(LedgerStore, (l) => l.settle(metered!.settlement!)))
      const results = await runtime.runPromise(Effect.flatMap(GatewayStore, (g) => g.commit([metered!, metered!])))
      expect(results.map((r) => [r.settlement, r.record])).toEqual([["not_pending", "Recorded"], ["not_pending", "Duplicate"]])
      expect(await runtime.runPromise(ledgerOf(accountId))).toEqual({ available: CREDIT - COST, held: 0n, records: 1, charged: COST })
    } finally {
      await runtime.dispose()
    }
  })
})
