/**
 * Fault injection with credit leases on (docs/performance.md "Credit leases, built behind
 * CREDIT_LEASES", docs/gateway.md "Credit leases"): as FaultInjection.test.ts (the real server
 * process on a PostgreSQL cluster of this suite's own, a mock machine; the process killed between
 * its answers and their metering, PostgreSQL stopped under load, a machine dropping streams,
 * clients leaving), but the server runs with `CREDIT_LEASES=on` and a few accounts, one key each,
 * make many concurrent calls, so that the calls draw from shared leases. The leases end three ways:
 * their drawn calls replayed from the killed process's journal and the leases released at
 * restart; closed at the end of their 10 s; closed by a notice of their account.
 *
 * A call no longer has an account of its own, so the invariants hold account by account, from the
 * facts of its calls. Once settlement is done (every lease closed and voided): never a 500;
 * nothing held; the ledger's usage entries charged exactly what the usage records say, and the
 * balance fell by exactly that; every record of the machine's reported usage charged exactly its
 * cost, and there are at least as many of them as calls that must be charged (answered whole, or
 * streams the machine completed after their client left) and at most as many as calls the machine
 * completed; as many records of an estimate as streams the machine broke after their client got
 * an event. And leases were used: far fewer reservations were taken for leases than calls charged.
 *
 * Skipped only when PostgreSQL's binaries are missing (CI installs them: scripts/ci-postgres.sh).
 */
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  call,
  type Call,
  type CallAccount,
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
  stateOf,
  USAGE
} from "./faultSupport.ts"

const bin = postgresBin()
if (bin === undefined) console.log("fault injection with leases: skipped, no PostgreSQL binaries (/usr/lib/postgresql/*/bin/initdb)")

const bigints = (_: string, v: unknown) => typeof v === "bigint" ? String(v) : v

