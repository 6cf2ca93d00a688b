/**
 * A benchmark of the inference gateway (not a test): the latency the platform adds to a chat
 * completion over calling the machine directly, and how many metered calls per second one server
 * process makes, with everything a real call does on: key authentication, the rpm counter, the
 * reservation of the cost bound, settlement and the usage record, all in Postgres.
 * docs/performance.md records the numbers and how to read them.
 *
 *   ./platform node adapters/node-http/bench/gateway.ts [flags]
 *
 * Processes (this machine has 2 cores, so each part gets its own event loop):
 *   - this one: the load generator (keep-alive node:http clients) and the orchestration;
 *   - a child: a fixed-latency mock machine (node:http, OpenAI-compatible: POST /v1/chat/completions
 *     answers a small fixed completion with usage after --delay-ms, GET /v1/models);
 *     `--mock-in loadgen` runs it in this process instead;
 *   - a child: the platform's Node server, built by the Node shell's own `serverLayer` (Server.ts:
 *     every route, the Gateway engine, the node:http machine client, health checks and the
 *     reservation sweeper on as `./platform start` runs them) over the Postgres stores on
 *     DATABASE_URL or TEST_DATABASE_URL (a fresh database is created on that server and dropped
 *     afterwards), else the embedded PGlite in memory.
 *
 * The runs: a warm-up, then at concurrency 1 and 16 the same request sent directly to the mock and
 * through the platform, interleaved in --rounds rounds (so background load hits both alike); p50
 * and p99 of each and their difference (the added latency); calls per second answered and metered
 * (until the last settlement and usage record are written). Then the check that metering happened:
 * one usage record per platform call, and the balance down by exactly the sum of their costs.
 *
 * Flags (or env BENCH_<NAME>, e.g. BENCH_N16=5000):
 *   --n1 5000          measured calls at concurrency 1 (per side)
 *   --n16 20000        measured calls at concurrency 16 (per side)
 *   --warmup 2000      warm-up calls per side (at concurrency 16)
 *   --rounds 5         rounds the measured calls are split into
 *   --delay-ms 2       the mock machine's fixed latency
 *   --stream-n 2000    calls of the streaming run (stream: true) at c=1 and c=16; 0 skips it
 *   --mock-in child    where the mock runs: child (own process) or loadgen (this process)
 *   --cpu-prof DIR     write a V8 CPU profile of the server process into DIR
 *   --stores memory    the stores in memory instead of Postgres (what the gateway costs without a
 *                      database; a diagnostic, not the product's configuration): bench/fastStores.ts,
 *                      constant-time per call (the test harness's memory stores copy their maps on
 *                      every write, so they would measure themselves)
 *   --server proxy     the server only forwards each call to the machine (the same Effect HTTP
 *                      server and machine client, no key, rpm, reservation or metering, composed here
 *                      rather than by serverLayer): the floor of the stack
 *   --server raw       a plain node:http server forwarding with node:http (no Effect at all): what a
 *                      second hop costs on this machine
 *   --machine-client fetch  the server calls the machine with core's fetch client (MachineHttp.ts,
 *                      what Lambda uses) instead of the Node shell's node:http one (MachineNodeHttp.ts)
 *   --no-tracing       the server runs with Effect's tracer disabled (References.TracerEnabled):
 *                      what the spans of Effect.fn / withSpan / the SQL client cost
 *   --no-journal       the server keeps no metering journal (main.ts keeps one: FileMeteringJournal)
 *   --keep-db          do not drop the benchmark's database at the end
 *   --alerts           the account has alert points (50, 80, 100) and a low-balance threshold (1
 *                      credit, never crossed), so billing's check after each settled batch makes
 *                      all its reads (docs/billing.md "Alerts"); without it the account configured
 *                      nothing and billing reads its settings once per SETTINGS_CACHE_MS (5 s)
 *   --spans            record the server's Effect spans (each SQL statement by its text, each store
 *                      and use-case span) and print their mean wall time per platform call, per run;
 *                      a diagnostic: recording costs time itself, so latencies of such a run are higher
 */
