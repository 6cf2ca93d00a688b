/**
 * The gateway benchmark's server process (bench/gateway.ts, role "server"): the platform's Node
 * server as `./platform start` runs it (the shell's `serverLayer`) over PostgreSQL (or PGlite, or
 * `--stores memory`), or `--server proxy` (the same Effect HTTP server and machine client,
 * forwarding only). The load generator asks it, over IPC, to set up a scenario's accounts, for
 * its CPU, its Postgres backends, spans, idleness, and the metering check of a scenario.
 *
 * Scenarios (`scenario` op):
 * - "bare": accounts with credits and one key each, nothing configured;
 * - "budgeted": every budget: the account's own monthly limit, the key's, an agent's key (daily
 *   and total limits) scoped to a `builder` plan (whose allowance the warm-up spends: credits pay
 *   every measured call, so every budget counts it).
 */
import { NodeHttpServer } from "@effect/platform-node"
import { AccountStore, ApiKeys } from "@model-platform/core/keys"
import { generateId } from "@model-platform/core/kernel"
import { Catalogue } from "@model-platform/core/catalogue"
import { ApiKeysLive, ErrorShapeMiddleware } from "@model-platform/core/http"
import { Gateway, MachineClient, MachineHttpLayer } from "@model-platform/core/gateway"
import { Ledger, LedgerStore } from "@model-platform/core/ledger"
import { AgentStore } from "@model-platform/core/agents"
import { BillingSettingsStore, UsageStore } from "@model-platform/core/billing"
import { PlanStore } from "@model-platform/core/plans"
import { toTimestamp } from "@model-platform/core/kernel"
import { makeAgent } from "@model-platform/contract-kit/AgentContract"
import { Effect, Layer, ManagedRuntime, References, Stream, Tracer } from "effect"
import { HttpRouter, HttpServer, HttpServerResponse } from "effect/http"
import { SqlClient } from "effect/sql"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Os from "node:os"
import { FileMeteringJournal } from "../src/FileMeteringJournal.ts"
import { MachineNodeHttpLayer } from "../src/MachineNodeHttp.ts"
import { Database } from "@model-platform/postgres-stores/database"
import { AccountNoticesPg, PgPlatformStores } from "@model-platform/postgres-stores"
import { serverLayer } from "../src/Server.ts"
import cluster from "node:cluster"
import { cpuMicros, flag, has, num, serveParent } from "./benchProcesses.ts"
import { runServerWorkers } from "./benchWorkers.ts"
import { FastMemoryStores } from "./fastStores.ts"
import { startAllocWatch } from "./allocWatch.ts"
import { makeGcWatch } from "./gcWatch.ts"
import { benchCatalogue } from "./fixtures.ts"

/** Micro-credits each benchmark account starts with (one million credits). */
export const INITIAL_CREDIT = 1_000_000n * 1_000_000n

export type ScenarioName = "bare" | "budgeted"

export interface Scenario {
  readonly secrets: ReadonlyArray<string>
  readonly accountIds: ReadonlyArray<string>
}

/** What the metering check compares, summed over a scenario's accounts (decimal strings). */
export interface Metering {
  readonly usageRecords: string
  readonly usageCredits: string
  /** credits + from_allowance + from_trial: the calls' whole cost. */
  readonly usageCost: string
  readonly usageEntries: string
  readonly usageEntriesTotal: string
  readonly pendingReservations: string
  readonly initial: string
  readonly posted: string
  readonly held: string
  readonly audit: ReadonlyArray<string>
}

/** Wall time of spans by name (SQL statements by their text), since the last reset. */
const spanStats = new Map<string, { count: number; totalNs: bigint }>()

const spanKey = (span: Tracer.NativeSpan): string => {
  const text = span.attributes.get("db.query.text")
  return typeof text === "string" ? `sql: ${text.replace(/\s+/g, " ").trim().slice(0, 90)}` : span.name
}

