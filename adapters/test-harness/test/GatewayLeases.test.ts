/**
 * Credit leases at the gateway (docs/performance.md "Credit leases", core/src/gateway/Leases.ts),
 * on the memory stores with notices that reach every follower (one process): calls of one key are
 * admitted from its lease, one admission store step for many calls; each answered call is charged
 * exactly once; calls arriving together wait for one lease; nothing is held once the process
 * stops; a revocation elsewhere refuses the key's
 * calls from its notice; a call the machine refuses gives its draw back; near the end of the
 * balance, calls reserve alone; the rpm limit holds with the hits taken ahead; a process killed
 * with calls drawn and not metered is charged for them, once, when its journal is replayed.
 */
import { ApiKeysLive } from "@model-platform/core/http"
import { AccountNotices, type NoticeFollower } from "@model-platform/core/kernel"
import { AccountStore, ApiKeys, KeyStore } from "@model-platform/core/keys"
import { Catalogue, type CatalogueConfig, type ModelConfig } from "@model-platform/core/catalogue"
import { Gateway, type GatewayConfig, GatewayStore, MachineClient, type MachineResponse } from "@model-platform/core/gateway"
import { Ledger, LedgerStore } from "@model-platform/core/ledger"
import { UsageStore } from "@model-platform/core/billing"
import { type Context, Deferred, Effect, Exit, Layer, ManagedRuntime, Stream } from "effect"
import { describe, expect, it } from "vitest"
import { makeMemoryJournal, type MemoryJournal, openOf } from "@model-platform/memory-stores/MemoryMeteringJournal"
import { MemoryPlatformStores } from "@model-platform/memory-stores/MemoryPlatformStores"

const encoder = new TextEncoder()
/** Every answer reports 10 input and 5 output tokens, at 2 and 6 credits per Mtok: 50 micro-credits. */
const usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 }
const COST = 50n

/** A machine that answers at once; 400 to a body with `user: "bad"`; never to `user: "hang"`. */
const machine = Layer.succeed(MachineClient)(MachineClient.of({
  models: () => Effect.succeed(["chat"]),
  post: (_machine, _path, raw) => {
    const user = (raw as { user?: string }).user
    if (user === "hang") return Effect.never
    const answer: MachineResponse = user === "bad"
      ? { status: 400, headers: { "content-type": "application/json" }, body: Stream.make(encoder.encode("{\"error\":{\"message\":\"bad\"}}")) }
      : {
        status: 200,
        headers: { "content-type": "application/json" },
        body: Stream.make(encoder.encode(JSON.stringify({
          id: "c1", object: "chat.completion", created: 1, model: "chat",
          choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }], usage
        })))
      }
    return Effect.succeed(answer)
  }
}))

const chat: ModelConfig = {
  id: "chat", name: "chat", family: "f", description: "chat", modality: "text", service: "chat", owned_by: "x",
  endpoint: "/v1/chat/completions", context_length: 8192, max_output_tokens: 64, features: [],
  pricing: { input_credits_per_mtok: 2, output_credits_per_mtok: 6, credits_per_request: 0 }
}

const catalogue = (rpm: number): CatalogueConfig => ({
  operators: [{ id: "op", name: "Op", website: "https://op.example", description: "", featured: false, certifications: [] }],
  machines: [{
    id: "m", name: "m", operator: "op", region: "eu", base_url: "http://m.invalid/v1",
    hardware: { gpus: [], cpu_cores: 1, memory_gb: 1, storage_gb: 1 }, serverless_models: ["chat"],
    rent: null, subscribe: null, network: { status: "registered", reachability: "public" }, score: 1, initial_health: "online"
  }],
  models: [chat],
  packages: [],
  payments: { card: { processor: "test" }, stablecoin: null, charging_starts_at: null },
  prices: { credits_per_usd: 1000, services: [{ service: "chat", group: "g", name: "chat", unit: "mtok", unit_label: "u", credits_per_unit: 1, allowances: { free: 0, builder: 0, scale: 0, trial: 0 } }] },
  tiers: [{ tier: 0, name: "t", purchased_credits: 0, rpm, monthly_limit_credits: 1_000_000 }]
})

/** Notices in one process: every follower hears every `tell`, and they are always live. */
const inProcessNotices = () => {
  const followers = new Set<NoticeFollower>()
  return Layer.succeed(AccountNotices)(AccountNotices.of({
    live: () => true,
    follow: (follower) =>
      Effect.acquireRelease(Effect.sync(() => void followers.add(follower)), () => Effect.sync(() => void followers.delete(follower))),
    tell: (accountId) => Effect.sync(() => followers.forEach((f) => f.changed(accountId)))
  }))
}

type Stores = Layer.Success<typeof MemoryPlatformStores>