import { ApiKeysLive, ErrorShapeMiddleware } from "@model-platform/core/http"
import { NodeHttpServer } from "@effect/platform-node"
import { PgClient } from "@effect/sql-pg"
import { AccountStore, ApiKeys } from "@model-platform/core/keys"
import { Catalogue } from "@model-platform/core/catalogue"
import { Gateway, MachineClient, MachineHttpLayer } from "@model-platform/core/gateway"
import { Ledger, LedgerStore } from "@model-platform/core/ledger"
import { BillingSettingsStore, UsageStore } from "@model-platform/core/billing"
import { Effect, Layer, ManagedRuntime, Redacted, References, Stream, Tracer } from "effect"
import { HttpRouter, HttpServer, HttpServerResponse } from "effect/http"
import { SqlClient } from "effect/sql"
import { type ChildProcess, fork } from "node:child_process"
import * as Fs from "node:fs"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as Os from "node:os"
import { fileURLToPath } from "node:url"
import { FileMeteringJournal } from "../src/FileMeteringJournal.ts"
import { MachineNodeHttpLayer } from "../src/MachineNodeHttp.ts"
import { Database } from "../src/postgres/Database.ts"
import { PgPlatformStores } from "../src/postgres/PgPlatformStores.ts"
import { serverLayer } from "../src/Server.ts"
import { FastMemoryStores } from "./fastStores.ts"
import { BENCH_COMPLETION, BENCH_MODEL, BENCH_PRICE, BENCH_STREAM, BENCH_USAGE, benchCatalogue } from "./fixtures.ts"

// ---- Flags --------------------------------------------------------------------------------

const argv = process.argv.slice(2)
const flag = (name: string): string | undefined => {
  const i = argv.indexOf(`--${name}`)
  if (i !== -1) return argv[i + 1]
  const inline = argv.find((a) => a.startsWith(`--${name}=`))
  if (inline !== undefined) return inline.slice(name.length + 3)
  return process.env[`BENCH_${name.toUpperCase().replaceAll("-", "_")}`]
}
const has = (name: string) => argv.includes(`--${name}`) || process.env[`BENCH_${name.toUpperCase().replaceAll("-", "_")}`] === "1"
const num = (name: string, fallback: number) => {
  const value = flag(name)
  if (value === undefined) return fallback
  const n = Number(value)
  if (!Number.isFinite(n) || n < 0) throw new Error(`--${name} must be a non-negative number, got ${value}`)
  return n
}

// ---- The mock machine ---------------------------------------------------------------------

const MODEL = BENCH_MODEL
/** What the mock reports per call, and so what each call costs (see PRICE). */
const USAGE = BENCH_USAGE
/** Credits per million tokens of the benchmark's model: input 2, output 6. */
const PRICE = BENCH_PRICE
/** Micro-credits per call: ceil((20 x 2_000_000 + 10 x 6_000_000) / 10^6) = 100. */
const COST_PER_CALL = BigInt(Math.ceil((USAGE.prompt_tokens * PRICE.input * 1e6 + USAGE.completion_tokens * PRICE.output * 1e6) / 1e6))

const completion = BENCH_COMPLETION
const streamed = BENCH_STREAM

const modelList = JSON.stringify({ object: "list", data: [{ id: MODEL, object: "model", created: 1_700_000_000, owned_by: "bench" }] })

/** Starts the mock machine on a free port of 127.0.0.1; resolves with the server and its port. */
const startMock = (delayMs: number): Promise<{ server: Http.Server; port: number; served: () => number }> => {
  let served = 0
  const server = Http.createServer((req, res) => {
    if (req.method === "GET" && (req.url === "/v1/models" || req.url === "/models")) {
      res.writeHead(200, { "content-type": "application/json" }).end(modelList)
      return
    }
    if (req.method !== "POST" || req.url !== "/v1/chat/completions") {
      res.writeHead(404, { "content-type": "application/json" }).end(`{"error":{"message":"not found","type":"invalid_request_error","code":"not_found"}}`)
      return
    }
    const parts: Array<Buffer> = []
    req.on("data", (c: Buffer) => parts.push(c))
    req.on("end", () => {
      let stream = false
      try {
        stream = (JSON.parse(Buffer.concat(parts).toString("utf8")) as { stream?: unknown }).stream === true
      } catch {
        res.writeHead(400, { "content-type": "application/json" }).end(`{"error":{"message":"bad json","type":"invalid_request_error","code":"invalid_json"}}`)
        return
      }
      served++
      setTimeout(() => {
        if (!stream) {
          res.writeHead(200, { "content-type": "application/json" }).end(completion)
          return
        }
        res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
        for (const event of streamed) res.write(event)
        res.end()
      }, delayMs)
    })
  })
  server.keepAliveTimeout = 60_000
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => resolve({ server, port: (server.address() as AddressInfo).port, served: () => served }))
  )
}

