/**
 * The gateway's cost guard on PostgreSQL (docs/performance.md "The guard"): what the database does
 * per metered call, COUNTED, never timed — round trips, statements the server runs (inside the
 * functions and triggers too, with pg_stat_statements) and how many it planned, and rows written — for a bare account and
 * for one with every budget configured, at c=1 (the whole engine, Gateway.call) and in a batch of
 * 16 (the store steps the engine sends for 16 such calls, one admission and one commit), beside
 * other accounts' rows, so that rows read by sequential scans show a plan that reads whole tables. Each
 * count must stay at or under the figure recorded below: a change that adds work per call says so
 * by raising the figure, in the same commit.
 *
 * - bare: credits, one key, nothing configured; the chat allowance and the trial spent out (the
 *   common case after the first calls: "no grant left this period").
 * - budgeted: the account's own monthly limit, the key's, an agent's key (daily and total limits),
 *   scoped to a `builder` plan (its allowance spent out too, so credits pay and every budget
 *   counts: the dearest case), alert points.
 * The clock stands still, so what is cached for a while (the key, the tier, billing settings, the
 * key's last use) is read once, in the warm-up, and every measured call does the same work.
 */
import { AccountStore, ApiKeys, KeyStore, type KeyRecord } from "@model-platform/core/keys"
import { AccountNotices, generateId } from "@model-platform/core/kernel"
import { PlatformServices } from "@model-platform/core/http"
import type { CatalogueConfig } from "@model-platform/core/catalogue"
import { BillingSettingsStore, grantParts, UsageStore } from "@model-platform/core/billing"
import { type Admission, Gateway, GatewayStore, MachineClient, makeStandingCheck, type Metered } from "@model-platform/core/gateway"
import { Ledger, LedgerStore, settlementOf } from "@model-platform/core/ledger"
import { AgentStore } from "@model-platform/core/agents"
import { PlanStore } from "@model-platform/core/plans"
import { toTimestamp } from "@model-platform/core/kernel"
import { makeAgent } from "@model-platform/contract-kit/AgentContract"
import { Clock, Effect, Layer, ManagedRuntime, Redacted, Stream } from "effect"
import { PgClient } from "@effect/sql-pg"
import { SqlClient } from "effect/sql"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { AccountNoticesPg, PgPlatformStores } from "@model-platform/postgres-stores"
import { withPlan } from "@model-platform/test-harness/CataloguePlans"
import { gatewayCatalogue } from "./gatewaySupport.ts"
import { freshDatabaseUrl } from "./support.ts"
import { describeWork, dropDatabase, meteredDatabase, type Work } from "./storeWork.ts"

/**
 * The recorded figures, per metered call: at most this many round trips, statements and rows
 * written. Raise one only with the change that needs it, and say why in its commit.
 */
const RECORDED = {
  // plans: statements planned per call. The batch functions keep their plans (migration
  // 0026_generic_plans), so a call plans almost nothing; before it, 10-14 at c=1. The figures
  // leave room for the few background reads that are planned now and then (measured 0.5-1.75
  // at c=1, 0-0.25 in the batch).
  bare: {
    c1: { roundTrips: 2, statements: 28, plans: 2, rowsTotal: 14, scannedTotal: 0 },
    batch16: { roundTrips: 0.125, statements: 1.75, plans: 0.5, rowsTotal: 4.625, scannedTotal: 0 }
  },
  budgeted: {
    c1: { roundTrips: 5, statements: 31, plans: 3, rowsTotal: 18, scannedTotal: 0 },
    // The key's agent and plan, read at every call, in two batched reads each (16 alone: 2 each):
    // these stores send no account notices, so this is the dearer case (docs/performance.md
    // "Per-account state, told when it changes"; with them the standing is kept and not read).
    batch16: { roundTrips: 0.375, statements: 2, plans: 0.5, rowsTotal: 4.875, scannedTotal: 0 }
  }
} as const

/**
 * Other accounts' rows, so that a statement reading a whole table instead of looking rows up by
 * key shows as thousands of rows read per call (the work of a plan that grows with the table).
 */
