/**
 * Fault injection on real PostgreSQL (issue 10, finding 11; docs/gateway.md "Metering that
 * survives faults"): the real server process (src/main.ts) on a cluster of this suite's own, a mock
 * machine, and faults: the process killed with SIGKILL between its answers and their metering,
 * PostgreSQL stopped and restarted under load, a machine dropping streams, clients disconnecting at
 * random points.
 *
 * Every call has its own account and key, so the invariants hold call by call. After each fault,
 * once settlement is done: a call whose client received its whole answer has exactly one usage
 * record and was charged exactly its cost; a refused call (503, ...) has none; a stream the machine
 * broke has one (the estimate of what it sent) when its client got an event of it, else none; a
 * stream the machine completed after its client left has one; every account's
 * balance fell by exactly what its records say, the ledger's usage entries charged exactly that
 * (nothing charged twice or without a record), and nothing is held. Never a 500.
 *
 * Skipped only when PostgreSQL's binaries are missing (CI installs them: scripts/ci-postgres.sh).
 */
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  call,
  type Call,
  type Cluster,
  COST,
  CREDIT,
  type FaultWorld,
  kill,
  type Mock,
  type Mode,
  newAccounts,
  postgresBin,
  type Server,
  settled,
  startFaultWorld,
  stateOf
} from "./faultSupport.ts"

const bin = postgresBin()
if (bin === undefined) console.log("fault injection: skipped, no PostgreSQL binaries (/usr/lib/postgresql/*/bin/initdb)")