// ---- IPC between this process and its children ----------------------------------------

interface Request {
  readonly id: number
  readonly op: string
  readonly arg?: unknown
}
interface Reply {
  readonly id: number
  readonly ok: boolean
  readonly value?: unknown
  readonly error?: string
}

/** Answers requests from the parent with `handle`; the first message sent is `ready`. */
const serveParent = (handle: (op: string, arg: unknown) => Promise<unknown>) => {
  process.on("message", (message: Request) => {
    handle(message.op, message.arg).then(
      (value) => process.send!({ id: message.id, ok: true, value } satisfies Reply),
      (error: unknown) => process.send!({ id: message.id, ok: false, error: String(error instanceof Error ? error.stack : error) } satisfies Reply)
    )
  })
}

interface Child {
  readonly process: ChildProcess
  readonly ready: unknown
  readonly ask: <A>(op: string, arg?: unknown) => Promise<A>
}

const startChild = (role: string, env: Record<string, string>, execArgv: ReadonlyArray<string> = []): Promise<Child> =>
  new Promise((resolve, reject) => {
    const child = fork(fileURLToPath(import.meta.url), [`--role=${role}`, ...argv], {
      env: { ...process.env, ...env },
      execArgv: [...process.execArgv, ...execArgv],
      stdio: ["ignore", "inherit", "inherit", "ipc"]
    })
    let next = 1
    const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>()
    const ask = <A>(op: string, arg?: unknown) =>
      new Promise<A>((res, rej) => {
        const id = next++
        pending.set(id, { resolve: res as (v: unknown) => void, reject: rej })
        child.send({ id, op, arg } satisfies Request)
      })
    child.once("exit", (code) => {
      reject(new Error(`the ${role} process exited with ${code} before it was ready`))
      for (const p of pending.values()) p.reject(new Error(`the ${role} process exited with ${code}`))
    })
    child.on("message", (message: Reply | { readonly ready: unknown }) => {
      if ("ready" in message) {
        resolve({ process: child, ready: message.ready, ask })
        return
      }
      const p = pending.get(message.id)
      pending.delete(message.id)
      if (message.ok) p?.resolve(message.value)
      else p?.reject(new Error(`${role}: ${message.error}`))
    })
  })

const cpuMicros = () => {
  const c = process.cpuUsage()
  return c.user + c.system
}

// ---- Role: mock ---------------------------------------------------------------------------

const runMock = async () => {
  const mock = await startMock(num("delay-ms", 2))
  serveParent(async (op) => {
    if (op === "cpu") return { cpu: cpuMicros(), served: mock.served() }
    throw new Error(`unknown op ${op}`)
  })
  process.send!({ ready: { port: mock.port } })
}

// ---- Role: server -------------------------------------------------------------------------

/** Micro-credits the benchmark's account starts with (one million credits). */
const INITIAL_CREDIT = 1_000_000n * 1_000_000n

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