const PADDING = [
  `INSERT INTO ledger_reservations (ref, account_id, machine_id, scopes, amounts, status, created_at, expires_at, finished_at, charged, excess)
   SELECT 'pad_' || g, 'acct_pad_' || (g % 1000), NULL, '{""}', '{100}', 'settled', now(), now(), now(), 100, 0
   FROM generate_series(1, 20000) AS g`,
  `INSERT INTO ledger_budget_months (account_id, month, budget, spent, held)
   SELECT 'acct_pad_' || g, '2026-11', b, 0, 0 FROM generate_series(1, 1000) AS g, unnest(ARRAY['account', 'key:pad']) AS b`,
  `INSERT INTO ledger_balances (account_id, scope, posted, held) SELECT 'acct_pad_' || g, '', 1000000, 0 FROM generate_series(1, 1000) AS g`,
  `INSERT INTO ledger_budget_limits (account_id, budget, monthly_limit) SELECT 'acct_pad_' || g, 'account', 1000000 FROM generate_series(1, 1000) AS g`,
  `INSERT INTO api_keys (id, account_id, name, prefix, secret_hash, permissions, created_at)
   SELECT 'key_pad_' || g, 'acct_pad_' || g, 'pad', 'mpk_pad', 'hash_pad_' || g, '{inference}', now() FROM generate_series(1, 1000) AS g`,
  `INSERT INTO billing_settings (account_id, settings, updated_at) SELECT 'acct_pad_' || g, '{}', now() FROM generate_series(1, 1000) AS g`,
  `INSERT INTO documents (kind, id, owner_id, created_at, version, record)
   SELECT kind, kind || '_pad_' || g, 'acct_pad_' || g, now(), 0, '{}' FROM generate_series(1, 1000) AS g, unnest(ARRAY['agent', 'approval']) AS kind`,
  `INSERT INTO subscriptions (id, account_id, order_id, machine_id, plan_id, paid_with, auto_renews, cancel_at_period_end,
                              current_period_start, current_period_end, created_at)
   SELECT 'sub_pad_' || g, 'acct_pad_' || g, 'ord_pad_' || g, 'm', 'builder', 'card', false, false, now(), now() + interval '1 day', now()
   FROM generate_series(1, 1000) AS g`,
  "ANALYZE"
]

const NOW = Date.UTC(2026, 10, 15, 12, 0, 0)
const MACHINE = "m"
const MODEL = "ref-chat"
/** 20 input and 10 output tokens at 2 and 6 credits per million: 100 micro-credits a call. */
const USAGE = { prompt_tokens: 20, completion_tokens: 10, total_tokens: 30 }
const COMPLETION = new TextEncoder().encode(JSON.stringify({
  id: "chatcmpl-cost",
  object: "chat.completion",
  created: 1_700_000_000,
  model: MODEL,
  choices: [{ index: 0, message: { role: "assistant", content: "Hi.", refusal: null }, logprobs: null, finish_reason: "stop" }],
  usage: USAGE
}))
const BODY = JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "Hi" }], max_tokens: 16 })
const CALLS = 8

/** The chat allowances (200 micro-credits; a builder plan's too) and the trial (100) are spent in the warm-up. */
const catalogue = (): CatalogueConfig => {
  const base = withPlan(
    gatewayCatalogue([{ id: MACHINE, url: "http://127.0.0.1:9", score: 1 }]),
    { id: "builder", name: "Builder", usd_per_period: 20, models: [MODEL], payment_methods: ["card"] }
  )
  return {
    ...base,
    prices: {
      ...base.prices,
      services: base.prices.services.map((s) =>
        s.service === "chat" ? { ...s, allowances: { free: 0.0002, builder: 0.0002, scale: 0, trial: 0.0001 } } : s
      )
    }
  }
}

/** A fixed "now"; sleeping stays real, so timeouts behave. */
const standingClock = (): Clock.Clock => {
  const system = Effect.runSync(Clock.clockWith(Effect.succeed))
  return {
    currentTimeMillisUnsafe: () => NOW,
    currentTimeMillis: Effect.succeed(NOW),
    currentTimeNanosUnsafe: () => BigInt(NOW) * 1_000_000n,
    currentTimeNanos: Effect.succeed(BigInt(NOW) * 1_000_000n),
    monotonicTimeNanosUnsafe: () => system.monotonicTimeNanosUnsafe(),
    monotonicTimeNanos: system.monotonicTimeNanos,
    sleep: (duration) => system.sleep(duration)
  }
}

const machine = Layer.succeed(MachineClient, MachineClient.of({
  post: () => Effect.succeed({ status: 200, headers: { "content-type": "application/json" }, body: Stream.succeed(COMPLETION) }),
  models: () => Effect.succeed([MODEL])
}))

/** GatewayStore, recording the last admission and metered call of each account it sees. */
const recording = () => {
  const admissions = new Map<string, Admission>()
  const metered = new Map<string, Metered>()
  const layer = Layer.effect(
    GatewayStore,
    Effect.map(GatewayStore, (store) =>
      GatewayStore.of({
        admit: (batch) => Effect.andThen(Effect.sync(() => batch.forEach((a) => admissions.set(a.account_id, a))), store.admit(batch)),
        commit: (calls) => Effect.andThen(Effect.sync(() => calls.forEach((c) => metered.set(c.record.account_id, c))), store.commit(calls))
      }))
  )
  return { layer, admissions, metered }
}

