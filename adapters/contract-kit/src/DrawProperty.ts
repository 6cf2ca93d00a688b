/**
 * The leases' interleaving property (docs/performance.md "Credit leases"), part of the ledger
 * store contract on every store with `LedgerStore.draw`: two processes of one account each take a
 * lease (through its allowance, then its credits, under the account's monthly limit), admit calls
 * by drawing from it in memory, and charge each call with a draw; then each process closes its
 * lease (a void) or crashes (the sweeper expires the lease, and the process's journal is replayed:
 * every call drawn again). Fast-check's scheduler chooses the order in which the store operations
 * run, each alone, so after each one the store must agree with a model, and:
 *   1. no balance, grant or budget is overspent, but by what is charged with no hold: a machine's
 *      excess, and a call drawn from a lease that finished before it was metered (after a crash
 *      the sweeper expires the lease before the journal's replay; an answered call is charged,
 *      its allowance too, even where the allowance has been held for others since). So available
 *      >= -that, per grant spent + held <= its size + the grant charges of such calls, and the
 *      budget's spent + held <= its limit + that;
 *   2. held = what the pending leases still hold (balances, grants and the budget): a call's
 *      charge comes off its lease, the rest of its draw stays with it;
 *   3. every call a process admitted is charged exactly once: "drawn" while its lease is
 *      pending, "charged" once it has finished, "duplicate" when replayed;
 *   4. once every lease has finished, nothing is held, and the account paid exactly its calls'
 *      charges (Ledger.auditAccount throughout).
 *
 * Leases here live in 1975 (created and expiring), an era no other suite expires in.
 */
import type { Vitest } from "@effect/vitest"
import fc from "fast-check"
import { Effect } from "effect"
import {
  auditAccount,
  type BudgetClaim,
  chargedOf,
  type Draw,
  drawFrom,
  drawOf,
  firstOverBudget,
  grantAvailable,
  type GrantClaim,
  type Holds,
  LedgerStore,
  reservedAmount,
  reserveOrdered,
  takeDrawn,
  takeGrants
} from "@model-platform/core/ledger"
import { generateId, type Timestamp, toTimestamp } from "@model-platform/core/kernel"
import { gatedLedger, type RunOnStore, schedulerGate, schedulerProperty } from "./SchedulerGate.ts"

const y1975 = (ms: number): Timestamp => toTimestamp(Date.UTC(1975, 0, 1) + ms)
const MONTH = "2026-01"
const ALLOWANCE = "allowance:svc"

interface Call {
  readonly estimate: bigint
  /** Its real cost: `permille` of its estimate, plus `extra` (a machine's over-report). */
  readonly permille: number
  readonly extra: bigint
  /** Charged twice: a journal line written again. */
  readonly replayed: boolean
}
interface Process {
  readonly lease: bigint
  readonly calls: ReadonlyArray<Call>
  /** Closed (its lease voided), or crashed (its lease expired by the sweeper, its journal replayed). */
  readonly end: "close" | "crash"
}
interface Scenario {
  readonly funds: bigint
  readonly allowance: bigint
  readonly limit: bigint | null
  readonly processes: readonly [Process, Process]
}

const callArb: fc.Arbitrary<Call> = fc.record({
  estimate: fc.bigInt({ min: 0n, max: 5n }),
  permille: fc.constantFrom(0, 500, 1000, 1000),
  extra: fc.constantFrom(0n, 0n, 0n, 2n),
  replayed: fc.boolean()
})
const processArb: fc.Arbitrary<Process> = fc.record({
  lease: fc.bigInt({ min: 0n, max: 14n }),
  calls: fc.array(callArb, { maxLength: 6 }),
  end: fc.constantFrom<"close" | "crash">("close", "close", "crash")
})
const scenarioArb: fc.Arbitrary<Scenario> = fc.record({
  funds: fc.bigInt({ min: 0n, max: 24n }),
  allowance: fc.bigInt({ min: 0n, max: 8n }),
  limit: fc.option(fc.bigInt({ min: 0n, max: 20n }), { nil: null }),
  processes: fc.tuple(processArb, processArb)
})

const json = (v: unknown) => JSON.stringify(v, (_, x) => typeof x === "bigint" ? `${x}` : x)
const sum = (items: ReadonlyArray<{ readonly amount: bigint }>) => items.reduce((n, i) => n + i.amount, 0n)

/** What the store must show: the pending leases' holds, what was spent and charged. */
class Model {
  readonly leases = new Map<string, Holds>()
  readonly charged = new Set<string>()
  posted: bigint
  grantSpent = 0n
  budgetSpent = 0n
  excess = 0n
  /** What was charged with no hold to take it from: calls drawn from a lease that had finished. */
  late = 0n
  lateGrant = 0n
  constructor(funds: bigint) {
    this.posted = funds
  }
  creditsHeld = () => [...this.leases.values()].reduce((n, l) => n + sum(l.allocations), 0n)
  grantHeld = () => [...this.leases.values()].reduce((n, l) => n + sum(l.grants), 0n)
  charge(d: Draw, result: "drawn" | "charged") {
    this.charged.add(d.settlement.ref)
    this.posted -= d.settlement.charged
    this.budgetSpent += d.settlement.charged
    this.grantSpent += sum(d.settlement.grants ?? [])
    this.excess += d.settlement.excess
    if (result === "charged") {
      this.late += d.settlement.charged
      this.lateGrant += sum(d.settlement.grants ?? [])
    }
  }
}