const recordingTracer = Tracer.make({
  span(options) {
    const span = new Tracer.NativeSpan(options)
    const end = span.end.bind(span)
    span.end = (endTime, exit) => {
      end(endTime, exit)
      const key = spanKey(span)
      const stat = spanStats.get(key) ?? { count: 0, totalNs: 0n }
      stat.count++
      stat.totalNs += endTime - span.startTime
      spanStats.set(key, stat)
    }
    return span
  }
})

/** `count` accounts of a scenario, each with credits and one key. */
const setUp = (name: ScenarioName, count: number) =>
  Effect.gen(function*() {
    const apiKeys = yield* ApiKeys
    const ledger = yield* Ledger
    const now = Date.now()
    const secrets: Array<string> = []
    const accountIds: Array<string> = []
    for (let i = 0; i < count; i++) {
      const accountId = yield* generateId(`acct_${name}`)
      yield* (yield* AccountStore).insert({ id: accountId, email: `${accountId}@bench.local`, created_at: toTimestamp(now) })
      yield* ledger.credit(accountId, { ref: `bench_grant_${accountId}`, machine_id: null, amount: INITIAL_CREDIT, type: "credit_added" })
      if (name === "bare") {
        secrets.push((yield* apiKeys.issue(accountId, { name: "bench", permissions: ["inference", "read"] })).secret)
      } else {
        const agent = yield* makeAgent(accountId, {
          activated_at: toTimestamp(now - 3_600_000),
          expires_at: toTimestamp(now + 30 * 86_400_000),
          settings: {
            capabilities: ["inference"], max_transaction_wei: null, max_daily_wei: null,
            daily_limit: 10n ** 11n, total_limit: 10n ** 12n, expires_in_days: 30
          }
        })
        yield* (yield* AgentStore).insert(agent)
        const plan = yield* (yield* PlanStore).insertSubscription({
          id: yield* generateId("sub"), account_id: accountId, order_id: yield* generateId("ord"), machine_id: "mock",
          plan_id: "builder", paid_with: "card", auto_renews: false, cancel_at_period_end: false,
          current_period_start: toTimestamp(now - 86_400_000), current_period_end: toTimestamp(now + 29 * 86_400_000),
          created_at: toTimestamp(now - 86_400_000), card_reference: null, renewal_error: null
        })
        const key = yield* apiKeys.issue(accountId, {
          name: "bench", permissions: ["inference", "read"], agent_id: agent.id, subscription_id: plan.id
        })
        const ledgerStore = yield* LedgerStore
        yield* ledgerStore.setBudgetLimit(accountId, "account", 900_000n * 10n ** 6n)
        yield* ledgerStore.setBudgetLimit(accountId, `key:${key.id}`, 800_000n * 10n ** 6n)
        secrets.push(key.secret)
      }
      if (has("alerts")) {
        yield* (yield* BillingSettingsStore).update(accountId, {
          alert_points: [50, 80, 100],
          auto_reload: { enabled: false, threshold: 1_000_000n, amount_usd: 5, card: null }
        })
      }
      accountIds.push(accountId)
    }
    return { secrets, accountIds } satisfies Scenario
  })