const runServer = async () => {
  const databaseUrl = process.env.BENCH_DB_URL || undefined
  const memory = flag("stores") === "memory"
  const mockUrl = process.env.BENCH_MOCK_URL!
  const catalogue = await benchCatalogue(`${mockUrl}/v1`)
  const database = Database.layer({ databaseUrl, dataDir: Database.MEMORY })
  // SqlClient stays visible (merged) for the database version, the backends and nothing else.
  const stores = memory ? FastMemoryStores : PgPlatformStores.pipe(Layer.provideMerge(database))
  const machineClient = flag("machine-client") === "fetch" ? MachineHttpLayer : MachineNodeHttpLayer
  let app
  if (flag("server") === "proxy") {
    // The floor: the same Effect HTTP server and machine client, forwarding only.
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
      port: 0,
      host: "127.0.0.1",
      ownerEmail: "owner@bench.local",
      platform: {
        healthCheck: {},
        sweepReservations: {},
        machineClient,
        // As main.ts: the metering journal on local disk, unless --no-journal.
        meteringJournal: has("no-journal")
          ? undefined
          : FileMeteringJournal.layer({ directory: Fs.mkdtempSync(`${Os.tmpdir()}/bench-journal-`) })
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

  const setup = Effect.gen(function*() {
    const server = yield* HttpServer.HttpServer
    if (server.address._tag === "UnixPathAddress") return yield* Effect.die(new Error("expected a TCP address"))
    const sql = yield* Effect.serviceOption(SqlClient.SqlClient)
    const version = sql._tag === "None"
      ? "none: the stores are in memory (--stores memory)"
      : databaseUrl === undefined
      ? "PGlite (embedded, in memory)"
      : `PostgreSQL ${(yield* sql.value<{ readonly v: string }>`SELECT current_setting('server_version') AS v`)[0]!.v}`
    const accountId = `acct_bench_${Date.now().toString(36)}`
    yield* (yield* AccountStore).insert({ id: accountId, email: `${accountId}@bench.local`, created_at: new Date().toISOString() })
    const key = yield* (yield* ApiKeys).issue(accountId, { name: "bench", permissions: ["inference", "read"] })
    yield* (yield* Ledger).credit(accountId, { ref: `bench_grant_${accountId}`, machine_id: null, amount: INITIAL_CREDIT, type: "credit_added" })
    if (has("alerts")) {
      yield* (yield* BillingSettingsStore).update(accountId, {
        alert_points: [50, 80, 100],
        auto_reload: { enabled: false, threshold: 1_000_000n, amount_usd: 5, card: null }
      })
    }
    return { url: `http://127.0.0.1:${server.address.port}` as string, secret: key.secret, accountId, database: version }
  })
  const ready = await runtime.runPromise(setup)
  if (flag("server") === "raw") {
    const agent = new Http.Agent({ keepAlive: true, maxSockets: 256 })
    const target = new URL(mockUrl)
    const raw = Http.createServer((req, res) => {
      const forward = Http.request(
        { host: target.hostname, port: target.port, path: req.url, method: req.method, agent, headers: { "content-type": "application/json" } },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, { "content-type": answer.headers["content-type"] ?? "application/json" })
          answer.pipe(res)
        }
      )
      forward.on("error", () => res.writeHead(502).end())
      req.pipe(forward)
    })
    raw.keepAliveTimeout = 60_000
    await new Promise<void>((resolve) => raw.listen(0, "127.0.0.1", resolve))
    ready.url = `http://127.0.0.1:${(raw.address() as AddressInfo).port}`
  }

  // Through the ports, so it reads the same whatever the stores.
  const verify = Effect.gen(function*() {
    const usage = yield* (yield* UsageStore).list({
      account_id: ready.accountId,
      from: "2000-01-01T00:00:00.000Z",
      to: "2100-01-01T00:00:00.000Z"
    })
    const ledgerStore = yield* LedgerStore
    const entries = (yield* ledgerStore.entries(ready.accountId)).filter((e) => e.type === "usage")
    const pending = yield* ledgerStore.pending(ready.accountId)
    const balances = yield* ledgerStore.balances(ready.accountId)
    const audit = yield* (yield* Ledger).audit(ready.accountId)
    const sum = (xs: ReadonlyArray<bigint>) => xs.reduce((a, b) => a + b, 0n)
    return {
      usageRecords: String(usage.length),
      usageCredits: String(sum(usage.map((u) => u.credits))),
      usageEntries: String(entries.length),
      usageEntriesTotal: String(sum(entries.map((e) => e.amount))),
      pendingReservations: String(pending.length),
      initial: String(INITIAL_CREDIT),
      posted: String(sum(balances.map((b) => b.posted))),
      held: String(sum(balances.map((b) => b.held))),
      audit
    }
  })

  const backends = Effect.gen(function*() {
    const sql = yield* Effect.serviceOption(SqlClient.SqlClient)
    if (sql._tag === "None") return []
    const rows = yield* sql.value<{ readonly pid: number }>`
      SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend'`
    return rows.map((r) => Number(r.pid))
  })

  serveParent(async (op) => {
    switch (op) {
      case "idle": {
        const t0 = performance.now()
        await runtime.runPromise(Effect.flatMap(Gateway, (g) => g.idle))
        return performance.now() - t0
      }
      case "cpu":
        return { cpu: cpuMicros(), system: process.cpuUsage().system }
      case "spans": {
        const out = [...spanStats].map(([name, s]) => ({ name, count: s.count, totalUs: Number(s.totalNs / 1000n) }))
        spanStats.clear()
        return out
      }
      case "backends":
        return databaseUrl === undefined ? [] : await runtime.runPromise(backends)
      case "verify":
        return await runtime.runPromise(verify)
      case "stop":
        await runtime.dispose()
        setImmediate(() => process.exit(0))
        return null
    }
    throw new Error(`unknown op ${op}`)
  })
  process.send!({ ready })
}

