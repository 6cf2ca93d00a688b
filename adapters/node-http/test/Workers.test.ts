/**
 * Several server processes on one PostgreSQL (docs/operations.md "Several processes"): main.ts
 * started with `--workers 2`, called with the official `openai` client. Calls land on both workers
 * (each access line carries its worker's pid); metering is exact across them; an rpm limit and a
 * monthly limit hold across the two, since both live in the store; a purchase raises both workers'
 * rpm at once (account notices); SIGTERM to the primary drains
 * both, a stream in flight runs to its end, and the primary exits 0. One server for the file.
 */
import { startReferenceMachine, type ReferenceMachine } from "@model-platform/reference-machine/ReferenceMachine"
import { LedgerStore } from "@model-platform/core/ledger"
import { OrderStore } from "@model-platform/core/payments"
import { newOperatorKey } from "@model-platform/core/operator"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { CREDIT, ledgerRuntime, newAccounts, stateOf } from "./faultSupport.ts"
import { gatewayCatalogue, MACHINE_MODELS } from "./gatewaySupport.ts"
import { type MainProcess, startMain } from "./mainProcess.ts"
import { serverBundle } from "./serverBundle.ts"
import { freshDatabaseUrl } from "./support.ts"
import { requestedWorkers } from "../src/Workers.ts"

const serverUrl = process.env.TEST_DATABASE_URL
const RPM = 30

describe("--workers N and WORKERS (Workers.ts requestedWorkers)", () => {
  it("reads the flag before the variable, 1 by default; anything but 1 to 256 processes is refused with why", () => {
    expect(requestedWorkers([], {})).toEqual({ workers: 1 })
    expect(requestedWorkers([], { WORKERS: " " })).toEqual({ workers: 1 })
    expect(requestedWorkers([], { WORKERS: "3" })).toEqual({ workers: 3 })
    expect(requestedWorkers(["--workers", "2"], { WORKERS: "3" })).toEqual({ workers: 2 })
    expect(requestedWorkers(["--workers=4"], {})).toEqual({ workers: 4 })
    for (const [argv, env] of [[["--workers"], {}], [["--workers", "0"], {}], [["--workers=two"], {}], [[], { WORKERS: "1.5" }], [[], { WORKERS: "257" }]] as const) {
      const answer = requestedWorkers(argv, env)
      expect(answer, JSON.stringify([argv, env])).toEqual({ problem: expect.stringMatching(/must be a whole number of server processes from 1 to 256/) })
    }
  })
})