/** The metering check's figures over `accountIds`, through the ports (the same whatever the stores). */
const meteringOf = (accountIds: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const usageStore = yield* UsageStore
    const ledgerStore = yield* LedgerStore
    const ledger = yield* Ledger
    let records = 0, credits = 0n, cost = 0n, entries = 0, entriesTotal = 0n, pending = 0, posted = 0n, held = 0n
    const audit: Array<string> = []
    for (const accountId of accountIds) {
      const usage = yield* usageStore.list({ account_id: accountId, from: "2000-01-01T00:00:00.000Z", to: "2100-01-01T00:00:00.000Z" })
      records += usage.length
      for (const u of usage) {
        credits += u.credits
        cost += u.credits + u.from_allowance + u.from_trial
      }
      const used = (yield* ledgerStore.entries(accountId)).filter((e) => e.type === "usage")
      entries += used.length
      for (const e of used) entriesTotal += e.amount
      pending += (yield* ledgerStore.pending(accountId)).length
      for (const b of yield* ledgerStore.balances(accountId)) {
        posted += b.posted
        held += b.held
      }
      audit.push(...(yield* ledger.audit(accountId)).map((line) => `${accountId}: ${line}`))
    }
    return {
      usageRecords: String(records),
      usageCredits: String(credits),
      usageCost: String(cost),
      usageEntries: String(entries),
      usageEntriesTotal: String(entriesTotal),
      pendingReservations: String(pending),
      initial: String(INITIAL_CREDIT * BigInt(accountIds.length)),
      posted: String(posted),
      held: String(held),
      audit
    } satisfies Metering
  })