/** A gateway process on `stores`, leasing; `admits` counts its admission store steps. */
const processOn = (
  stores: Context.Context<Stores>,
  options: { readonly rpm?: number; readonly journal?: MemoryJournal; readonly config?: Partial<GatewayConfig> } = {}
) => {
  const counted = { admits: 0 }
  const counting = Layer.effect(GatewayStore, Effect.map(GatewayStore, (store) => GatewayStore.of({
    admit: (admissions) => Effect.suspend(() => {
      counted.admits += 1
      return store.admit(admissions)
    }),
    commit: store.commit
  })))
  const runtime = ManagedRuntime.make(
    Gateway.layer({ speculativeDispatch: false, creditLeases: true, ...options.config }).pipe(
      Layer.provideMerge(options.journal === undefined ? Layer.empty : options.journal.layer),
      Layer.provideMerge(Layer.mergeAll(Ledger.layer, ApiKeysLive, machine)),
      Layer.provideMerge(Catalogue.layer(catalogue(options.rpm ?? 100_000))),
      Layer.provideMerge(inProcessNotices()),
      Layer.provideMerge(Layer.merge(Layer.succeedContext(stores), counting.pipe(Layer.provide(Layer.succeedContext(stores)))))
    )
  )
  return { runtime, counted }
}

const buildStores = () => ManagedRuntime.make(MemoryPlatformStores).context()

const newKey = (credits: bigint) =>
  Effect.gen(function*() {
    const id = `acct_${Math.random().toString(36).slice(2)}`
    yield* (yield* AccountStore).insert({ id, email: `${id}@test.local`, created_at: new Date().toISOString() })
    const key = yield* (yield* ApiKeys).issue(id, { name: "k", permissions: ["inference"], machine_id: null })
    yield* (yield* Ledger).credit(id, { ref: `grant_${id}`, machine_id: null, amount: credits, type: "credit_added" })
    return { accountId: id, keyId: key.id, auth: `Bearer ${key.secret}` }
  })

/** One call to its end; its exit. */
const callOnce = (auth: string, extra: Record<string, unknown> = {}) =>
  Effect.exit(Effect.flatMap(Gateway, (g) =>
    g.call("/v1/chat/completions", auth, JSON.stringify({ model: "chat", messages: [{ role: "user", content: "hi" }], ...extra }))))

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

const CREDIT = 1_000_000_000n
const idle = Effect.flatMap(Gateway, (g) => g.idle)

describe("credit leases at the gateway", () => {
  it("calls of one key share a lease: one admission step for up to 16 calls, each charged once, nothing held once stopped", async () => {
    const stores = await buildStores()
    const { counted, runtime } = processOn(stores)
    const { accountId, auth } = await runtime.runPromise(newKey(CREDIT))
    for (let i = 0; i < 20; i++) expect(Exit.isSuccess(await runtime.runPromise(callOnce(auth)))).toBe(true)
    await runtime.runPromise(idle)
    // A lease takes 16 rpm hits ahead (rpm / 8, at most 16): 20 calls, two leases.
    expect(counted.admits).toBe(2)
    const during = await runtime.runPromise(ledgerOf(accountId))
    expect(during).toMatchObject({ posted: CREDIT - 20n * COST, records: 20, charged: 20n * COST })
    expect(during.held).toBeGreaterThan(0n) // the open lease
    await runtime.dispose()
    const after = await Effect.runPromise(Effect.provide(ledgerOf(accountId), stores))
    expect(after).toEqual({ posted: CREDIT - 20n * COST, held: 0n, records: 20, charged: 20n * COST })
  })

  it("calls of one key arriving together wait for the lease one of them takes, rather than each take one", async () => {
    const stores = await buildStores()
    const { counted, runtime } = processOn(stores)
    try {
      const { accountId, auth } = await runtime.runPromise(newKey(CREDIT))
      const exits = await runtime.runPromise(Effect.all(Array.from({ length: 16 }, () => callOnce(auth)), { concurrency: "unbounded" }))
      expect(exits.every(Exit.isSuccess)).toBe(true)
      expect(counted.admits).toBe(1)
      await runtime.runPromise(idle)
      expect(await runtime.runPromise(ledgerOf(accountId))).toMatchObject({ records: 16, charged: 16n * COST })
    } finally {
      await runtime.dispose()
    }
  })

  it("a key revoked elsewhere is refused from its account's notice", async () => {
    const stores = await buildStores()
    const { counted, runtime } = processOn(stores)
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
    const { counted, runtime } = processOn(stores)
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
    const { counted, runtime } = processOn(stores)
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
    const { runtime } = processOn(stores)
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
    const { runtime } = processOn(stores, { rpm: 16 })
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
    const hanging = Layer.effect(GatewayStore, Effect.map(GatewayStore, (store) => GatewayStore.of({ admit: store.admit, commit: () => Effect.never })))
    const killed = ManagedRuntime.make(
      Gateway.layer({ speculativeDispatch: false, creditLeases: true }).pipe(
        Layer.provideMerge(journal.layer),
        Layer.provideMerge(Layer.mergeAll(Ledger.layer, ApiKeysLive, machine)),
        Layer.provideMerge(Catalogue.layer(catalogue(100_000))),
        Layer.provideMerge(inProcessNotices()),
        Layer.provideMerge(Layer.merge(Layer.succeedContext(stores), hanging.pipe(Layer.provide(Layer.succeedContext(stores)))))
      )
    )
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
    const { runtime } = processOn(stores, { journal: restarted })
    try {
      await runtime.runPromise(idle)
      expect(restarted.released).toEqual(["killed"])
      expect(await runtime.runPromise(ledgerOf(accountId))).toEqual({ posted: CREDIT - 3n * COST, held: 0n, records: 3, charged: 3n * COST })
    } finally {
      await runtime.dispose()
    }
  })
})
