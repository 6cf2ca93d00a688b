/**
 * A benchmark of the inference gateway (not a test): the latency the platform adds to a chat
 * completion over calling the machine directly, how many metered calls per second one server
 * process makes, and both beside the floor, a bare node:http pass-through measured in the same
 * run, with everything a real call does on: key authentication, the rpm counter, the budgets and
 * the reservation, settlement and the usage record, all in Postgres. docs/performance.md records
 * the numbers and the goals they are read against.
 *
 *   ./platform node adapters/node-http/bench/gateway.ts [flags]
 *
 * Processes (this machine has 2 cores, so each part gets its own event loop):
 *   - this one: the load generator (keep-alive node:http clients) and the orchestration;
 *   - a child: a fixed-latency mock machine (node:http, OpenAI-compatible: POST /v1/chat/completions
 *     answers a small fixed completion with usage after --delay-ms, GET /v1/models);
 *     `--mock-in loadgen` runs it in this process instead;
 *   - a child: the floor, a plain node:http server forwarding to the mock (no Effect, no work);
 *   - a child: the platform's Node server (bench/benchServer.ts) over the Postgres stores on
 *     DATABASE_URL or TEST_DATABASE_URL (a fresh database is created on that server and dropped
 *     afterwards), else the embedded PGlite in memory.
 *
 * Per scenario (--scenarios, in this order): a warm-up, then at concurrency 1 and 16 the same
 * request sent directly to the mock, through the floor and through the platform, interleaved in
 * --rounds rounds (so background load hits all alike); p50 and p99 of each, the latency each adds
 * over the direct call, calls per second (the platform's until the last settlement and usage
 * record is written: metered), CPU per call of the floor and of the server plus its Postgres
 * backends, the server's garbage collection per call (bench/gcWatch.ts; one server process only);
 * the goals (docs/performance.md) MET or MISSED, and the floor's own figures against the same
 * goals (a goal the floor misses is out of any platform's reach on that machine); then the metering
 * check of the scenario's accounts: one usage record and entry per call, the balance down by
 * exactly what the records charged, nothing held, the audit consistent.
 *
 * Scenarios:
 *   bare      one account with credits and one key, nothing configured
 *   budgeted  one account with every budget: its own monthly limit, the key's, an agent's key
 *             (daily and total limits) scoped to a plan whose allowance the warm-up spends
 *   spread    --accounts bare accounts (1,000), the load spread over them round-robin
 *
 * Flags (or env BENCH_<NAME>, e.g. BENCH_N16=5000):
 *   --scenarios bare,budgeted,spread   which scenarios, in order
 *   --accounts 1000    accounts of the spread scenario
 *   --n1 2000          measured calls at concurrency 1 (per side)
 *   --n16 8000         measured calls at concurrency 16 (per side)
 *   --warmup 1000      warm-up calls per side and scenario (at concurrency 16)
 *   --first-warmup 5000  the platform's warm-up in the first scenario: a fresh server process
 *                      measured after 1,000 calls was slower than after 5,000 (JIT)
 *   --rounds 4         rounds the measured calls are split into
 *   --delay-ms 2       the mock machine's fixed latency
 *   --stream-n 0       calls of a streaming run (stream: true) at c=1 and c=16, with the time to
 *                      the first body byte (the first event) added over the direct call; 0 skips it
 *   --mock-in child    where the mock runs: child (own process) or loadgen (this process)
 *   --workers 1        server processes (node:cluster workers on one port and one database, as
 *                      `./platform start --workers N` runs them); CPU per call sums them all
 *   --cpu-prof DIR     write a V8 CPU profile of the server process into DIR
 *   --alloc-prof       sample the server's allocations (bench/allocWatch.ts) and print, per
 *                      platform phase, the KB per call by package or folder and the functions
 *                      that allocate most (a diagnostic: the server runs several times slower)
 *   --server-v8 "ARGS" Node/V8 flags for the server process only, e.g. "--max-semi-space-size=64"
 *   --stores memory    the stores in memory instead of Postgres (bench/fastStores.ts: what the
 *                      gateway costs without a database; a diagnostic)
 *   --server proxy     the server only forwards each call (the same Effect HTTP server and machine
 *                      client, nothing metered): the floor of the stack
 *   --machine-client fetch  the server calls the machine with core's fetch client (Lambda's)
 *   --no-tracing       the server runs with Effect's tracer disabled
 *   --no-journal       the server keeps no metering journal (main.ts keeps one)
 *   --leases           credit leases on (CREDIT_LEASES=on): a key's calls admitted from its lease
 *   --no-notices       the server hears no account notices (main.ts does on PostgreSQL): the tier
 *                      and billing settings are read again every few seconds per account
 *   --keep-db          do not drop the benchmark's database at the end
 *   --alerts           every account has alert points (50, 80, 100) and a low-balance threshold,
 *                      so billing's check after each settled batch makes all its reads
 *   --spans            record the server's spans (each SQL statement by its text) and print their
 *                      mean wall time per platform call (a diagnostic: recording costs time)
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import * as Http from "node:http"
import * as Os from "node:os"
import { fileURLToPath } from "node:url"
import {
  argv,
  type Child,
  cpuMicros,
  flag,
  has,
  loadavg,
  machineJiffies,
  num,
  processesCpuMs,
  serveParent,
  startChild,
  startFloor,
  startMock
} from "./benchProcesses.ts"
import { type Metering, runServer, type Scenario, type ScenarioName } from "./benchServer.ts"
import { BENCH_MODEL, BENCH_PRICE, BENCH_USAGE } from "./fixtures.ts"
import { addAlloc, type AllocTotals, describeAlloc, NO_ALLOC } from "./allocWatch.ts"
import { addGc, type GcTotals, NO_GC } from "./gcWatch.ts"
import { load, merge, ms, type SideResult, type Target } from "./loadGenerator.ts"
import { printGoals, type ScenarioSummary } from "./goals.ts"

const ENTRY = fileURLToPath(import.meta.url)

/** Micro-credits per call: ceil((20 x 2_000_000 + 10 x 6_000_000) / 10^6) = 100. */
const COST_PER_CALL = BigInt(Math.ceil((BENCH_USAGE.prompt_tokens * BENCH_PRICE.input * 1e6 + BENCH_USAGE.completion_tokens * BENCH_PRICE.output * 1e6) / 1e6))