const runScenario = (s: fc.Scheduler, scenario: Scenario, run: RunOnStore) =>
  run(Effect.gen(function*() {
    const inner = yield* LedgerStore
    const violations: Array<string> = []
    const expect = (ok: boolean, what: string) => void (ok || violations.push(what))
    if (inner.draw === undefined) return violations
    const account = yield* generateId("acct")
    const model = new Model(scenario.funds)
    const grants: ReadonlyArray<GrantClaim> = [{ grant: ALLOWANCE, period: MONTH, size: scenario.allowance }]
    const budgets: ReadonlyArray<BudgetClaim> = [{ budget: "account", month: MONTH, default_limit: scenario.limit }]

    if (scenario.funds > 0n) {
      yield* inner.post({
        id: yield* generateId("led"),
        account_id: account,
        machine_id: null,
        amount: scenario.funds,
        type: "credit_added",
        ref: yield* generateId("order"),
        created_at: y1975(0)
      })
    }

    /** Invariants 1 and 2, read from the store with nothing else running. */
    const check = (label: string) =>
      Effect.gen(function*() {
        const [balances, entries, pending, grantStates, budgetStates] = yield* Effect.all([
          inner.balances(account),
          inner.entries(account),
          inner.pending(account),
          inner.grants(account),
          inner.budgets(account, MONTH)
        ])
        for (const problem of auditAccount({ balances, entries, pending })) violations.push(`${label}: ${problem}`)
        const wide = balances.find((b) => b.machine_id === null) ?? { posted: 0n, held: 0n }
        expect(
          wide.posted === model.posted && wide.held === model.creditsHeld(),
          `${label}: balance ${wide.posted}/${wide.held}, the model says ${model.posted}/${model.creditsHeld()}`
        )
        const past = model.excess + model.late
        expect(wide.posted - wide.held + past >= 0n, `${label}: available ${wide.posted - wide.held} past the excess and late charges ${past}`)
        const grant = grantStates.find((g) => g.grant === ALLOWANCE) ?? { spent: 0n, held: 0n }
        expect(
          grant.spent === model.grantSpent && grant.held === model.grantHeld(),
          `${label}: allowance ${grant.spent}/${grant.held}, the model says ${model.grantSpent}/${model.grantHeld()}`
        )
        expect(
          grant.spent + grant.held <= scenario.allowance + model.lateGrant,
          `${label}: allowance ${grant.spent} + ${grant.held} past ${scenario.allowance} + late ${model.lateGrant}`
        )
        const budget = budgetStates.find((b) => b.budget === "account") ?? { spent: 0n, held: 0n }
        expect(
          budget.spent === model.budgetSpent && budget.held === model.creditsHeld(),
          `${label}: budget ${budget.spent}/${budget.held}, the model says ${model.budgetSpent}/${model.creditsHeld()}`
        )
        if (scenario.limit !== null) {
          expect(budget.spent + budget.held <= scenario.limit + past, `${label}: budget ${budget.spent} + ${budget.held} past ${scenario.limit} + ${past}`)
        }
      })

    const gate = schedulerGate(s, check)
    /** What a lease of `credits` (after the grant) may take now, by the model: its result's tag. */
    const admits = (grantHolds: bigint, credits: bigint) => {
      const stateOf = () => ({ limit: null, spent: model.budgetSpent, held: model.creditsHeld() })
      if (firstOverBudget(budgets, stateOf, credits) !== undefined) return "over_budget"
      if (model.grantSpent + model.grantHeld() + grantHolds > scenario.allowance) return "insufficient"
      return credits === 0n || model.posted - model.creditsHeld() >= credits ? "reserved" : "insufficient"
    }
    const gated = gatedLedger(inner, gate, {
      reads: ["balances", "grants", "budgets"],
      reserve: (r) => {
        const want = admits(sum(r.grants ?? []), reservedAmount(r.allocations))
        return (result) => {
          expect(result === want, `reserve ${r.ref}: ${result}, the model says ${want}`)
          if (result === "reserved") {
            const holds = (r.grants ?? []).map(({ amount, grant, period }) => ({ grant, period, amount }))
            model.leases.set(r.ref, { allocations: r.allocations, grants: holds })
          }
        }
      },
      reserveInOrder: (r) => {
        const left = grantAvailable(grants[0]!, { grant: ALLOWANCE, period: MONTH, spent: model.grantSpent, held: model.grantHeld() })
        const { holds, rest } = takeGrants([{ grant: ALLOWANCE, period: MONTH, available: left }], r.amount)
        const want = admits(sum(holds), rest)
        return (result) => {
          expect(result._tag === want, `reserveInOrder ${r.ref}: ${result._tag}, the model says ${want}`)
          if (result._tag === "reserved") model.leases.set(r.ref, { allocations: result.allocations, grants: result.grants ?? [] })
        }
      },
      draw: (d) => {
        const want = model.charged.has(d.settlement.ref) ? "duplicate" : model.leases.has(d.lease) ? "drawn" : "charged"
        return (result) => {
          expect(result === want, `draw ${d.settlement.ref}: ${result}, the model says ${want}`)
          if (result === "duplicate") return
          if (result === "drawn") {
            const left = takeDrawn(model.leases.get(d.lease)!, chargedOf({ allocations: d.allocations, grants: d.grants ?? [] }, d.settlement))
            if ("problem" in left) violations.push(`draw ${d.settlement.ref}: ${left.problem}`)
            else model.leases.set(d.lease, left)
          }
          model.charge(d, result)
        }
      },
      void: (ref) => (result) => {
        expect(result === (model.leases.has(ref) ? "voided" : "not_pending"), `void ${ref}: ${result}`)
        model.leases.delete(ref)
      },
      expire: () => (refs) => {
        for (const ref of refs) model.leases.delete(ref)
      }
    })
    const reserve = reserveOrdered(gated)

    const processes = scenario.processes.map((process, p) =>
      Effect.gen(function*() {
        const lease = yield* generateId("usage")
        const expiresAt = y1975(1_000 * (p + 1))
        const taken = yield* reserve({
          ref: lease,
          account_id: account,
          machine_id: null,
          scopes: [null],
          amount: process.lease,
          created_at: y1975(0),
          expires_at: expiresAt,
          grants,
          budgets
        })
        if (taken._tag !== "reserved") return
        // What the process holds in memory: each call draws from it as it is admitted.
        let left: Holds = { allocations: taken.allocations, grants: taken.grants ?? [] }
        let closed = false
        const journal: Array<Draw> = []
        const call = (c: Call, i: number) =>
          Effect.gen(function*() {
            // The call arrives when the scheduler says: before or after its lease closed.
            yield* gate(`admit ${p}.${i}`, Effect.void)
            if (closed) return
            const drawn = drawFrom(left, c.estimate)
            if (drawn === undefined) return // the lease is dry: the call would wait for a store step
            const next = takeDrawn(left, drawn)
            if ("problem" in next) return void violations.push(`process ${p}: ${next.problem}`)
            left = next
            const actual = (c.estimate * BigInt(c.permille)) / 1000n + c.extra
            const d = yield* drawOf(lease, account, yield* generateId("usage"), drawn, actual)
            journal.push(d)
            yield* gated.draw!(d)
            if (c.replayed) yield* gated.draw!(d)
          })
        const close = gate(`close ${p}`, Effect.sync(() => void (closed = true)))
        const end = Effect.andThen(close, process.end === "close" ? Effect.asVoid(gated.void(lease, y1975(500))) : Effect.asVoid(gated.expire(expiresAt)))
        yield* Effect.all([...process.calls.map(call), end], { concurrency: "unbounded" })
        // The journal replayed (after a crash, every call's line; after a close, none is needed).
        if (process.end === "crash") yield* Effect.forEach(journal, (d) => gated.draw!(d), { discard: true })
      }))
    yield* Effect.all(processes, { concurrency: "unbounded" })

    yield* check("the end")
    const [balances, grantStates, budgetStates] = yield* Effect.all([inner.balances(account), inner.grants(account), inner.budgets(account, MONTH)])
    for (const b of balances) expect(b.held === 0n, `the end: ${b.machine_id ?? "account-wide"} holds ${b.held}`)
    for (const g of grantStates) expect(g.held === 0n, `the end: ${g.grant} holds ${g.held}`)
    for (const b of budgetStates) expect(b.held === 0n, `the end: budget ${b.budget} holds ${b.held}`)
    const charged = [...model.charged]
    const records = yield* Effect.forEach(charged, inner.reservation)
    expect(records.every((r) => r?.status === "settled"), `the end: a charged call is not recorded settled: ${json(records)}`)
    const paid = records.reduce((n, r) => n + (r?.charged ?? 0n), 0n)
    expect(paid === scenario.funds - model.posted, `the end: calls charged ${paid}, the account paid ${scenario.funds - model.posted}`)
    return violations
  }))

/** Declares the property on the contract's store; `numRuns` scenarios (fewer on a slow store). */
export const drawProperty = (it: Vitest.MethodsNonLive<LedgerStore>, numRuns: number) =>
  schedulerProperty(
    it,
    "property: any interleaving of two processes' leases, draws, closes, crashes and replays charges every call once and overspends nothing (fc.scheduler)",
    scenarioArb,
    runScenario,
    numRuns
  )