export const runServer = async () => {
  // --workers N: this process becomes a primary over N of these servers (benchWorkers.ts).
  const workers = Math.max(1, Math.round(num("workers", 1)))
  if (workers > 1 && cluster.isPrimary) return await runServerWorkers(workers)
  const databaseUrl = process.env.BENCH_DB_URL || undefined
  const memory = flag("stores") === "memory"
  const mockUrl = process.env.BENCH_MOCK_URL!
  const catalogue = await benchCatalogue(`${mockUrl}/v1`)
  const databaseOptions = { databaseUrl, dataDir: Database.MEMORY }
  const database = Database.layer(databaseOptions)
  // SqlClient stays visible (merged) for the database version, the backends and nothing else.
  // As `./platform start` on a server, account notices unless --no-notices (to measure them).
  const pgStores = Database.onServer(databaseOptions) && !has("no-notices") ? Layer.merge(PgPlatformStores, AccountNoticesPg) : PgPlatformStores
  const stores = memory ? FastMemoryStores : pgStores.pipe(Layer.provideMerge(database))
  const machineClient = flag("machine-client") === "fetch" ? MachineHttpLayer : MachineNodeHttpLayer
  const journalDirectory = Fs.mkdtempSync(`${Os.tmpdir()}/bench-journal-`)
  let app
  if (flag("server") === "proxy") {
    // The floor of the stack: the same Effect HTTP server and machine client, forwarding only.
    const ProxyRoute = Layer.unwrap(Effect.gen(function*() {
      const machines = yield* MachineClient
      const machine = (yield* Catalogue).config.machines[0]!
      return HttpRouter.add("POST", "/v1/chat/completions", (request) =>
        Effect.gen(function*() {
          const text = yield* Effect.orElseSucceed(request.text, () => "")
          const response = yield* machines.post(machine, "/chat/completions", JSON.parse(text), { firstByteTimeoutMs: 30_000 })
          if (response.headers["content-type"]?.startsWith("text/event-stream") === true) {
            return HttpServerResponse.stream(response.body, { contentType: "text/event-stream" })
          }
          const chunks = Array.from(yield* Stream.runCollect(response.body))
          return HttpServerResponse.uint8Array(Buffer.concat(chunks), { status: response.status, contentType: "application/json" })
        }).pipe(Effect.orDie))
    }))
    const services = Gateway.layer().pipe(
      Layer.provideMerge(Layer.mergeAll(Ledger.layer, ApiKeysLive, machineClient)),
      Layer.provideMerge(Catalogue.layer(catalogue)),
      Layer.provideMerge(stores)
    )
    app = HttpRouter.serve(Layer.mergeAll(ProxyRoute, ErrorShapeMiddleware), { disableListenLog: true, disableLogger: true }).pipe(
      Layer.provideMerge(NodeHttpServer.layer(Http.createServer, { port: 0, host: "127.0.0.1" })),
      Layer.provideMerge(services)
    )
  } else {
    // What users run: the Node shell's server, with main.ts's background work on.
    app = serverLayer({
      catalogue,
      // A worker of --workers N: the first one's port, shared (SO_REUSEPORT) as main.ts's workers share it.
      port: Number(process.env.BENCH_PORT ?? "0"),
      reusePort: cluster.isWorker,
      host: "127.0.0.1",
      ownerEmail: "owner@bench.local",
      platform: {
        healthCheck: {},
        sweepReservations: {},
        machineClient,
        // As main.ts: the metering journal on local disk, unless --no-journal.
        meteringJournal: has("no-journal")
          ? undefined
          : FileMeteringJournal.layer({ directory: journalDirectory }),
        // As main.ts with CREDIT_LEASES=on (docs/performance.md "Credit leases").
        ...(has("leases") ? { gateway: { creditLeases: true } } : {})
      }
    }, stores)
  }
  const runtime = ManagedRuntime.make(
    has("spans")
      ? app.pipe(Layer.provide(Layer.succeed(Tracer.Tracer, recordingTracer)))
      : has("no-tracing")
      ? app.pipe(Layer.provide(Layer.succeed(References.TracerEnabled, false)))
      : app
  )

  const ready = await runtime.runPromise(Effect.gen(function*() {
    const server = yield* HttpServer.HttpServer
    if (server.address._tag === "UnixPathAddress") return yield* Effect.die(new Error("expected a TCP address"))
    const sql = yield* Effect.serviceOption(SqlClient.SqlClient)
    const version = sql._tag === "None"
      ? "none: the stores are in memory (--stores memory)"
      : databaseUrl === undefined
      ? "PGlite (embedded, in memory)"
      : `PostgreSQL ${(yield* sql.value<{ readonly v: string }>`SELECT current_setting('server_version') AS v`)[0]!.v}`
    return { url: `http://127.0.0.1:${server.address.port}`, database: version }
  }))

  const backends = Effect.gen(function*() {
    const sql = yield* Effect.serviceOption(SqlClient.SqlClient)
    if (sql._tag === "None") return []
    const rows = yield* sql.value<{ readonly pid: number }>`
      SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend'`
    return rows.map((r) => Number(r.pid))
  })

  const gc = makeGcWatch()
  let alloc: Awaited<ReturnType<typeof startAllocWatch>> | undefined
  serveParent(async (op, arg) => {
    switch (op) {
      case "scenario": {
        const { name, accounts } = arg as { readonly name: ScenarioName; readonly accounts: number }
        return await runtime.runPromise(setUp(name, accounts))
      }
      case "idle": {
        const t0 = performance.now()
        await runtime.runPromise(Effect.flatMap(Gateway, (g) => g.idle))
        return performance.now() - t0
      }
      case "cpu":
        return { cpu: cpuMicros(), system: process.cpuUsage().system }
      case "gc-start":
        gc.start()
        return null
      case "gc-stop":
        return gc.stop()
      case "alloc-start":
        alloc = await startAllocWatch()
        return null
      case "alloc-stop": {
        const totals = await alloc!.stop()
        alloc = undefined
        return totals
      }
      case "spans": {
        const out = [...spanStats].map(([name, s]) => ({ name, count: s.count, totalUs: Number(s.totalNs / 1000n) }))
        spanStats.clear()
        return out
      }
      case "backends":
        return databaseUrl === undefined ? [] : await runtime.runPromise(backends)
      case "metering":
        // With --leases the last leases close at their time (10 s) and the sweep voids them.
        if (has("leases")) await new Promise((resolve) => setTimeout(resolve, 12_000))
        return await runtime.runPromise(meteringOf(arg as ReadonlyArray<string>))
      case "stop":
        await runtime.dispose()
        // The journal holds nothing open once the runtime is down (every call metered): not kept.
        Fs.rmSync(journalDirectory, { recursive: true, force: true })
        setImmediate(() => process.exit(0))
        return null
    }
    throw new Error(`unknown op ${op}`)
  })
  process.send!({ ready })
}