// ---- Roles: mock, floor -----------------------------------------------------------------------

const runMock = async () => {
  const mock = await startMock(num("delay-ms", 2))
  serveParent(async (op) => {
    if (op === "cpu") return { cpu: cpuMicros(), served: mock.served() }
    throw new Error(`unknown op ${op}`)
  })
  process.send!({ ready: { port: mock.port } })
}

const runFloor = async () => {
  const floor = await startFloor(new URL(process.env.BENCH_MOCK_URL!))
  serveParent(async (op) => {
    if (op === "cpu") return { cpu: cpuMicros() }
    throw new Error(`unknown op ${op}`)
  })
  process.send!({ ready: { port: floor.port } })
}

const main = async () => {
  const n1 = Math.round(num("n1", 2000))
  const n16 = Math.round(num("n16", 8000))
  const warmup = Math.round(num("warmup", 1000))
  const firstWarmup = Math.round(num("first-warmup", 5000))
  const rounds = Math.max(1, Math.round(num("rounds", 4)))
  const delayMs = num("delay-ms", 2)
  const streamN = Math.round(num("stream-n", 0))
  const spreadAccounts = Math.max(1, Math.round(num("accounts", 1000)))
  const mockIn = flag("mock-in") ?? "child"
  const workers = Math.max(1, Math.round(num("workers", 1)))
  const cpuProf = flag("cpu-prof")
  const allocProf = has("alloc-prof")
  if (allocProf && workers > 1) throw new Error("--alloc-prof samples one server process: not with --workers")
  const scenarios = (flag("scenarios") ?? "bare,budgeted,spread").split(",").map((s) => s.trim()).filter((s) => s !== "")
  for (const s of scenarios) if (!["bare", "budgeted", "spread"].includes(s)) throw new Error(`unknown scenario ${s}`)
  if (mockIn !== "child" && mockIn !== "loadgen") throw new Error(`--mock-in is child or loadgen, got ${mockIn}`)

  console.log(`gateway benchmark: ${Os.cpus().length} CPUs (${Os.cpus()[0]?.model ?? "?"}), Node ${process.version}, load average ${loadavg()}`)

  // The database: a fresh one on the server named by DATABASE_URL / TEST_DATABASE_URL, else PGlite.
  const serverUrl = process.env.DATABASE_URL || process.env.TEST_DATABASE_URL || undefined
  let benchDbUrl: string | undefined
  let benchDbName: string | undefined
  const admin = (statement: string) =>
    Effect.runPromise(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql.unsafe(statement)
    }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(serverUrl!) })), Effect.scoped))
  if (serverUrl !== undefined) {
    benchDbName = `bench_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 6)}`
    await admin(`CREATE DATABASE ${benchDbName}`)
    const url = new URL(serverUrl)
    url.pathname = `/${benchDbName}`
    benchDbUrl = url.toString()
  }

  const children: Array<Child> = []
  let inlineMock: Awaited<ReturnType<typeof startMock>> | undefined
  const agents: Array<Http.Agent> = []
  const target = (name: string, port: number, secrets: ReadonlyArray<string> = []): Target => {
    const agent = new Http.Agent({ keepAlive: true, maxSockets: 64 })
    agents.push(agent)
    return { name, port, agent, secrets, next: 0 }
  }
  try {
    let mockPort: number
    if (mockIn === "child") {
      const mock = await startChild(ENTRY, "mock", {})
      children.push(mock)
      mockPort = (mock.ready as { port: number }).port
    } else {
      inlineMock = await startMock(delayMs)
      mockPort = inlineMock.port
    }
    const mockUrl = `http://127.0.0.1:${mockPort}`
    const floor = await startChild(ENTRY, "floor", { BENCH_MOCK_URL: mockUrl })
    children.push(floor)
    const profArgs = [
      ...(cpuProf === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${cpuProf}`]),
      ...(flag("server-v8") ?? "").split(" ").filter((a) => a !== "")
    ]
    const server = await startChild(ENTRY, "server", { BENCH_DB_URL: benchDbUrl ?? "", BENCH_MOCK_URL: mockUrl }, profArgs)
    children.push(server)
    const ready = server.ready as { url: string; database: string }
    const backends = () => server.ask<ReadonlyArray<number>>("backends")
    console.log(`database: ${ready.database}${benchDbName === undefined ? "" : ` (fresh database ${benchDbName})`}`)
    console.log(
      `mock machine: ${delayMs} ms fixed latency, ${mockIn === "child" ? "in its own process" : "in the load generator's process"}; ` +
        `floor: a plain node:http pass-through in its own process; server: ${workers === 1 ? "one process" : `${workers} worker processes`}` +
        (cpuProf === undefined ? "" : `, CPU profile into ${cpuProf}`)
    )
    const variants = [
      flag("server") === "proxy" ? "--server proxy: forwarding only, nothing is metered" : undefined,
      flag("stores") === "memory" ? "--stores memory" : undefined,
      flag("machine-client") === "fetch" ? "--machine-client fetch" : undefined,
      has("no-tracing") ? "--no-tracing" : undefined,
      has("no-journal") ? "--no-journal" : undefined,
      has("no-notices") ? "--no-notices" : undefined,
      has("leases") ? "--leases: credit leases" : undefined,
      has("alerts") ? "--alerts" : undefined,
      has("spans") ? "--spans: spans recorded (slower)" : undefined,
      allocProf ? "--alloc-prof: the server's allocations sampled (several times slower: its times mean nothing)" : undefined
    ].filter((v) => v !== undefined)
    if (variants.length > 0) console.log(`variants: ${variants.join("; ")}`)

    const body = JSON.stringify({ model: BENCH_MODEL, messages: [{ role: "user", content: "Say hello to the benchmark." }], max_tokens: 16 })
    const streamBody = JSON.stringify({ ...JSON.parse(body), stream: true })
    const direct = target("direct", mockPort)
    const floorTarget = target("floor", (floor.ready as { port: number }).port)
    const platformPort = Number(new URL(ready.url).port)
    const cpuOf = async (child: Child) => (await child.ask<{ cpu: number }>("cpu")).cpu

    const summaries: Array<ScenarioSummary> = []
    let failed = false

    type Row = ReturnType<typeof row>
    function row(label: string, concurrency: number, d: ReturnType<typeof merge>, f: ReturnType<typeof merge>, p: ReturnType<typeof merge>, cpu: {
      floor: number
      server: number
      postgres: number | undefined
    }, busy: number | undefined, load: string) {
      return { label, concurrency, direct: d, floor: f, platform: p, cpu, busy, load }
    }

    for (const [index, scenario] of scenarios.entries()) {
      const name: ScenarioName = scenario === "budgeted" ? "budgeted" : "bare"
      const accounts = scenario === "spread" ? spreadAccounts : 1
      const setup = await server.ask<Scenario>("scenario", { name, accounts })
      const platform = target(`platform (${scenario})`, platformPort, setup.secrets)
      let platformCalls = 0
      const onPlatform = async (requestBody: string, stream: boolean, c: number, n: number) => {
        const r = await load(platform, requestBody, stream, c, n)
        platformCalls += n
        return r
      }
      console.log(`\n==== scenario ${scenario}: ${accounts} account(s), ${name === "budgeted" ? "every budget configured" : "nothing configured"}`)

      // Warm-up: JIT, connections, prepared statements, caches; the budgeted plan's allowance spent.
      await load(direct, body, false, 16, warmup)
      await load(floorTarget, body, false, 16, warmup)
      await onPlatform(body, false, 16, Math.max(index === 0 ? firstWarmup : warmup, accounts * 2))
      await onPlatform(body, false, 1, Math.min(200, warmup))
      await server.ask("idle")

      const measure = async (label: string, requestBody: string, stream: boolean, concurrency: number, n: number): Promise<Row> => {
        const perRound = Math.ceil(n / rounds)
        const d: Array<SideResult> = []
        const f: Array<SideResult> = []
        const p: Array<SideResult> = []
        const load0 = loadavg()
        const jiffies0 = machineJiffies()
        if (has("spans")) await server.ask("spans")
        let serverCpu = 0
        let floorCpu = 0
        let pgCpu = 0
        let pgSeen = false
        let gc = NO_GC
        let alloc = NO_ALLOC
        for (let r = 0; r < rounds; r++) {
          const count = Math.min(perRound, n - r * perRound)
          if (count <= 0) break
          const runDirect = async () => {
            const res = await load(direct, requestBody, stream, concurrency, count)
            d.push({ ...res, meteredMs: res.elapsedMs })
          }
          const runFloor = async () => {
            const c0 = await cpuOf(floor)
            const res = await load(floorTarget, requestBody, stream, concurrency, count)
            floorCpu += (await cpuOf(floor)) - c0
            f.push({ ...res, meteredMs: res.elapsedMs })
          }
          const runPlatform = async () => {
            const s0 = await cpuOf(server)
            // The pool opens connections as it needs them: backends new in the round count whole.
            const g0 = processesCpuMs(await backends())
            if (workers === 1) await server.ask("gc-start")
            if (allocProf) await server.ask("alloc-start")
            const res = await onPlatform(requestBody, stream, concurrency, count)
            const idleMs = await server.ask<number>("idle")
            serverCpu += (await cpuOf(server)) - s0
            if (workers === 1) gc = addGc(gc, await server.ask<GcTotals>("gc-stop"))
            if (allocProf) alloc = addAlloc(alloc, await server.ask<AllocTotals>("alloc-stop"))
            for (const [pid, cpu] of processesCpuMs(await backends())) {
              pgSeen = true
              pgCpu += cpu - (g0.get(pid) ?? 0)
            }
            p.push({ ...res, meteredMs: res.elapsedMs + idleMs })
          }
          // Rotate which side goes first, so drifting background load hits all alike.
          const sides = [runDirect, runFloor, runPlatform]
          for (let k = 0; k < sides.length; k++) await sides[(r + k) % sides.length]!()
        }
        const jiffies1 = machineJiffies()
        const pm = merge(p)
        const result = row(label, concurrency, merge(d), merge(f), pm, {
          floor: floorCpu / merge(f).calls,
          server: serverCpu / pm.calls,
          postgres: pgSeen ? (pgCpu * 1000) / pm.calls : undefined
        }, jiffies0 === undefined || jiffies1 === undefined ? undefined : (jiffies1.busy - jiffies0.busy) / (jiffies1.total - jiffies0.total), `${load0} -> ${loadavg()}`)
        const { direct: dd, floor: ff, platform: pp, cpu } = result
        console.log(
          `\n${scenario}: ${label} c=${concurrency} n=${n} per side, ${rounds} rounds   load average ${result.load}` +
            (result.busy === undefined ? "" : `, machine CPU busy ${(result.busy * 100).toFixed(0)}%`)
        )
        console.log(`  direct    p50 ${ms(dd.p50)} ms  p99 ${ms(dd.p99)} ms  ${dd.perSecond.toFixed(0)} calls/s`)
        console.log(
          `  floor     p50 ${ms(ff.p50)} ms  p99 ${ms(ff.p99)} ms  ${ff.perSecond.toFixed(0)} calls/s  added p50 ${ms(ff.p50 - dd.p50)} / p99 ${ms(ff.p99 - dd.p99)} ms  ` +
            `CPU ${cpu.floor.toFixed(0)} µs/call`
        )
        console.log(
          `  platform  p50 ${ms(pp.p50)} ms  p99 ${ms(pp.p99)} ms  ${pp.perSecond.toFixed(0)} answered/s, ${pp.meteredPerSecond.toFixed(0)} metered/s ` +
            `(${((pp.meteredPerSecond / ff.perSecond) * 100).toFixed(0)}% of the floor)  added p50 ${ms(pp.p50 - dd.p50)} / p99 ${ms(pp.p99 - dd.p99)} ms  ` +
            `CPU server ${cpu.server.toFixed(0)}${cpu.postgres === undefined ? "" : ` + Postgres ${cpu.postgres.toFixed(0)}`} µs/call`
        )
        if (gc.scavenges > 0) {
          console.log(
            `  GC (server)  per call ${(gc.allocatedBytes / pm.calls / 1024).toFixed(1)} KB allocated, ${(gc.promotedBytes / pm.calls / 1024).toFixed(1)} KB promoted; ` +
              `${gc.scavenges} scavenges, pause mean ${ms(gc.scavengePauseUs / gc.scavenges / 1000)} / longest ${ms(gc.longestScavengeUs / 1000)} ms; ` +
              `${gc.fullCollections} full collections`
          )
        }
        if (allocProf) for (const line of describeAlloc(alloc, pm.calls)) console.log(`  ${line}`)
        if (stream) {
          console.log(
            `  first byte  direct p50 ${ms(dd.firstByteP50)} ms, floor ${ms(ff.firstByteP50)} ms, platform ${ms(pp.firstByteP50)} ms: ` +
              `added p50 ${ms(pp.firstByteP50 - dd.firstByteP50)} / p99 ${ms(pp.firstByteP99 - dd.firstByteP99)} ms (floor ${ms(ff.firstByteP50 - dd.firstByteP50)})`
          )
        }
        if (has("spans")) {
          const spans = await server.ask<ReadonlyArray<{ name: string; count: number; totalUs: number }>>("spans")
          console.log(`  spans (wall time per platform call, mean; statements run per call):`)
          for (const s of [...spans].sort((a, b) => b.totalUs - a.totalUs).slice(0, 30)) {
            console.log(`    ${(s.totalUs / pp.calls).toFixed(0).padStart(6)} µs  x${(s.count / pp.calls).toFixed(2).padEnd(5)} ${s.name}`)
          }
        }
        return result
      }

      const c1 = await measure("chat", body, false, 1, n1)
      const c16 = await measure("chat", body, false, 16, n16)
      const stream1 = streamN > 0 ? await measure("chat stream", streamBody, true, 1, streamN) : undefined
      if (streamN > 0) await measure("chat stream", streamBody, true, 16, streamN)
      summaries.push({ scenario, c1, c16, stream1 })

      // Metering really happened: one usage record and entry per call, the balance down by exactly their charge.
      await server.ask("idle")
      if (flag("server") === "proxy") platformCalls = 0
      const v = await server.ask<Metering>("metering", setup.accountIds)
      const expected = BigInt(platformCalls) * COST_PER_CALL
      const drop = BigInt(v.initial) - BigInt(v.posted)
      const checks: Array<[string, boolean]> = [
        [`usage records ${v.usageRecords} == platform calls ${platformCalls}`, BigInt(v.usageRecords) === BigInt(platformCalls)],
        [`balance drop ${drop} == the records' credits ${v.usageCredits}`, drop === BigInt(v.usageCredits)],
        [`the records' cost (credits, allowance, trial) ${v.usageCost} == calls x ${COST_PER_CALL} = ${expected}`, BigInt(v.usageCost) === expected],
        [`usage ledger entries total ${v.usageEntriesTotal} == -${v.usageCredits}`, BigInt(v.usageEntriesTotal) === -BigInt(v.usageCredits)],
        [`nothing held (${v.held}), no pending reservation (${v.pendingReservations})`, v.held === "0" && v.pendingReservations === "0"],
        [`ledger audit: ${v.audit.length === 0 ? "consistent" : v.audit.slice(0, 3).join("; ")}`, v.audit.length === 0]
      ]
      console.log(`\n${scenario}: metering check (${v.usageEntries} usage entries):`)
      for (const [text, ok] of checks) console.log(`  ${ok ? "ok  " : "FAIL"} ${text}`)
      if (checks.some(([, ok]) => !ok)) failed = true
    }

    printGoals(summaries)
    if (failed) process.exitCode = 1

    await server.ask("stop").catch(() => undefined)
    await new Promise<void>((resolve) => {
      if (server.process.exitCode !== null) return resolve()
      server.process.once("exit", () => resolve())
    })
  } finally {
    for (const agent of agents) agent.destroy()
    for (const child of children) if (child.process.exitCode === null) child.process.kill("SIGTERM")
    inlineMock?.server.close()
    inlineMock?.server.closeAllConnections()
    if (benchDbName !== undefined && !has("keep-db")) {
      // The server's pool may still be closing: retry briefly.
      for (let i = 0; i < 10; i++) {
        try {
          await admin(`DROP DATABASE IF EXISTS ${benchDbName} WITH (FORCE)`)
          break
        } catch (error) {
          if (i === 9) console.error(`could not drop ${benchDbName}: ${String(error)}`)
          await new Promise((r) => setTimeout(r, 300))
        }
      }
    }
  }
}

const role = argv.find((a) => a.startsWith("--role="))?.slice("--role=".length)
if (role === "mock") await runMock()
else if (role === "floor") await runFloor()
else if (role === "server") await runServer()
else await main()