describe("a primary whose first worker cannot start", () => {
  it("stops with exit code 1 after the worker's own message, starting no other", async () => {
    // HOST reachable from elsewhere without PUBLIC_URL: refused before the database is opened.
    const { DATABASE_URL: _db, PUBLIC_URL: _url, ...inherited } = process.env
    const child = spawn(process.execPath, [await serverBundle(), "--workers", "2"], {
      env: { ...inherited, DATABASE_URL: "postgres://nobody@127.0.0.1:1/none", HOST: "0.0.0.0", PORT: "0" },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let output = ""
    child.stdout.on("data", (c: Buffer) => (output += c.toString()))
    child.stderr.on("data", (c: Buffer) => (output += c.toString()))
    const code = await new Promise<number | null>((resolve) => child.on("exit", resolve))
    expect(code, output).toBe(1)
    expect(output).toContain("PUBLIC_URL is not set")
    expect(output).toMatch(/the first worker exited \(code 1\) before it listened; stopping/)
    expect(output.match(/PUBLIC_URL is not set/g)).toHaveLength(1)
  }, 60_000)
})

describe.skipIf(serverUrl === undefined)("main.ts --workers 2 on PostgreSQL", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "platform-workers-"))
  let machine: ReferenceMachine
  let server: MainProcess
  let ledger: ReturnType<typeof ledgerRuntime>
  const catalogue = path.join(dir, "catalogue.json")
  const writeCatalogue = (machines: ReadonlyArray<string>) =>
    fs.writeFileSync(catalogue, JSON.stringify(gatewayCatalogue(machines.map((id, i) => ({ id, url: machine.url, score: 1 - i / 10 })), { rpm: RPM })))
  const operator = Effect.runSync(newOperatorKey("ops"))
  beforeAll(async () => {
    // 100 ms a token: "Count to 20." streams for about 2 s, longer than the drain's grace.
    machine = await startReferenceMachine({ port: 0, id: "m-a", models: MACHINE_MODELS, tokenDelayMs: 100 })
    writeCatalogue(["m-a"])
    const databaseUrl = await freshDatabaseUrl(serverUrl!)
    server = await startMain({
      DATABASE_URL: databaseUrl,
      DATA_DIR: path.join(dir, "data"),
      CATALOGUE_FILE: catalogue,
      OPERATOR_KEYS: operator.entry,
      LOG_FORMAT: "json",
      SHUTDOWN_GRACE_S: "1",
      SHUTDOWN_TIMEOUT_S: "60"
    }, 90_000, { args: ["--workers", "2"], until: /2 worker processes \(pids \d+, \d+\) serve/ })
    ledger = ledgerRuntime(databaseUrl)
  }, 120_000)
  afterAll(async () => {
    server?.kill()
    await ledger?.dispose()
    await machine?.close()
    fs.rmSync(dir, { recursive: true, force: true })
  })

  const sdk = (auth: string) => new OpenAI({ baseURL: `${server.url}/v1`, apiKey: auth.slice("Bearer ".length), maxRetries: 0 })
  /** The workers serving now: those the primary started, each replaced one by its replacement. */
  const workerPids = () => {
    const line = /2 worker processes \(pids (\d+), (\d+)\)/.exec(server.output())!
    let pids = [Number(line[1]), Number(line[2])]
    for (const [, now, before] of server.output().matchAll(/worker (\d+) listens in place of worker (\d+)/g)) {
      pids = pids.map((pid) => (pid === Number(before) ? Number(now) : pid))
    }
    return pids.sort()
  }

  /** The pid of the worker that answered each request id (its access line). */
  const answeredBy = async (requestIds: ReadonlyArray<string>) => {
    for (let i = 0; i < 100; i++) {
      const lines = server.jsonLines().filter((l) => l.message === "request" && requestIds.includes(String(l.request_id)))
      if (lines.length === requestIds.length) return lines.map((l) => Number(l.pid))
      await new Promise((r) => setTimeout(r, 20))
    }
    throw new Error(`no access line for some of ${requestIds.join(", ")}`)
  }

  /** `n` concurrent chat calls: each one's status (200, else the error's) and request id. */
  const burst = (auth: string, n: number) =>
    Promise.all(Array.from({ length: n }, async () => {
      try {
        const { response } = await sdk(auth).chat.completions.create({
          model: "ref-chat",
          messages: [{ role: "user", content: "Say hello." }],
          max_tokens: 8
        }).withResponse()
        return { status: 200, code: undefined, requestId: response.headers.get("x-request-id")! }
      } catch (error) {
        if (!(error instanceof OpenAI.APIError)) throw error
        return { status: error.status ?? 0, code: error.code, requestId: error.headers?.get("x-request-id") ?? "" }
      }
    }))

  /**
   * An account's state once the metering of `calls` answered calls is written (it runs after the
   * answers): stateOf reads the ledger, then the usage records, so a settlement in between shows as
   * a difference that is not one.
   */
  const settled = async (accountId: string, calls: number) => {
    let state = await ledger.runPromise(stateOf(accountId))
    for (let i = 0; i < 100 && (state.records < calls || state.held !== 0n || state.recorded !== state.charged); i++) {
      await new Promise((r) => setTimeout(r, 100))
      state = await ledger.runPromise(stateOf(accountId))
    }
    return state
  }

  /** rpm windows are whole minutes of epoch time: a burst must not straddle two. */
  const awayFromMinuteEdge = async () => {
    const intoMinute = Date.now() % 60_000
    if (intoMinute > 50_000) await new Promise((r) => setTimeout(r, 60_000 - intoMinute + 500))
  }

  it("calls land on both workers and are metered exactly: N calls, N usage records, the balance down by their credits, nothing held", async () => {
    const [account] = await ledger.runPromise(newAccounts(1))
    await awayFromMinuteEdge()
    const calls = await burst(account!.auth, 16)
    expect(calls.map((c) => c.status)).toEqual(Array(16).fill(200))
    // Each access line names the worker that answered; the kernel spread the connections over both.
    expect(new Set(await answeredBy(calls.map((c) => c.requestId)))).toEqual(new Set(workerPids()))

    const state = await settled(account!.accountId, 16)
    expect(state.records).toBe(16)
    expect(state.charged).toBeGreaterThan(0n)
    expect(state.recorded).toBe(state.charged)
    expect(state.held).toBe(0n)
    expect(state.available).toBe(CREDIT - state.charged)
  }, 60_000)

  it("an rpm limit holds across the two processes: of 2 x rpm concurrent calls of one key, exactly rpm are answered", async () => {
    const [account] = await ledger.runPromise(newAccounts(1))
    await awayFromMinuteEdge()
    const calls = await burst(account!.auth, 2 * RPM)
    const answered = calls.filter((c) => c.status === 200)
    const limited = calls.filter((c) => c.status === 429)
    expect(answered).toHaveLength(RPM)
    expect(limited).toHaveLength(RPM)
    expect(new Set(limited.map((c) => c.code))).toEqual(new Set(["rate_limited"]))
    // Both workers answered some of them, so neither kept a count of its own.
    expect(new Set(await answeredBy(calls.map((c) => c.requestId)))).toEqual(new Set(workerPids()))
  }, 60_000)

  it("a purchase made elsewhere raises the rpm on both workers at once, not when their kept tier runs out", async () => {
    const [account] = await ledger.runPromise(newAccounts(1))
    await awayFromMinuteEdge()
    // The window's rpm used up at the first tier; both workers now keep the account's tier.
    const first = await burst(account!.auth, RPM)
    expect(first.map((c) => c.status)).toEqual(Array(RPM).fill(200))
    expect(new Set(await answeredBy(first.map((c) => c.requestId)))).toEqual(new Set(workerPids()))
    expect((await burst(account!.auth, 1))[0]!.status).toBe(429)
    // Another process records a payment that reaches the next tier (5,000 rpm).
    await ledger.runPromise(Effect.gen(function*() {
      yield* (yield* OrderStore).insertReceipt({
        id: `rcpt_${crypto.randomUUID()}`,
        account_id: account!.accountId as never,
        order_id: `ord_${crypto.randomUUID()}` as never,
        kind: "credits",
        title: "Credits",
        paid_at: new Date().toISOString() as never,
        amount_cents: 1_000n,
        currency: "usd",
        credits: 10_000_000_000n,
        paid_with: "card",
        auto_reload: false,
        counts_toward_tier: true
      })
    }))
    // Each worker kept the tier for 10 s; its notice reaches both within moments.
    const paidAt = Date.now()
    let after = await burst(account!.auth, 8)
    while (after.some((c) => c.status !== 200) && Date.now() - paidAt < 2_000) {
      await new Promise((r) => setTimeout(r, 50))
      after = await burst(account!.auth, 8)
    }
    expect(after.map((c) => c.status)).toEqual(Array(8).fill(200))
    const both = await burst(account!.auth, 16)
    expect(both.map((c) => c.status)).toEqual(Array(16).fill(200))
    expect(new Set(await answeredBy(both.map((c) => c.requestId)))).toEqual(new Set(workerPids()))
  }, 60_000)

  it("a monthly limit holds across the two processes: concurrent calls never spend past it", async () => {
    const [account] = await ledger.runPromise(newAccounts(1))
    // Room for a few calls' upper bounds (max_tokens 8), not for twenty.
    const limit = 1_000n
    await ledger.runPromise(Effect.gen(function*() {
      yield* (yield* LedgerStore).setBudgetLimit(account!.accountId, "account", limit)
    }))
    await awayFromMinuteEdge()
    const calls = await burst(account!.auth, 20)
    const answered = calls.filter((c) => c.status === 200)
    const refused = calls.filter((c) => c.status === 402)
    expect(answered.length + refused.length).toBe(20)
    expect(answered.length).toBeGreaterThan(0)
    expect(new Set(refused.map((c) => c.code))).toEqual(new Set(["monthly_limit_reached"]))
    expect(new Set(await answeredBy(calls.map((c) => c.requestId)))).toEqual(new Set(workerPids()))

    const state = await settled(account!.accountId, answered.length)
    expect(state.records).toBe(answered.length)
    expect(state.charged).toBeLessThanOrEqual(limit)
    expect(state.held).toBe(0n)
  }, 60_000)

  it("every worker signs with the one key: /.well-known/jwks.json answers the same key from both", async () => {
    const answers = await Promise.all(Array.from({ length: 16 }, async () => {
      const response = await fetch(`${server.url}/.well-known/jwks.json`, { headers: { connection: "close" } })
      const jwks = await response.json() as { readonly keys: ReadonlyArray<{ readonly kid: string; readonly x: string }> }
      return { requestId: response.headers.get("x-request-id")!, keys: jwks.keys.map((k) => `${k.kid}/${k.x}`) }
    }))
    expect(new Set(await answeredBy(answers.map((a) => a.requestId)))).toEqual(new Set(workerPids()))
    expect(new Set(answers.map((a) => a.keys.join(",")))).toHaveProperty("size", 1)
    expect(answers[0]!.keys).toHaveLength(1)
  }, 60_000)

  const fetchAgain = async (url: string): Promise<Response> => {
    for (let attempt = 1;; attempt++) {
      try {
        // Bounded, so that a request left unanswered shows as what it is rather than as the test's timeout.
        return await fetch(url, { headers: { connection: "close" }, signal: AbortSignal.timeout(10_000) })
      } catch (error) {
        if (error instanceof DOMException && error.name === "TimeoutError") console.log(`${url}: no answer in 10 s (attempt ${attempt}); asking again`)
        if (attempt === 5) throw error
      }
    }
  }

  it("a catalogue reload through the operator API in one worker reloads the other too", async () => {
    writeCatalogue(["m-a", "m-b"])
    const reload = await fetch(`${server.url}/admin/api/catalogue/reload`, {
      method: "POST",
      headers: { authorization: `Bearer ${operator.secret}`, connection: "close" },
      signal: AbortSignal.timeout(30_000)
    })
    expect(reload.status, await reload.clone().text()).toBe(200)
    expect(await reload.json()).toMatchObject({ after: { machines: ["m-a", "m-b"] } })
    // Every worker lists the new machine once its reload is done (the other's follows at once).
    let answers: Array<{ readonly requestId: string; readonly machines: ReadonlyArray<string> }> = []
    // Until a deadline rather than a number of rounds: on a loaded machine a round of 16 requests,
    // and the other worker's new server, can each take seconds.
    const deadline = Date.now() + 45_000
    while (Date.now() < deadline) {
      answers = await Promise.all(Array.from({ length: 16 }, async () => {
        // A connection the kernel queued on a listener that a reload is closing is reset (Linux
        // SO_REUSEPORT drops that socket's queue): the client connects again.
        const response = await fetchAgain(`${server.url}/machines`)
        const body = await response.json() as { readonly data: ReadonlyArray<{ readonly id: string }> }
        return { requestId: response.headers.get("x-request-id")!, machines: body.data.map((m) => m.id) }
      }))
      if (answers.every((a) => a.machines.includes("m-b"))) break
      await new Promise((r) => setTimeout(r, 100))
    }
    expect(answers.map((a) => a.machines)).toEqual(Array(16).fill(["m-a", "m-b"]))
    expect(new Set(await answeredBy(answers.map((a) => a.requestId)))).toEqual(new Set(workerPids()))
  }, 90_000)

  it("a worker that dies is replaced on the same port, and calls go on being answered and metered", async () => {
    const [killed] = workerPids()
    process.kill(killed!, "SIGKILL")
    for (let i = 0; i < 200 && !server.output().includes(`in place of worker ${killed}`); i++) await new Promise((r) => setTimeout(r, 100))
    expect(server.output()).toContain(`worker ${killed} exited (SIGKILL); starting another`)
    const now = workerPids()
    expect(now).not.toContain(killed)
    expect(now).toHaveLength(2)

    const [account] = await ledger.runPromise(newAccounts(1))
    await awayFromMinuteEdge()
    const calls = await burst(account!.auth, 16)
    expect(calls.map((c) => c.status)).toEqual(Array(16).fill(200))
    expect(new Set(await answeredBy(calls.map((c) => c.requestId)))).toEqual(new Set(now))
  }, 60_000)

  it("SIGTERM to the primary drains both workers: readiness 503, streams in flight complete and are billed once, exit 0", async () => {
    const accounts = await ledger.runPromise(newAccounts(10))
    // Ten streams on ten connections: both workers hold some (checked below by pid).
    const streams = await Promise.all(accounts.map(async (account) => {
      const { data, response } = await sdk(account.auth).chat.completions.create({
        model: "ref-chat",
        stream: true,
        messages: [{ role: "user", content: "Count to 20." }]
      }).withResponse()
      const iterator = data[Symbol.asyncIterator]()
      const first = await iterator.next()
      return { account, iterator, first, requestId: response.headers.get("x-request-id")! }
    }))

    server.child.kill("SIGTERM")
    const readiness: Array<number> = []
    for (let i = 0; i < 8; i++) {
      const ready = await fetch(`${server.url}/health/ready`, { headers: { connection: "close" } }).catch(() => undefined)
      if (ready !== undefined) readiness.push(ready.status)
      await new Promise((r) => setTimeout(r, 50))
    }
    expect(readiness.length).toBeGreaterThan(0)
    expect(new Set(readiness.slice(-4))).toEqual(new Set([503]))

    const texts = await Promise.all(streams.map(async ({ iterator, first }) => {
      let text = first.done === true ? "" : first.value.choices[0]?.delta?.content ?? ""
      for (;;) {
        const next = await iterator.next()
        if (next.done === true) return text
        text += next.value.choices[0]?.delta?.content ?? ""
      }
    }))
    for (const text of texts) expect(text.trim().split(/\s+/)).toEqual(Array.from({ length: 20 }, (_, i) => String(i + 1)))
    expect(new Set(await answeredBy(streams.map((s) => s.requestId)))).toEqual(new Set(workerPids()))

    const code = await Promise.race([server.exited, new Promise((r) => setTimeout(() => r("still running"), 30_000))])
    expect(code, server.output()).toBe(0)
    // Each worker drained (its own log line), then the primary said it exits.
    const draining = server.jsonLines().filter((l) => String(l.message).startsWith("SIGTERM: draining."))
    expect(new Set(draining.map((l) => Number(l.pid)))).toEqual(new Set(workerPids()))
    for (const { account } of streams) {
      const state = await ledger.runPromise(stateOf(account.accountId))
      expect(state.records).toBe(1)
      expect(state.recorded).toBe(state.charged)
      expect(state.held).toBe(0n)
      expect(state.available).toBe(CREDIT - state.charged)
    }
  }, 90_000)
})