describe.skipIf(bin === undefined)("fault injection on PostgreSQL", () => {
  let world: FaultWorld
  let cluster: Cluster
  let mock: Mock
  let server: Server
  let runtime: FaultWorld["runtime"]

  beforeAll(async () => {
    world = await startFaultWorld(31300)
    cluster = world.cluster
    mock = world.mock
    server = world.server
    runtime = world.runtime
  }, 90_000)

  afterAll(() => world?.stop(), 60_000)

  /** Waits until no account of these calls holds anything (settlement done), then checks every invariant. */
  const settleAndCheck = async (scenario: string, calls: ReadonlyArray<Call>, timeoutMs = 30_000) => {
    const accounts = [...new Map(calls.map((c) => [c.account.accountId, c])).values()]
    const states = await settled(runtime, accounts.map((c) => c.account.accountId), timeoutMs)
    let checked = 0
    const expectThat = (ok: boolean, what: string, c: Call, state: unknown) => {
      checked += 1
      if (!ok) expect.fail(`${scenario}: ${what} (call ${c.id}, ${c.stream ? "stream" : "json"} ${c.mode}, status ${c.status}): ${JSON.stringify(state, (_, v) => typeof v === "bigint" ? String(v) : v)}`)
    }
    accounts.forEach((c, i) => {
      const s = states[i]!
      expectThat(c.status !== 500, "never a 500", c, s)
      expectThat(s.held === 0n, "nothing held", c, s)
      expectThat(s.records <= 1, "at most one usage record", c, s)
      expectThat(s.charged === s.recorded, "the ledger charged what the records say (nothing twice, nothing unrecorded)", c, s)
      expectThat(s.available === CREDIT - s.charged, "the balance fell by exactly the charge", c, s)
      if (c.complete) expectThat(s.records === 1 && s.recorded === COST, "an answered call: one record, charged its cost", c, s)
      if (typeof c.status === "number" && c.status !== 200) expectThat(s.records === 0, "a refused call: no record", c, s)
      if (mock.dropped.has(c.id)) {
        expectThat(s.records === (c.events > 0 ? 1 : 0), "a stream the machine broke: charged once when its client got an event, else not", c, s)
      }
      if (c.stream && c.status === "aborted" && mock.completed.has(c.id)) {
        expectThat(s.records === 1, "a stream completed after its client left: drained and charged once", c, s)
      }
      if (s.records === 1 && c.mode !== "drop") expectThat(s.recorded === COST, "charged the reported usage", c, s)
    })
    const count = (p: (c: Call) => boolean) => calls.filter(p).length
    console.log(
      `fault injection: ${scenario}: ${calls.length} calls (${count((c) => c.complete)} answered whole, ` +
        `${count((c) => c.status === 503)} answered 503, ${count((c) => c.status === "aborted")} left by their client, ` +
        `${count((c) => mock.dropped.has(c.id))} streams broken by the machine (${count((c) => mock.dropped.has(c.id) && c.events > 0)} after an event), ` +
        `${count((c) => c.stream && c.status === "aborted" && mock.completed.has(c.id))} streams drained after their client left), ` +
        `${states.reduce((n, s) => n + s.records, 0)} usage records; ${checked} invariants checked`
    )
  }

  it("SIGKILL between the answers and their metering: the journal bills each answered call once at restart, and releases the rest at once", async () => {
    const accounts = await runtime.runPromise(newAccounts(13))
    // Metering cannot commit (its table is locked), admission and answers go on.
    const lock = cluster.session("BEGIN; LOCK TABLE usage_records IN ACCESS EXCLUSIVE MODE;")
    while (cluster.psql("SELECT count(*) FROM pg_locks WHERE relation = 'usage_records'::regclass AND granted") !== "1") {
      await new Promise((r) => setTimeout(r, 20))
    }
    const calls = await Promise.all(accounts.slice(0, 12).map((a, i) => call(server.url, a, i < 8, "ok")))
    expect(calls.every((c) => c.complete)).toBe(true)
    const hanging = call(server.url, accounts[12]!, false, "hang")
    while (mock.received.size === 0 || ![...mock.received].some((id) => id.length > 0 && !calls.some((c) => c.id === id))) {
      await new Promise((r) => setTimeout(r, 20))
    }
    await kill(server, "SIGKILL")
    const lost = await hanging
    // The killed process's commits were waiting on the lock: they die with it.
    cluster.psql("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid()")
    await lock.end()
    const before = await runtime.runPromise(Effect.forEach(accounts, (a) => stateOf(a.accountId)))
    expect(before.filter((s) => s.records > 0).length).toBe(0) // all 12 unbilled without the journal
    expect(before.every((s) => s.held > 0n)).toBe(true) // and 13 reservations held until their expiry

    const restartedAt = Date.now()
    server = await world.restart()
    await settleAndCheck("SIGKILL between answer and metering, then restart", [...calls, lost], 15_000)
    console.log(`fault injection: reservations released ${Date.now() - restartedAt} ms after the restart (expiry: 960 s)`)
  }, 60_000)

  it("PostgreSQL stopped and restarted under load: 503 store_unavailable meanwhile, never 500, every answered call billed once", async () => {
    const accounts = await runtime.runPromise(newAccounts(500))
    let next = 0
    let running = true
    const calls: Array<Call> = []
    const worker = async (w: number) => {
      while (running && next < accounts.length) {
        const c = await call(server.url, accounts[next++]!, (next + w) % 3 === 0, "slow")
        calls.push(c)
        await new Promise((r) => setTimeout(r, c.status === 200 ? 10 : 100))
      }
    }
    const load = Promise.all(Array.from({ length: 6 }, (_, w) => worker(w)))
    await new Promise((r) => setTimeout(r, 1_500))
    const stoppedAt = calls.length
    cluster.stop()
    await new Promise((r) => setTimeout(r, 1_500))
    // Management requests too: 503 store_unavailable in the platform's shape.
    const management = await fetch(`${server.url}/me`, { headers: { authorization: accounts[0]!.auth } })
    expect(management.status).toBe(503)
    expect(management.headers.get("retry-after")).toBe("2")
    expect(await management.json()).toEqual({ error: { code: "store_unavailable", message: expect.any(String) } })
    await new Promise((r) => setTimeout(r, 1_500))
    cluster.start()
    const answeredMeanwhile = calls.slice(stoppedAt).filter((c) => c.complete).length
    console.log(`fault injection: ${answeredMeanwhile} calls answered while PostgreSQL was down (admitted before), metered after it came back`)
    await new Promise((r) => setTimeout(r, 2_500))
    running = false
    await load
    const unavailable = calls.filter((c) => c.status === 503)
    expect(unavailable.length).toBeGreaterThan(0)
    expect(unavailable.every((c) => c.code === "store_unavailable")).toBe(true)
    expect(calls.filter((c) => c.status !== 200 && c.status !== 503)).toEqual([])
    expect(answeredMeanwhile).toBeGreaterThan(0)
    await settleAndCheck("PostgreSQL stopped 3 s under load", calls)
  }, 60_000)

  it("a machine dropping streams and clients leaving at random points", async () => {
    const accounts = await runtime.runPromise(newAccounts(120))
    const plan = (i: number): [boolean, Mode, number | undefined] => {
      switch (i % 5) {
        case 0: return [true, "drop", undefined]
        // Before the machine is called, while it answers, mid-stream (a slow stream lasts ~150 ms after its head).
        case 1: return [true, "slow", Math.floor(Math.random() * 250)]
        case 2: return [false, "slow", Math.floor(Math.random() * 150)]
        case 3: return [true, "ok", undefined]
        default: return [false, "ok", undefined]
      }
    }
    const calls: Array<Call> = []
    let next = 0
    await Promise.all(Array.from({ length: 8 }, async () => {
      while (next < accounts.length) {
        const i = next++
        const [stream, mode, abortAfterMs] = plan(i)
        calls.push(await call(server.url, accounts[i]!, stream, mode, abortAfterMs))
      }
    }))
    expect(calls.some((c) => c.status === "aborted")).toBe(true)
    expect(calls.some((c) => mock.dropped.has(c.id) && c.events > 0)).toBe(true)
    await settleAndCheck("streams dropped by the machine, clients leaving mid-call", calls)
  }, 60_000)
})