const databaseUrl = process.env["TEST_DATABASE_URL"]

describe.skipIf(databaseUrl === undefined)("the gateway's store work per metered call on PostgreSQL (counts, never timings)", () => {
  let runtime: ManagedRuntime.ManagedRuntime<any, any>
  let db: Awaited<ReturnType<typeof meteredDatabase>>
  let url: string
  const record = recording()
  const secrets = new Map<"bare" | "budgeted", { readonly accountId: string; readonly secret: string }>()
  const run = <A, E>(effect: Effect.Effect<A, E, any>): Promise<A> => runtime.runPromise(effect)

  beforeAll(async () => {
    url = await freshDatabaseUrl(databaseUrl!)
    db = await meteredDatabase(url)
    // In CI the server preloads pg_stat_statements (scripts/ci-postgres.sh): statements are counted there.
    if (process.env["CI"] === "true") expect(db.tracked, "pg_stat_statements preloaded on the CI server").toBe(true)
    const stores = PgPlatformStores.pipe(Layer.provideMerge(db.layer))
    const services = PlatformServices(catalogue(), { machineClient: machine }).pipe(
      Layer.provideMerge(Layer.merge(stores, record.layer.pipe(Layer.provide(stores))))
    )
    runtime = ManagedRuntime.make(services.pipe(
      Layer.provideMerge(Layer.merge(db.tracer, Layer.succeed(Clock.Clock, standingClock())))
    ))
    await run(Effect.gen(function*() {
      const apiKeys = yield* ApiKeys
      const ledger = yield* Ledger
      const account = (label: string) =>
        Effect.gen(function*() {
          const id = yield* generateId(`acct_${label}`)
          yield* (yield* AccountStore).insert({ id, email: `${id}@cost.test`, created_at: toTimestamp(NOW - 86_400_000) })
          yield* ledger.credit(id, { ref: `grant_${id}`, machine_id: null, amount: 10n ** 12n, type: "credit_added" })
          return id
        })
      const bare = yield* account("bare")
      secrets.set("bare", { accountId: bare, secret: (yield* apiKeys.issue(bare, { name: "bare", permissions: ["inference"] })).secret })

      const budgeted = yield* account("budgeted")
      const agent = yield* makeAgent(budgeted, {
        activated_at: toTimestamp(NOW - 3_600_000),
        expires_at: toTimestamp(NOW + 30 * 86_400_000),
        settings: {
          capabilities: ["inference"], max_transaction_wei: null, max_daily_wei: null,
          daily_limit: 10n ** 9n, total_limit: 10n ** 10n, expires_in_days: 30
        }
      })
      yield* (yield* AgentStore).insert(agent)
      const plan = yield* (yield* PlanStore).insertSubscription({
        id: yield* generateId("sub"), account_id: budgeted, order_id: yield* generateId("ord"), machine_id: MACHINE,
        plan_id: "builder", paid_with: "card", auto_renews: true, cancel_at_period_end: false,
        current_period_start: toTimestamp(NOW - 86_400_000), current_period_end: toTimestamp(NOW + 29 * 86_400_000),
        created_at: toTimestamp(NOW - 86_400_000), card_reference: null, renewal_error: null
      })
      const key = yield* apiKeys.issue(budgeted, { name: "budgeted", permissions: ["inference"], agent_id: agent.id, subscription_id: plan.id })
      const ledgerStore = yield* LedgerStore
      yield* ledgerStore.setBudgetLimit(budgeted, "account", 900n * 10n ** 6n)
      yield* ledgerStore.setBudgetLimit(budgeted, `key:${key.id}`, 800n * 10n ** 6n)
      yield* (yield* BillingSettingsStore).update(budgeted, { alert_points: [50, 80, 100] })
      secrets.set("budgeted", { accountId: budgeted, secret: key.secret })
      const sql = yield* SqlClient.SqlClient
      for (const statement of PADDING) yield* sql.unsafe(statement)
    }))
  })
  afterAll(async () => {
    await runtime?.dispose()
    await dropDatabase(databaseUrl!, url)
  })

  const call = (secret: string) =>
    Effect.gen(function*() {
      const gateway = yield* Gateway
      const answer = yield* gateway.call("/v1/chat/completions", `Bearer ${secret}`, BODY)
      expect(answer._tag === "Body" ? answer.status : answer._tag).toBe(200)
      yield* gateway.idle
    })

  /**
   * 16 calls as the engine sent the last one: their key's standing read 16 times at once (its agent
   * and plan: batched reads, PgReadBatch.ts), one admission batch, then one commit batch.
   */
  const batchOf16 = (accountId: string, key: KeyRecord) =>
    Effect.gen(function*() {
      const standing = yield* makeStandingCheck
      yield* Effect.forEach(Array.from({ length: 16 }), () => standing(key, NOW), { concurrency: "unbounded", discard: true })
      const store = yield* GatewayStore
      const admission = record.admissions.get(accountId)!
      const metered = record.metered.get(accountId)!
      const refs = yield* Effect.forEach(Array.from({ length: 16 }), () => generateId("usage"))
      const admitted = yield* store.admit(refs.map((ref) => ({ ...admission, touch_at: undefined, reservation: { ...admission.reservation!, ref } })))
      const calls = yield* Effect.forEach(admitted, (result, i) =>
        Effect.gen(function*() {
          if (result._tag !== "Admitted" || result.reserved?._tag !== "reserved") return yield* Effect.die(new Error(`not admitted: ${JSON.stringify(result)}`))
          const settlement = yield* settlementOf(refs[i]!, metered.record.list_credits, {
            account_id: accountId,
            allocations: result.reserved.allocations,
            grants: result.reserved.grants ?? []
          })
          return {
            settlement,
            record: { ...metered.record, ref: refs[i]!, credits: settlement.charged, ...grantParts(settlement.grants ?? []) }
          } satisfies Metered
        }))
      const results = yield* store.commit(calls)
      expect(results.every((r) => r.settlement === "settled" && r.record === "Recorded")).toBe(true)
    })

  const check = (
    what: string,
    work: Work,
    recorded: {
      readonly roundTrips: number
      readonly statements: number
      readonly plans: number
      readonly rowsTotal: number
      readonly scannedTotal: number
    }
  ) => {
    expect(work.roundTrips, `${what}: round trips`).toBeLessThanOrEqual(recorded.roundTrips)
    if (work.statements !== undefined) expect(work.statements, `${what}: statements`).toBeLessThanOrEqual(recorded.statements)
    if (work.plans !== undefined) expect(work.plans, `${what}: statements planned`).toBeLessThanOrEqual(recorded.plans)
    expect(work.rowsTotal, `${what}: rows written`).toBeLessThanOrEqual(recorded.rowsTotal)
    expect(work.scannedTotal, `${what}: rows read by sequential scans`).toBeLessThanOrEqual(recorded.scannedTotal)
  }

  for (const scenario of ["bare", "budgeted"] as const) {
    it(`${scenario} account: per call at c=1 and in a batch of 16, at most the recorded work`, async () => {
      const { accountId, secret } = secrets.get(scenario)!
      // Warm-up: the key, the tier, the settings read and cached; the allowance and the trial spent.
      for (let i = 0; i < 4; i++) await run(call(secret))
      const c1 = await run(db.measure(Effect.repeat(call(secret), { times: CALLS - 1 }), CALLS))
      const key = await run(Effect.flatMap(KeyStore, (keys) => keys.get(accountId, record.admissions.get(accountId)!.key_id)))
      const batch = await run(db.measure(batchOf16(accountId, key!), 16))
      console.log(`${scenario}, c=1: ${describeWork(c1.work)}\n${scenario}, batch of 16: ${describeWork(batch.work)}`)
      check(`${scenario}, c=1`, c1.work, RECORDED[scenario].c1)
      check(`${scenario}, batch of 16`, batch.work, RECORDED[scenario].batch16)
      // Every call was charged exactly: 100 micro-credits each, held nothing.
      const balances = await run(Effect.flatMap(LedgerStore, (l) => l.balances(accountId)))
      expect(balances.reduce((n, b) => n + b.held, 0n)).toBe(0n)
    })
  }
})