// ---- Role: load generator (the main process) ----------------------------------------------

interface Target {
  readonly name: string
  readonly port: number
  readonly path: string
  readonly headers: Record<string, string>
  readonly agent: Http.Agent
}

const request = (target: Target, body: string, stream: boolean): Promise<void> =>
  new Promise((resolve, reject) => {
    const req = Http.request(
      { host: "127.0.0.1", port: target.port, path: target.path, method: "POST", agent: target.agent, headers: target.headers },
      (res) => {
        let text = ""
        res.setEncoding("utf8")
        res.on("data", (c: string) => (text += c))
        res.on("end", () => {
          if (res.statusCode !== 200) return reject(new Error(`${target.name}: status ${res.statusCode}: ${text.slice(0, 300)}`))
          if (stream ? !text.includes("data: [DONE]") : !text.includes(`"usage"`)) {
            return reject(new Error(`${target.name}: unexpected answer: ${text.slice(0, 300)}`))
          }
          resolve()
        })
        res.on("error", reject)
      }
    )
    req.on("error", reject)
    req.end(body)
  })

/** `n` calls from `concurrency` workers; latencies in ms, in completion order. */
const load = async (target: Target, body: string, stream: boolean, concurrency: number, n: number) => {
  const latencies = new Float64Array(n)
  let next = 0
  let done = 0
  const t0 = performance.now()
  await Promise.all(Array.from({ length: Math.min(concurrency, n) }, async () => {
    while (next < n) {
      next++
      const s = performance.now()
      await request(target, body, stream)
      latencies[done++] = performance.now() - s
    }
  }))
  return { latencies, elapsedMs: performance.now() - t0 }
}