describe.skipIf(bin === undefined)("fault injection on PostgreSQL with credit leases", () => {
  let world: FaultWorld
  let cluster: Cluster
  let mock: Mock
  let server: Server
  let runtime: FaultWorld["runtime"]

  beforeAll(async () => {
    // Its own first port, away from FaultInjection.test.ts's (31300), which may run beside it.
    world = await startFaultWorld(31350, { CREDIT_LEASES: "on" })
    cluster = world.cluster
    mock = world.mock
    server = world.server
    runtime = world.runtime
  }, 90_000)

  afterAll(() => world?.stop(), 60_000)

  /**
   * The reservations of these accounts that are leases: holding more than one call's estimate (what
   * a charged call's own reservation, or its draw, holds). A lease reserves 32 estimates and lends
   * at most 16 calls (its rpm hits), so it keeps more than one estimate whatever they were charged.
   */
  const leasesOf = (accountIds: ReadonlyArray<string>): number =>
    Number(cluster.psql(`
      WITH r AS (
        SELECT ref, (SELECT coalesce(sum(a), 0) FROM unnest(amounts || grant_amounts) AS a) AS total
        FROM ledger_reservations WHERE account_id IN (${accountIds.map((id) => `'${id}'`).join(", ")}))
      SELECT count(*) FROM r WHERE total > (SELECT max(total) FROM r WHERE ref IN (SELECT ref FROM usage_records))`))

  /** Waits until no account of these calls holds anything (settlement done), then checks every invariant, account by account. */
  const settleAndCheck = async (scenario: string, calls: ReadonlyArray<Call>, timeoutMs = 25_000) => {
    const ids = [...new Set(calls.map((c) => c.account.accountId))]
    const states = await settled(runtime, ids, timeoutMs)
    const totals = { must: 0, may: 0, whole: 0, estimated: 0 }
    const failures: Array<string> = []
    let checked = 0
    ids.forEach((id, i) => {
      const s = states[i]!
      const mine = calls.filter((c) => c.account.accountId === id)
      const count = (p: (c: Call) => boolean) => mine.filter(p).length
      const whole = s.usage.filter((u) => u.input === BigInt(USAGE.prompt_tokens) && u.output === BigInt(USAGE.completion_tokens))
      const facts = {
        calls: mine.length,
        // Streams the machine completed after their client left: drained, charged.
        drained: count((c) => c.stream && c.status === "aborted" && mock.completed.has(c.id)),
        // Charged for sure: answered whole, or drained.
        must: count((c) => c.complete || (c.stream && c.status === "aborted" && mock.completed.has(c.id))),
        // May be charged: every call the machine completed (a JSON answer whose client left as it came, too).
        may: count((c) => mock.completed.has(c.id)),
        // Streams the machine broke after their client got an event: charged once, for an estimate.
        broken: count((c) => mock.dropped.has(c.id) && c.events > 0),
        whole: whole.length,
        estimated: s.usage.length - whole.length
      }
      totals.must += facts.must
      totals.may += facts.may
      totals.whole += facts.whole
      totals.estimated += facts.estimated
      const expectThat = (ok: boolean, what: string) => {
        checked += 1
        if (!ok) failures.push(`${scenario}: account ${i}: ${what}: ${JSON.stringify({ facts, state: { ...s, usage: undefined } }, bigints)}`)
      }
      expectThat(count((c) => c.status === 500) === 0, "never a 500")
      expectThat(s.held === 0n, "nothing held")
      expectThat(s.charged === s.recorded, "the ledger charged what the records say (nothing twice, nothing unrecorded)")
      expectThat(s.available === CREDIT - s.charged, "the balance fell by exactly the charge")
      expectThat(whole.every((u) => u.credits === COST), "every call metered on the machine's usage charged exactly its cost")
      expectThat(facts.must <= facts.whole, "every call that must be charged has its record")
      expectThat(facts.whole <= facts.may, "no more records than calls the machine completed (nothing twice)")
      expectThat(facts.estimated === facts.broken, "a stream the machine broke: charged once when its client got an event, else not")
    })
    const leases = leasesOf(ids)
    const count = (p: (c: Call) => boolean) => calls.filter(p).length
    console.log(
      `fault injection with leases: ${scenario}: ${calls.length} calls on ${ids.length} accounts (${count((c) => c.complete)} answered whole, ` +
        `${count((c) => c.status === 503)} answered 503, ${count((c) => c.status === "aborted")} left by their client, ` +
        `${count((c) => mock.dropped.has(c.id))} streams broken by the machine); ${totals.whole} records of reported usage ` +
        `(${totals.must} to charge, ${totals.may} chargeable), ${totals.estimated} of an estimate; ${leases} leases; ${checked} invariants checked`
    )
    expect(failures).toEqual([])
    // Not vacuous: calls were charged, and mostly from leases rather than each by a store step.
    expect(totals.must).toBeGreaterThan(0)
    expect(leases).toBeGreaterThanOrEqual(ids.length)
    expect(leases * 4).toBeLessThanOrEqual(totals.whole + totals.estimated)
  }

  /** Calls of these accounts, in turn, by `workers` clients at once, while `more()` says so; `plan` says what each call is. */
  const load = async (
    accounts: ReadonlyArray<CallAccount>,
    workers: number,
    more: (n: number) => boolean,
    plan: (n: number) => [boolean, Mode, number | undefined],
    calls: Array<Call> = []
  ): Promise<Array<Call>> => {
    let next = 0
    await Promise.all(Array.from({ length: workers }, async () => {
      while (more(next)) {
        const n = next++
        const [stream, mode, abortAfterMs] = plan(n)
        const c = await call(server.url, accounts[n % accounts.length]!, stream, mode, abortAfterMs)
        calls.push(c)
        if (c.status === 503) await new Promise((r) => setTimeout(r, 100))
      }
    }))
    return calls
  }

  it("SIGKILL between the answers and their metering: the journal draws each answered call from its lease once at restart, then voids the leases", async () => {
    const accounts = await runtime.runPromise(newAccounts(5))
    // Metering cannot commit (its table is locked); leases are taken, calls drawn and answered.
    const lock = cluster.session("BEGIN; LOCK TABLE usage_records IN ACCESS EXCLUSIVE MODE;")
    while (cluster.psql("SELECT count(*) FROM pg_locks WHERE relation = 'usage_records'::regclass AND granted") !== "1") {
      await new Promise((r) => setTimeout(r, 20))
    }
    // 24 calls a key, all at once: more than a lease's 16 rpm hits, so its successor lends too.
    const calls = await load(accounts, 120, (n) => n < 120, (n) => [n % 3 !== 0, "ok", undefined])
    expect(calls.every((c) => c.complete)).toBe(true)
    const hanging = call(server.url, accounts[0]!, false, "hang")
    while (![...mock.received].some((id) => id.length > 0 && !calls.some((c) => c.id === id))) {
      await new Promise((r) => setTimeout(r, 20))
    }
    await kill(server, "SIGKILL")
    const lost = await hanging
    cluster.psql("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid()")
    await lock.end()
    const before = await runtime.runPromise(Effect.forEach(accounts, (a) => stateOf(a.accountId)))
    expect(before.filter((s) => s.records > 0).length).toBe(0) // nothing metered without the journal
    expect(before.every((s) => s.held > 0n)).toBe(true) // and the leases held until their expiry

    const restartedAt = Date.now()
    server = await world.restart()
    await settleAndCheck("SIGKILL between answer and metering, then restart", [...calls, lost], 15_000)
    console.log(`fault injection with leases: leases voided ${Date.now() - restartedAt} ms after the restart`)
  }, 60_000)

  it("PostgreSQL stopped and restarted under load: 503 store_unavailable meanwhile, never 500, every answered call billed once", async () => {
    const accounts = await runtime.runPromise(newAccounts(6))
    let running = true
    const calls: Array<Call> = []
    const loaded = load(accounts, 8, () => running, (n) => [n % 3 === 0, "slow", undefined], calls)
    await new Promise((r) => setTimeout(r, 1_500))
    const stoppedAt = calls.length
    cluster.stop()
    await new Promise((r) => setTimeout(r, 3_000))
    cluster.start()
    const answeredMeanwhile = calls.slice(stoppedAt).filter((c) => c.complete).length
    await new Promise((r) => setTimeout(r, 2_500))
    running = false
    await loaded
    console.log(`fault injection with leases: ${answeredMeanwhile} calls answered while PostgreSQL was down, metered after it came back`)
    const unavailable = calls.filter((c) => c.status === 503)
    expect(unavailable.length).toBeGreaterThan(0)
    expect(unavailable.every((c) => c.code === "store_unavailable")).toBe(true)
    expect(calls.filter((c) => c.status !== 200 && c.status !== 503)).toEqual([])
    expect(answeredMeanwhile).toBeGreaterThan(0)
    await settleAndCheck("PostgreSQL stopped 3 s under load", calls)
  }, 60_000)

  it("a machine dropping streams and clients leaving at random points, on shared leases", async () => {
    const accounts = await runtime.runPromise(newAccounts(6))
    const calls = await load(accounts, 8, (n) => n < 180, (n) => {
      switch (n % 5) {
        case 0: return [true, "drop", undefined]
        // Before the machine is called, while it answers, mid-stream (a slow stream lasts ~150 ms after its head).
        case 1: return [true, "slow", Math.floor(Math.random() * 250)]
        case 2: return [false, "slow", Math.floor(Math.random() * 150)]
        case 3: return [true, "ok", undefined]
        default: return [false, "ok", undefined]
      }
    })
    expect(calls.some((c) => c.status === "aborted")).toBe(true)
    expect(calls.some((c) => mock.dropped.has(c.id) && c.events > 0)).toBe(true)
    // A notice of each account (as a write to its state sends) closes its leases: voided once their
    // calls are metered, well before their 10 s are up.
    const ids = accounts.map((a) => `'${a.accountId}'`).join(", ")
    cluster.psql(`SELECT pg_notify('account_state', id) FROM unnest(ARRAY[${ids}]) AS id`)
    await settleAndCheck("streams dropped by the machine, clients leaving mid-call, then account notices", calls, 4_000)
  }, 60_000)
})