/**
 * With credit leases (docs/performance.md "Credit leases"): a bare account's calls drawn from its
 * key's lease, on a server whose account notices are live. The warm-up's first call takes the lease
 * (16 rpm hits ahead); a drawn call's only store step is its metering. The measured calls are a
 * lease's worth (16), so the work counted per call includes a sixteenth of a lease: the successor
 * taken ahead when the first lease is half spent, and the first lease's void once it is dry (its
 * last call metered).
 */
const LEASED = { calls: 16, c1: { roundTrips: 1.125, statements: 19.375, plans: 1, rowsTotal: 10.5625, scannedTotal: 0 } } as const

describe.skipIf(databaseUrl === undefined)("the gateway's store work per metered call on PostgreSQL, with credit leases", () => {
  let runtime: ManagedRuntime.ManagedRuntime<any, any>
  let db: Awaited<ReturnType<typeof meteredDatabase>>
  let url: string
  let leased: { readonly accountId: string; readonly secret: string }
  const run = <A, E>(effect: Effect.Effect<A, E, any>): Promise<A> => runtime.runPromise(effect)

  beforeAll(async () => {
    url = await freshDatabaseUrl(databaseUrl!)
    db = await meteredDatabase(url)
    // The listener and its heartbeat have a pool of their own (the measured client has one connection).
    const listener = AccountNoticesPg.pipe(Layer.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 2 })))
    const stores = Layer.merge(PgPlatformStores.pipe(Layer.provideMerge(db.layer)), listener)
    runtime = ManagedRuntime.make(PlatformServices(catalogue(), { machineClient: machine, gateway: { creditLeases: true } }).pipe(
      Layer.provideMerge(stores),
      Layer.provideMerge(Layer.merge(db.tracer, Layer.succeed(Clock.Clock, standingClock())))
    ))
    leased = await run(Effect.gen(function*() {
      const id = yield* generateId("acct_leased")
      yield* (yield* AccountStore).insert({ id, email: `${id}@cost.test`, created_at: toTimestamp(NOW - 86_400_000) })
      yield* (yield* Ledger).credit(id, { ref: `grant_${id}`, machine_id: null, amount: 10n ** 12n, type: "credit_added" })
      const secret = (yield* (yield* ApiKeys).issue(id, { name: "leased", permissions: ["inference"] })).secret
      const sql = yield* SqlClient.SqlClient
      for (const statement of PADDING) yield* sql.unsafe(statement)
      // Leases lend only while notices are live: wait for the listener.
      const notices = yield* AccountNotices
      for (let waited = 0; !notices.live() && waited < 10_000; waited += 20) yield* Effect.sleep(20)
      expect(notices.live()).toBe(true)
      return { accountId: id, secret }
    }))
  })
  afterAll(async () => {
    await runtime?.dispose()
    await dropDatabase(databaseUrl!, url)
  })

  it("bare account: per call at c=1, at most the recorded work; every call charged, the lease released at shutdown", async () => {
    const call = Effect.gen(function*() {
      const gateway = yield* Gateway
      const answer = yield* gateway.call("/v1/chat/completions", `Bearer ${leased.secret}`, BODY)
      expect(answer._tag === "Body" ? answer.status : answer._tag).toBe(200)
      yield* gateway.idle
    })
    for (let i = 0; i < 4; i++) await run(call)
    const c1 = await run(db.measure(Effect.repeat(call, { times: LEASED.calls - 1 }), LEASED.calls))
    console.log(`leased, c=1: ${describeWork(c1.work)}`)
    expect(c1.work.roundTrips, "leased, c=1: round trips").toBeLessThanOrEqual(LEASED.c1.roundTrips)
    if (c1.work.statements !== undefined) expect(c1.work.statements, "leased, c=1: statements").toBeLessThanOrEqual(LEASED.c1.statements)
    if (c1.work.plans !== undefined) expect(c1.work.plans, "leased, c=1: statements planned").toBeLessThanOrEqual(LEASED.c1.plans)
    expect(c1.work.rowsTotal, "leased, c=1: rows written").toBeLessThanOrEqual(LEASED.c1.rowsTotal)
    expect(c1.work.scannedTotal, "leased, c=1: rows read by sequential scans").toBeLessThanOrEqual(LEASED.c1.scannedTotal)
    const records = await run(Effect.flatMap(UsageStore, (u) =>
      u.list({ account_id: leased.accountId, from: "2000-01-01T00:00:00.000Z", to: "2100-01-01T00:00:00.000Z" })))
    expect(records.length).toBe(4 + LEASED.calls)
    // 100 micro-credits a call; the allowance (200) and the trial (100) paid first, all of them,
    // as without a lease: what a call does not use of its draw stays lent.
    const charged = records.reduce((n, r) => n + r.credits, 0n)
    expect(charged).toBe(BigInt(4 + LEASED.calls) * 100n - 300n)
    const wide = async () => (await run(Effect.flatMap(LedgerStore, (l) => l.balances(leased.accountId)))).find((b) => b.machine_id === null)!
    const open = await wide()
    expect(open.posted).toBe(10n ** 12n - charged)
    expect(open.held).toBeGreaterThan(0n) // the lease, still open
    await runtime.dispose()
    runtime = ManagedRuntime.make(PgPlatformStores.pipe(Layer.provideMerge(db.layer)))
    expect((await wide()).held).toBe(0n)
  })
})