const percentile = (sorted: Float64Array, p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!

/** Busy and total jiffies of the whole machine (Linux), for how loaded it was during a run. */
const machineJiffies = (): { busy: number; total: number } | undefined => {
  try {
    const line = Fs.readFileSync("/proc/stat", "utf8").split("\n")[0]!
    const v = line.trim().split(/\s+/).slice(1).map(Number)
    const idle = (v[3] ?? 0) + (v[4] ?? 0)
    const total = v.reduce((a, b) => a + b, 0)
    return { busy: total - idle, total }
  } catch {
    return undefined
  }
}

/** CPU of some processes in ms by pid (Linux /proc, utime + stime; 10 ms resolution). */
const processesCpuMs = (pids: ReadonlyArray<number>): Map<number, number> => {
  const tick = 1000 / 100
  const out = new Map<number, number>()
  for (const pid of pids) {
    try {
      const stat = Fs.readFileSync(`/proc/${pid}/stat`, "utf8")
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
      out.set(pid, (Number(fields[11]) + Number(fields[12])) * tick)
    } catch {
      // gone, or not on this machine
    }
  }
  return out
}

const loadavg = () => Os.loadavg().map((l) => l.toFixed(2)).join(" ")

const ms = (x: number) => x.toFixed(3)

interface SideResult {
  readonly latencies: Float64Array
  readonly elapsedMs: number
  /** For the platform: the time until every settlement and usage record of the run was written. */
  readonly meteredMs: number
}

const main = async () => {
  const n1 = Math.round(num("n1", 5000))
  const n16 = Math.round(num("n16", 20000))
  const warmup = Math.round(num("warmup", 2000))
  const rounds = Math.max(1, Math.round(num("rounds", 5)))
  const delayMs = num("delay-ms", 2)
  const streamN = Math.round(num("stream-n", 2000))
  const mockIn = flag("mock-in") ?? "child"
  const cpuProf = flag("cpu-prof")
  if (mockIn !== "child" && mockIn !== "loadgen") throw new Error(`--mock-in is child or loadgen, got ${mockIn}`)

  console.log(`gateway benchmark: ${Os.cpus().length} CPUs (${Os.cpus()[0]?.model ?? "?"}), Node ${process.version}, load average ${loadavg()}`)

  // The database: a fresh one on the server named by DATABASE_URL / TEST_DATABASE_URL, else PGlite.
  const serverUrl = process.env.DATABASE_URL || process.env.TEST_DATABASE_URL || undefined
  let benchDbUrl: string | undefined
  let benchDbName: string | undefined
  const admin = async (statement: string) => {
    await Effect.runPromise(
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql.unsafe(statement)
      }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(serverUrl!) })), Effect.scoped)
    )
  }
  if (serverUrl !== undefined) {
    benchDbName = `bench_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 6)}`
    await admin(`CREATE DATABASE ${benchDbName}`)
    const url = new URL(serverUrl)
    url.pathname = `/${benchDbName}`
    benchDbUrl = url.toString()
  }

  const children: Array<Child> = []
  let inlineMock: Awaited<ReturnType<typeof startMock>> | undefined
  try {
    let mockPort: number
    let mockCpu: () => Promise<number | undefined>
    if (mockIn === "child") {
      const mock = await startChild("mock", {})
      children.push(mock)
      mockPort = (mock.ready as { port: number }).port
      mockCpu = async () => (await mock.ask<{ cpu: number }>("cpu")).cpu
    } else {
      inlineMock = await startMock(delayMs)
      mockPort = inlineMock.port
      mockCpu = async () => undefined
    }
    const profArgs = cpuProf === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${cpuProf}`]
    const server = await startChild("server", { BENCH_DB_URL: benchDbUrl ?? "", BENCH_MOCK_URL: `http://127.0.0.1:${mockPort}` }, profArgs)
    children.push(server)
    const ready = server.ready as { url: string; secret: string; accountId: string; database: string }
    const backends = () => server.ask<ReadonlyArray<number>>("backends")
    console.log(`database: ${ready.database}${benchDbName === undefined ? "" : ` (fresh database ${benchDbName})`}`)
    console.log(
      `mock machine: ${delayMs} ms fixed latency, ${mockIn === "child" ? "in its own process" : "in the load generator's process"}; ` +
        `server: one process${cpuProf === undefined ? "" : `, CPU profile into ${cpuProf}`}`
    )
    const variants = [
      flag("server") === "proxy" ? "--server proxy: forwarding only, nothing is metered" : undefined,
      flag("server") === "raw" ? "--server raw: plain node:http forwarding, nothing is metered" : undefined,
      flag("stores") === "memory" ? "--stores memory" : undefined,
      flag("machine-client") === "fetch" ? "--machine-client fetch: core's fetch client instead of node:http" : undefined,
      has("no-tracing") ? "--no-tracing: Effect's tracer off" : undefined,
      has("spans") ? "--spans: spans recorded (slower)" : undefined
    ].filter((v) => v !== undefined)
    if (variants.length > 0) console.log(`variants: ${variants.join("; ")}`)

    const body = JSON.stringify({ model: MODEL, messages: [{ role: "user", content: "Say hello to the benchmark." }], max_tokens: 16 })
    const streamBody = JSON.stringify({ ...JSON.parse(body), stream: true })
    const agents: Array<Http.Agent> = []
    const target = (name: string, port: number, headers: Record<string, string>): Target => {
      const agent = new Http.Agent({ keepAlive: true, maxSockets: 64 })
      agents.push(agent)
      return { name, port, path: "/v1/chat/completions", headers: { "content-type": "application/json", ...headers }, agent }
    }
    const direct = target("direct", mockPort, {})
    const platform = target("platform", Number(new URL(ready.url).port), { authorization: `Bearer ${ready.secret}` })

    let platformCalls = 0
    const onPlatform = async (body: string, stream: boolean, c: number, n: number) => {
      const r = await load(platform, body, stream, c, n)
      platformCalls += n
      return r
    }

    // Warm-up: JIT, connections, prepared statements, the tier cache.
    await load(direct, body, false, 16, warmup)
    await onPlatform(body, false, 16, warmup)
    await load(direct, body, false, 1, Math.min(500, warmup))
    await onPlatform(body, false, 1, Math.min(500, warmup))
    await server.ask("idle")

    const measure = async (label: string, requestBody: string, stream: boolean, concurrency: number, n: number) => {
      const perRound = Math.ceil(n / rounds)
      const d: Array<SideResult> = []
      const p: Array<SideResult> = []
      const load0 = loadavg()
      const jiffies0 = machineJiffies()
      if (has("spans")) await server.ask("spans")
      let serverCpu = 0
      let serverSys = 0
      let mockCpuTotal = 0
      let pgCpu = 0
      let pgSeen = false
      for (let r = 0; r < rounds; r++) {
        const count = Math.min(perRound, n - r * perRound)
        if (count <= 0) break
        const runDirect = async () => {
          const m0 = await mockCpu()
          const res = await load(direct, requestBody, stream, concurrency, count)
          const m1 = await mockCpu()
          if (m0 !== undefined && m1 !== undefined) mockCpuTotal += m1 - m0
          d.push({ ...res, meteredMs: res.elapsedMs })
        }
        const runPlatform = async () => {
          const s0 = await server.ask<{ cpu: number; system: number }>("cpu")
          // The pool opens connections as it needs them: backends new in the round count whole.
          const g0 = processesCpuMs(await backends())
          const res = await onPlatform(requestBody, stream, concurrency, count)
          const idleMs = await server.ask<number>("idle")
          const s1 = await server.ask<{ cpu: number; system: number }>("cpu")
          const g1 = processesCpuMs(await backends())
          serverCpu += s1.cpu - s0.cpu
          serverSys += s1.system - s0.system
          for (const [pid, cpu] of g1) {
            pgSeen = true
            pgCpu += cpu - (g0.get(pid) ?? 0)
          }
          p.push({ ...res, meteredMs: res.elapsedMs + idleMs })
        }
        // Alternate which side goes first, so drifting background load hits both alike.
        if (r % 2 === 0) {
          await runDirect()
          await runPlatform()
        } else {
          await runPlatform()
          await runDirect()
        }
      }
      const jiffies1 = machineJiffies()
      const merge = (sides: Array<SideResult>) => {
        const all = new Float64Array(sides.reduce((s, x) => s + x.latencies.length, 0))
        let o = 0
        for (const s of sides) {
          all.set(s.latencies, o)
          o += s.latencies.length
        }
        all.sort()
        const elapsed = sides.reduce((s, x) => s + x.elapsedMs, 0)
        const metered = sides.reduce((s, x) => s + x.meteredMs, 0)
        return { all, perSecond: all.length / (elapsed / 1000), meteredPerSecond: all.length / (metered / 1000) }
      }
      const dm = merge(d)
      const pm = merge(p)
      const row = {
        label,
        concurrency,
        n,
        direct: { p50: percentile(dm.all, 0.5), p99: percentile(dm.all, 0.99), perSecond: dm.perSecond },
        platform: { p50: percentile(pm.all, 0.5), p99: percentile(pm.all, 0.99), perSecond: pm.perSecond, meteredPerSecond: pm.meteredPerSecond },
        added: { p50: percentile(pm.all, 0.5) - percentile(dm.all, 0.5), p99: percentile(pm.all, 0.99) - percentile(dm.all, 0.99) },
        serverCpuUsPerCall: serverCpu / pm.all.length,
        serverSysUsPerCall: serverSys / pm.all.length,
        mockCpuUsPerCall: mockIn === "child" ? mockCpuTotal / dm.all.length : undefined,
        postgresCpuUsPerCall: !pgSeen ? undefined : (pgCpu * 1000) / pm.all.length,
        machineBusy: jiffies0 === undefined || jiffies1 === undefined
          ? undefined
          : (jiffies1.busy - jiffies0.busy) / (jiffies1.total - jiffies0.total),
        load: `${load0} -> ${loadavg()}`
      }
      console.log(
        `\n${label} c=${concurrency} n=${n} (x2, ${rounds} rounds)   load average ${row.load}` +
          (row.machineBusy === undefined ? "" : `, machine CPU busy ${(row.machineBusy * 100).toFixed(0)}%`)
      )
      console.log(`  direct    p50 ${ms(row.direct.p50)} ms  p99 ${ms(row.direct.p99)} ms  ${row.direct.perSecond.toFixed(0)} calls/s`)
      console.log(
        `  platform  p50 ${ms(row.platform.p50)} ms  p99 ${ms(row.platform.p99)} ms  ${row.platform.perSecond.toFixed(0)} calls/s answered, ` +
          `${row.platform.meteredPerSecond.toFixed(0)} metered/s`
      )
      console.log(`  added     p50 ${ms(row.added.p50)} ms  p99 ${ms(row.added.p99)} ms`)
      console.log(
        `  CPU per platform call: server ${row.serverCpuUsPerCall.toFixed(0)} µs (system ${row.serverSysUsPerCall.toFixed(0)})` +
          (row.postgresCpuUsPerCall === undefined ? "" : `, Postgres backends ${row.postgresCpuUsPerCall.toFixed(0)} µs`) +
          (row.mockCpuUsPerCall === undefined ? "" : `; per direct call: mock ${row.mockCpuUsPerCall.toFixed(0)} µs`)
      )
      if (has("spans")) {
        const spans = await server.ask<ReadonlyArray<{ name: string; count: number; totalUs: number }>>("spans")
        const calls = pm.all.length
        console.log(`  spans (wall time per platform call, mean; statements run per call):`)
        for (const s of [...spans].sort((a, b) => b.totalUs - a.totalUs).slice(0, 40)) {
          console.log(`    ${(s.totalUs / calls).toFixed(0).padStart(6)} µs  x${(s.count / calls).toFixed(2).padEnd(5)} ${s.name}`)
        }
      }
      return row
    }

    const rows = []
    rows.push(await measure("chat", body, false, 1, n1))
    rows.push(await measure("chat", body, false, 16, n16))
    if (streamN > 0) {
      rows.push(await measure("chat stream", streamBody, true, 1, streamN))
      rows.push(await measure("chat stream", streamBody, true, 16, streamN))
    }

    // Targets (docs/performance.md): added p99 <= 1 ms at c=1 and <= 3 ms at c=16.
    console.log("\ntargets (non-streaming):")
    for (const [c, limit] of [[1, 1], [16, 3]] as const) {
      const row = rows.find((r) => r.label === "chat" && r.concurrency === c)!
      console.log(`  c=${c}: added p99 ${ms(row.added.p99)} ms <= ${limit} ms: ${row.added.p99 <= limit ? "MET" : "MISSED"}`)
    }
    const c16 = rows.find((r) => r.label === "chat" && r.concurrency === 16)!
    console.log(`  metered calls per second at c=16: ${c16.platform.meteredPerSecond.toFixed(0)}`)

    // Metering really happened: one usage record per platform call, the balance down by their cost.
    if (flag("server") === "proxy" || flag("server") === "raw") platformCalls = 0
    await server.ask("idle")
    const v = await server.ask<{
      usageRecords: string
      usageCredits: string
      usageEntries: string
      usageEntriesTotal: string
      pendingReservations: string
      initial: string
      posted: string
      held: string
      audit: ReadonlyArray<string>
    }>("verify")
    const expected = BigInt(platformCalls) * COST_PER_CALL
    const drop = BigInt(v.initial) - BigInt(v.posted)
    const checks: Array<[string, boolean]> = [
      [`usage records ${v.usageRecords} == platform calls ${platformCalls}`, BigInt(v.usageRecords) === BigInt(platformCalls)],
      [`usage ledger entries ${v.usageEntries} == platform calls ${platformCalls}`, BigInt(v.usageEntries) === BigInt(platformCalls)],
      [`balance drop ${drop} == sum of the records' credits ${v.usageCredits}`, drop === BigInt(v.usageCredits)],
      [`sum of the records' credits ${v.usageCredits} == calls x ${COST_PER_CALL} micro-credits = ${expected}`, BigInt(v.usageCredits) === expected],
      [`usage entries total ${v.usageEntriesTotal} == -${expected}`, BigInt(v.usageEntriesTotal) === -expected],
      [`nothing held (${v.held}), no pending reservation (${v.pendingReservations})`, v.held === "0" && v.pendingReservations === "0"],
      [`ledger audit: ${v.audit.length === 0 ? "consistent" : v.audit.join("; ")}`, v.audit.length === 0]
    ]
    console.log("\nmetering check:")
    for (const [text, ok] of checks) console.log(`  ${ok ? "ok  " : "FAIL"} ${text}`)
    if (checks.some(([, ok]) => !ok)) process.exitCode = 1

    await server.ask("stop").catch(() => undefined)
    await new Promise<void>((resolve) => {
      if (server.process.exitCode !== null) return resolve()
      server.process.once("exit", () => resolve())
    })
    for (const agent of agents) agent.destroy()
  } finally {
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
else if (role === "server") await runServer()
else await main()
