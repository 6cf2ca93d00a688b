/**
 * Credit leases over two gateway processes on the same memory stores, both leasing, hearing each
 * other's notices (docs/performance.md "Credit leases"; GatewayLeases.test.ts for one process).
 * Whatever batches of calls, notices, revocations and lowered limits come, in any order: each call
 * answered 200 has one usage record charged COST, no refused call has one, the balance fell by what
 * the records say, nothing is held once both processes stop, the month's spend stays within the
 * account's limit, and a key is refused 401 in both processes once its revocation is told.
 */
import { Gateway } from "@model-platform/core/gateway"
import { AccountNotices, monthOf } from "@model-platform/core/kernel"
import { ApiKeys } from "@model-platform/core/keys"
import { LedgerStore } from "@model-platform/core/ledger"
import { ACCOUNT_BUDGET, UsageStore } from "@model-platform/core/billing"
import { Effect } from "effect"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { call, newKey } from "./gatewayStub.ts"
import { buildStores, callOnce, COST, CREDIT, inProcessNotices, leasingGateway, type Stores } from "./pricedGateway.ts"

type Side = 0 | 1
type Step =
  /** `n` calls at once; every `badEvery`-th one the machine refuses (400). */
  | { readonly kind: "calls"; readonly process: Side; readonly key: Side; readonly n: number; readonly stream: boolean; readonly badEvery: number }
  /** `quiet`: both processes idle first; otherwise a lease being taken may still be on its way. */
  | { readonly kind: "notice"; readonly quiet: boolean }
  | { readonly kind: "revoke"; readonly process: Side; readonly key: Side; readonly quiet: boolean }
  /** The limit lowered to what the answered calls were charged plus `room` estimates. */
  | { readonly kind: "lower"; readonly room: number; readonly quiet: boolean }

const side = fc.constantFrom<Side>(0, 1)
const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant("calls" as const),
      process: side,
      key: side,
      n: fc.integer({ min: 1, max: 16 }),
      stream: fc.boolean(),
      badEvery: fc.constantFrom(0, 0, 2, 3)
    })
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("notice" as const), quiet: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("revoke" as const), process: side, key: side, quiet: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("lower" as const), room: fc.constantFrom(0, 1, 4, 16, 48), quiet: fc.boolean() }) }
)
/** Mostly none: runs with money and rpm to spare show the leases lending. */
const sometimes = (arb: fc.Arbitrary<number>) => fc.oneof({ weight: 3, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: arb })
const runArb = fc.record({
  keys: fc.constantFrom(1, 2, 2),
  // The tier's rpm: a lease takes min(16, rpm / 8) hits; 40 makes 429s reachable.
  rpm: fc.constantFrom(100_000, 100_000, 100_000, 40),
  // In estimates: a few leases' worth (32 each) or less, so leases are refused and calls go alone.
  balance: sometimes(fc.integer({ min: 1, max: 100 })),
  limit: sometimes(fc.integer({ min: 1, max: 100 })),
  // The store's admission answers on their way this long (a real store's round trip).
  latencyMs: fc.constantFrom(0, 0, 3, 10),
  steps: fc.array(stepArb, { minLength: 1, maxLength: 10 })
})
type Run = typeof runArb extends fc.Arbitrary<infer R> ? R : never

const plain = (process: Side, key: Side, n: number): Step => ({ kind: "calls", process, key, n, stream: false, badEvery: 0 })
const ample = { keys: 2, rpm: 100_000, balance: undefined, limit: undefined } as const
/**
 * Always tried first. Found by this property, shrunk (seeds 1469344115 and -413250772, the
 * admission answers 10 ms late): the 8th call asks for its lease's successor; while the store's
 * answer is on its way the account's notice is told (a key revoked, a limit lowered to the spend);
 * the successor lends after it, to the revoked key (200, not 401) or past the limit (450 > 400).
 */
const found: ReadonlyArray<Run> = [
  { ...ample, keys: 1, latencyMs: 10, steps: [plain(0, 0, 8), { kind: "revoke", process: 1, key: 0, quiet: false }] },
  { ...ample, keys: 1, latencyMs: 10, steps: [plain(0, 0, 8), { kind: "lower", room: 0, quiet: false }, plain(0, 0, 1)] },
  // Leases lending, every time: many calls a batch, money and rpm to spare.
  { ...ample, latencyMs: 0, steps: [plain(0, 0, 16), plain(1, 1, 16), plain(0, 0, 16), plain(1, 0, 16)] }
]

const idle = Effect.flatMap(Gateway, (g) => g.idle)
const sum = (ns: ReadonlyArray<bigint>) => ns.reduce((n, m) => n + m, 0n)
const totals = { runs: 0, calls: 0, admits: 0, leasedRuns: 0, statuses: {} as Record<number, number> }

describe("credit leases over two processes (property)", () => {
  it("every answered call charged once, refused ones never, nothing held, the limit kept, a revoked key refused from its notice", async () => {
    // A plain call's estimate: what its lease reserves, over LEASE_CALLS (32).
    const estimate = await (async () => {
      const { runtime } = leasingGateway(await buildStores())
      try {
        const { accountId, auth } = await runtime.runPromise(newKey(CREDIT))
        await runtime.runPromise(callOnce(auth))
        const [lease] = await runtime.runPromise(Effect.flatMap(LedgerStore, (l) => l.pending(accountId)))
        return sum(lease!.allocations.map((a) => a.amount)) / 32n
      } finally {
        await runtime.dispose()
      }
    })()

    await fc.assert(
      fc.asyncProperty(runArb, async (run) => {
        const stores = await buildStores()
        const inStores = <A>(effect: Effect.Effect<A, never, Stores>) => Effect.runPromise(Effect.provide(effect, stores))
        const notices = inProcessNotices() // one layer: each process hears the other's notices
        const processes = [0, 1].map(() => leasingGateway(stores, { notices, rpm: run.rpm, admitLatencyMs: run.latencyMs }))
        const [a, b] = [processes[0]!.runtime, processes[1]!.runtime]
        let disposed = false
        try {
          const credit = run.balance === undefined ? CREDIT : BigInt(run.balance) * estimate
          const { accountId, ...first } = await a.runPromise(newKey(credit))
          const second = await a.runPromise(Effect.map(
            Effect.flatMap(ApiKeys, (k) => k.issue(accountId, { name: "k2", permissions: ["inference"], machine_id: null })),
            (key) => ({ keyId: key.id, auth: `Bearer ${key.secret}` })
          ))
          const keys = [first, second].slice(0, run.keys).map((k) => ({ ...k, revoked: false, answered: 0 }))
          const answered = () => keys.reduce((n, k) => n + k.answered, 0)
          const tell = () => b.runPromise(Effect.flatMap(AccountNotices, (n) => n.tell(accountId)))
          let limit: bigint | undefined = undefined
          const setLimit = async (value: bigint) => {
            limit = value
            await inStores(Effect.flatMap(LedgerStore, (l) => l.setBudgetLimit(accountId, ACCOUNT_BUDGET, value)))
            await tell()
          }
          if (run.limit !== undefined) await setLimit(BigInt(run.limit) * estimate)
          // The month's spend within the account's own limit, whenever looked at (the tier's is far above).
          const limitKept = async () => {
            const budgets = await inStores(Effect.flatMap(LedgerStore, (l) => l.budgets(accountId, monthOf(Date.now()))))
            const spent = budgets.find((s) => s.budget === ACCOUNT_BUDGET)?.spent ?? 0n
            if (limit !== undefined) expect(spent, "the month's spend").toBeLessThanOrEqual(limit)
          }
          const quiet = () => Promise.all([a.runPromise(idle), b.runPromise(idle)])
          // A refusal for credit, a limit or the rpm only where the run has one.
          const refusable = () => [...(run.balance !== undefined || limit !== undefined ? [402] : []), ...(run.rpm < 100_000 ? [429] : [])]
          const seen: Array<number> = []
          let batches = 0
          const calls = async (process: Side, key: Side, n: number, stream: boolean, badEvery: number) => {
            const k = keys[key % keys.length]!
            const bad = (i: number) => badEvery > 0 && i % badEvery === badEvery - 1
            const body = (i: number) => ({ model: "chat", messages: [{ role: "user", content: "hi" }], stream, ...(bad(i) ? { user: "bad" } : {}) })
            const statuses = await [a, b][process]!.runPromise(Effect.all(
              Array.from({ length: n }, (_, i) => Effect.map(call("/v1/chat/completions", k.auth, body(i)), (r) => r.status)),
              { concurrency: "unbounded" }
            ))
            statuses.forEach((status, i) => {
              const allowed = k.revoked ? [401] : [bad(i) ? 400 : 200, ...refusable()]
              expect(allowed, `call ${i + 1} of ${n} on process ${process}, key ${key % keys.length}${k.revoked ? " (revoked)" : ""}`).toContain(status)
              if (status === 200) k.answered += 1
            })
            seen.push(...statuses)
            batches += 1
          }

          for (const step of run.steps) {
            if (step.kind === "calls") await calls(step.process, step.key, step.n, step.stream, step.badEvery)
            else {
              if (step.quiet) await quiet()
              if (step.kind === "notice") await tell()
              else if (step.kind === "revoke") {
                const k = keys[step.key % keys.length]!
                if (k.revoked) continue
                // Through one process's ApiKeys: it forgets the key and tells the account's notice.
                await [a, b][step.process]!.runPromise(Effect.orDie(Effect.gen(function*() {
                  const apiKeys = yield* ApiKeys
                  yield* apiKeys.revoke(yield* apiKeys.authenticate(k.auth.slice("Bearer ".length)), k.keyId)
                })))
                k.revoked = true
              } else {
                // No call runs now: every later one is admitted under the lowered limit, and every
                // earlier one is charged COST, metered or not yet.
                const lowered = COST * BigInt(answered()) + BigInt(step.room) * estimate
                await setLimit(limit === undefined || lowered < limit ? lowered : limit)
              }
            }
            await limitKept()
          }
          // Each revoked key once more in each process: refused.
          for (const [i, k] of keys.entries()) if (k.revoked) for (const p of [0, 1] as const) await calls(p, i as Side, 1, false, 0)

          await quiet()
          await limitKept()
          await Promise.all([a.dispose(), b.dispose()])
          disposed = true
          const after = await inStores(Effect.gen(function*() {
            const ledger = yield* LedgerStore
            const scopes = yield* ledger.balances(accountId)
            const records = yield* (yield* UsageStore).list({ account_id: accountId, from: "2000-01-01T00:00:00.000Z", to: "2100-01-01T00:00:00.000Z" })
            return { posted: sum(scopes.map((s) => s.posted)), held: sum(scopes.map((s) => s.held)), pending: (yield* ledger.pending(accountId)).length, records }
          }))
          // Leases voided at shutdown: nothing held, nothing pending.
          expect({ held: after.held, pending: after.pending }).toEqual({ held: 0n, pending: 0 })
          // One record per 200, of its key, each charged COST: none for a refused call.
          for (const k of keys) expect(after.records.filter((r) => r.key_id === k.keyId).length, `records of ${k.keyId}`).toBe(k.answered)
          expect(after.records.length).toBe(answered())
          expect(after.records.every((r) => r.credits === COST)).toBe(true)
          // The balance fell by exactly what the records charged.
          expect(credit - after.posted).toBe(sum(after.records.map((r) => r.credits)))
          await limitKept()

          // Leases lent: with money and rpm to spare and many calls a batch, fewer store steps than
          // calls (each batch takes at most a lease and its successor; a revoked key's call up to two).
          const admits = processes.reduce((n, p) => n + p.counted.admits, 0)
          const reached = seen.filter((s) => s === 200 || s === 400).length
          if (run.balance === undefined && limit === undefined && run.rpm === 100_000 && reached >= 3 * batches + 8) {
            totals.leasedRuns += 1
            expect(admits - 2 * seen.filter((s) => s === 401).length, `${admits} store steps for ${reached} calls`).toBeLessThan(reached)
          }
          totals.runs += 1
          totals.calls += seen.length
          totals.admits += admits
          for (const s of seen) totals.statuses[s] = (totals.statuses[s] ?? 0) + 1
        } finally {
          if (!disposed) await Promise.all([a.dispose(), b.dispose()])
        }
      }),
      { numRuns: 40, examples: found.map((run) => [run]) }
    )
    console.log(`leases over two processes: ${JSON.stringify(totals)}`)
    // Not vacuous: leases lent in some runs, and refusals for credit or a limit in some.
    expect(totals.leasedRuns).toBeGreaterThan(0)
    expect(totals.statuses[402] ?? 0).toBeGreaterThan(0)
  }, 60_000)
})
