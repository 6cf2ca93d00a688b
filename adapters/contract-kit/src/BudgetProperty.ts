/**
 * The budgets' interleaving property (docs/billing.md "Monthly limits"), part of the ledger store
 * contract: concurrent calls — reservations claiming "account" and "key:k" (or another key, in one
 * of two months), then a settlement (up to the amount, or more: excess), a void, an expiry or
 * nothing (abandoned, expired at the end) — and limit changes, with fast-check's scheduler
 * choosing the order in which their store operations run. Each store operation runs alone, in
 * that order (the scheduler waits for it before releasing the next), so after each one the store
 * must agree with a model, and:
 *   1. at each admission, for every claim: spent + held <= the limit in force then;
 *   2. at every point, per budget and month: spent + held <= the limit in force at its last
 *      admission + the excess recorded since (nothing else adds to it: settlements move held to
 *      spent, voids and expiries release, and a limit change takes nothing back);
 *   3. held = the sum of the amounts of the pending reservations claiming the budget (as the
 *      store lists them);
 *   4. the balance invariants (Ledger.auditAccount; available >= 0 but account-wide by the excess).
 * Reservations go through `reserveOrdered` (the store's reserveInOrder, or the read-allocate-write
 * path with its budget read), so every path is exercised; the operations' atomicity under real
 * concurrency is the contract's concurrent tests' business (BudgetContract.ts).
 *
 * Reservations here live in 1995 (created and expiring), an era no other suite expires in.
 */
import type { Vitest } from "@effect/vitest"
import fc from "fast-check"
import { Effect } from "effect"
import {
  auditAccount,
  type BudgetClaim,
  type BudgetState,
  firstOverBudget,
  LedgerStore,
  reservedAmount,
  reserveOrdered,
  settlementOf
} from "@model-platform/core/ledger"
import { generateId, type Timestamp, toTimestamp } from "@model-platform/core/kernel"
import { gatedLedger, type RunOnStore, schedulerGate, schedulerProperty } from "./SchedulerGate.ts"

const y1995 = (ms: number): Timestamp => toTimestamp(Date.UTC(1995, 0, 1) + ms)
const MONTHS = ["2026-01", "2026-02"] as const

type ClaimShape = "both" | "both_key_first" | "account" | "key" | "other_key"
/** A call's real cost: a part of what it reserved, or more (a machine's over-report: excess). */
type Cost = { readonly kind: "within"; readonly permille: number } | { readonly kind: "over"; readonly extra: bigint }
type Outcome =
  | { readonly kind: "settle"; readonly cost: Cost }
  | { readonly kind: "void" | "expire" | "abandon" }
type Step =
  | {
    readonly kind: "call"
    readonly amount: bigint
    readonly claims: ClaimShape
    readonly month: 0 | 1
    readonly outcome: Outcome
  }
  | { readonly kind: "limit"; readonly budget: "account" | "key:k"; readonly limit: bigint | null }

interface Scenario {
  readonly funds: bigint
  readonly defaults: { readonly account: bigint | null; readonly key: bigint | null }
  readonly limits: { readonly account: bigint | null; readonly key: bigint | null }
  readonly steps: ReadonlyArray<Step>
}

const costArb: fc.Arbitrary<Cost> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("within" as const), permille: fc.integer({ min: 0, max: 1000 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("within" as const), permille: fc.constant(1000) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("over" as const), extra: fc.bigInt({ min: 1n, max: 4n }) }) }
)
const actualCost = (reserved: bigint, cost: Cost): bigint =>
  cost.kind === "within" ? (reserved * BigInt(cost.permille)) / 1000n : reserved + cost.extra

const limitArb = fc.option(fc.bigInt({ min: 0n, max: 30n }), { nil: null, freq: 4 })
const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant("call" as const),
      amount: fc.bigInt({ min: 0n, max: 12n }),
      claims: fc.constantFrom<ClaimShape>("both", "both", "both_key_first", "account", "key", "other_key"),
      month: fc.constantFrom<0 | 1>(0, 0, 0, 1),
      outcome: fc.oneof(
        { weight: 3, arbitrary: fc.record({ kind: fc.constant("settle" as const), cost: costArb }) },
        { weight: 1, arbitrary: fc.record({ kind: fc.constantFrom("void" as const, "expire" as const, "abandon" as const) }) }
      )
    })
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("limit" as const),
      budget: fc.constantFrom("account" as const, "key:k" as const),
      limit: limitArb
    })
  }
)
const scenarioArb: fc.Arbitrary<Scenario> = fc.record({
  funds: fc.oneof(fc.bigInt({ min: 0n, max: 40n }), fc.constant(1_000n), fc.constant(1_000n)),
  defaults: fc.record({ account: limitArb, key: limitArb }),
  limits: fc.record({ account: limitArb, key: limitArb }),
  steps: fc.array(stepArb, { minLength: 2, maxLength: 12 })
})

const claimsOf = (shape: ClaimShape, month: string, defaults: Scenario["defaults"]): ReadonlyArray<BudgetClaim> => {
  const account = { budget: "account", month, default_limit: defaults.account }
  const key = { budget: "key:k", month, default_limit: defaults.key }
  switch (shape) {
    case "both":
      return [account, key]
    case "both_key_first":
      return [key, account]
    case "account":
      return [account]
    case "key":
      return [key]
    case "other_key":
      return [account, { budget: "key:j", month, default_limit: null }]
  }
}

// ---------------------------------------------------------------------------------------------
// the model: what the store must hold after each operation (they run one at a time)

interface Pending {
  readonly amount: bigint
  readonly claims: ReadonlyArray<BudgetClaim>
  readonly expires_at: Timestamp
}

const slot = (budget: string, month: string) => `${month}/${budget}`

class Model {
  readonly limits = new Map<string, bigint | null>()
  readonly defaults = new Map<string, bigint | null>()
  readonly spent = new Map<string, bigint>()
  readonly pending = new Map<string, Pending>()
  readonly refs = new Set<string>()
  /** Per slot: the limit in force at its last admission, and the excess recorded since. */
  readonly lastAdmission = new Map<string, { limit: bigint | null; excessSince: bigint }>()
  posted: bigint
  excess = 0n

  constructor(funds: bigint) {
    this.posted = funds
  }

  held(budget: string, month: string): bigint {
    let sum = 0n
    for (const p of this.pending.values()) {
      if (p.claims.some((c) => c.budget === budget && c.month === month)) sum += p.amount
    }
    return sum
  }
  heldInBalance(): bigint {
    let sum = 0n
    for (const p of this.pending.values()) sum += p.amount
    return sum
  }
  stateOf = (claim: BudgetClaim) => ({
    limit: this.limits.get(claim.budget) ?? null,
    spent: this.spent.get(slot(claim.budget, claim.month)) ?? 0n,
    held: this.held(claim.budget, claim.month)
  })
  /** What `budgets(account, month)` must answer. */
  budgets(month: string): ReadonlyArray<BudgetState> {
    const names = new Set([...this.limits.keys(), "account", "key:k", "key:j"])
    return [...names].sort().flatMap((budget) => {
      const limit = this.limits.get(budget) ?? null
      const spent = this.spent.get(slot(budget, month)) ?? 0n
      const held = this.held(budget, month)
      return limit === null && spent === 0n && held === 0n ? [] : [{ budget, limit, spent, held }]
    })
  }
  admit(ref: string, pending: Pending) {
    this.pending.set(ref, pending)
    for (const claim of pending.claims) {
      const limit = this.limits.get(claim.budget) ?? claim.default_limit
      this.lastAdmission.set(slot(claim.budget, claim.month), { limit, excessSince: 0n })
    }
  }
  finish(ref: string, charged: bigint | undefined, excess: bigint) {
    const p = this.pending.get(ref)!
    this.pending.delete(ref)
    if (charged === undefined) return
    this.posted -= charged
    this.excess += excess
    for (const claim of p.claims) {
      const key = slot(claim.budget, claim.month)
      this.spent.set(key, (this.spent.get(key) ?? 0n) + charged)
      const last = this.lastAdmission.get(key)
      if (last !== undefined) last.excessSince += excess
    }
  }
}

// ---------------------------------------------------------------------------------------------
// the property

const runScenario = (s: fc.Scheduler, scenario: Scenario, run: RunOnStore) =>
  run(Effect.gen(function*() {
    const inner = yield* LedgerStore
    const account = yield* generateId("acct")
    const model = new Model(scenario.funds)
    const violations: Array<string> = []
    const expect = (ok: boolean, what: string) => void (ok || violations.push(what))

    if (scenario.funds > 0n) {
      yield* inner.post({
        id: yield* generateId("led"),
        account_id: account,
        machine_id: null,
        amount: scenario.funds,
        type: "credit_added",
        ref: yield* generateId("order"),
        created_at: y1995(0)
      })
    }
    for (const [budget, limit] of [["account", scenario.limits.account], ["key:k", scenario.limits.key]] as const) {
      if (limit !== null) yield* inner.setBudgetLimit(account, budget, limit)
      model.limits.set(budget, limit)
    }

    /** Invariants 2-4 and the model, read from the store with nothing else running. */
    const check = (label: string) =>
      Effect.gen(function*() {
        const [balances, entries, pending] = yield* Effect.all([
          inner.balances(account),
          inner.entries(account),
          inner.pending(account)
        ])
        for (const problem of auditAccount({ balances, entries, pending })) violations.push(`${label}: ${problem}`)
        const wide = balances.find((b) => b.machine_id === null) ?? { posted: 0n, held: 0n }
        expect(wide.posted === model.posted && wide.held === model.heldInBalance(), `${label}: balance ${wide.posted}/${wide.held}`)
        expect(wide.posted - wide.held >= -model.excess, `${label}: available below the excess`)
        expect(
          pending.map((r) => r.ref).sort().join() === [...model.pending.keys()].sort().join(),
          `${label}: pending ${pending.map((r) => r.ref)}`
        )
        for (const month of MONTHS) {
          const budgets = yield* inner.budgets(account, month)
          for (const b of budgets) {
            const claimedBy = pending.filter((r) => r.budgets?.some((c) => c.budget === b.budget && c.month === month))
            const sum = claimedBy.reduce((n, r) => n + reservedAmount(r.allocations), 0n)
            expect(b.held === sum, `${label}: ${month} ${b.budget} held ${b.held}, its pending reservations ${sum}`)
            const last = model.lastAdmission.get(slot(b.budget, month))
            const bound = last === undefined ? 0n : last.limit === null ? undefined : last.limit + last.excessSince
            expect(
              bound === undefined || b.spent + b.held <= bound,
              `${label}: ${month} ${b.budget} spent ${b.spent} + held ${b.held} > ${bound}`
            )
          }
          expect(
            JSON.stringify(budgets, (_, v) => typeof v === "bigint" ? `${v}` : v) ===
              JSON.stringify(model.budgets(month), (_, v) => typeof v === "bigint" ? `${v}` : v),
            `${label}: ${month} budgets differ from the model`
          )
        }
      })

    const gate = schedulerGate(s, check)

    /** The store's answer to a reservation, as the model sees it when it runs. */
    const predict = (amount: bigint, claims: ReadonlyArray<BudgetClaim>) => {
      const over = firstOverBudget(claims, model.stateOf, amount)
      const available = model.posted - model.heldInBalance()
      return { over, fits: amount === 0n || available >= amount, available: available > 0n ? available : 0n }
    }
    /** Invariant 1, right after an admission. */
    const admitted = (label: string, ref: string, amount: bigint, claims: ReadonlyArray<BudgetClaim>, expiresAt: Timestamp) => {
      model.admit(ref, { amount, claims, expires_at: expiresAt })
      for (const claim of claims) {
        const { held, limit, spent } = model.stateOf(claim)
        const inForce = limit ?? claim.default_limit
        expect(inForce === null || spent + held <= inForce, `${label}: admitted past ${claim.budget}'s ${inForce}`)
      }
    }

    const gated = gatedLedger(inner, gate, {
      reads: ["balances", "budgets"],
      reserve: (r) => {
        const amount = reservedAmount(r.allocations)
        const claims = r.budgets ?? []
        const p = predict(amount, claims)
        return (result) => {
          const want = p.over !== undefined ? "over_budget" : p.fits ? "reserved" : "insufficient"
          expect(result === want, `reserve ${r.ref}: ${result}, the model says ${want}`)
          if (result === "reserved") admitted(`reserve ${r.ref}`, r.ref, amount, claims, r.expires_at)
        }
      },
      reserveInOrder: (r) => {
        const claims = r.budgets ?? []
        const p = predict(r.amount, claims)
        return (result) => {
          const want = p.over ?? (p.fits
            ? { _tag: "reserved", allocations: r.amount === 0n ? [] : [{ machine_id: null, amount: r.amount }] }
            : { _tag: "insufficient", available: p.available })
          // No grants are claimed here: a store may answer `grants: []` or leave it out.
          const { grants: _, ...answer } = result._tag === "reserved" ? result : { ...result, grants: undefined }
          expect(
            JSON.stringify(answer, (_, v) => typeof v === "bigint" ? `${v}` : v) ===
              JSON.stringify(want, (_, v) => typeof v === "bigint" ? `${v}` : v),
            `reserveInOrder ${r.ref}: ${result._tag}, the model says ${want._tag}`
          )
          if (result._tag === "reserved") admitted(`reserveInOrder ${r.ref}`, r.ref, r.amount, claims, r.expires_at)
        }
      },
      settle: (st) => (result) => {
        const want = model.pending.has(st.ref) ? "settled" : "not_pending"
        expect(result === want, `settle ${st.ref}: ${result}, the model says ${want}`)
        if (result === "settled") model.finish(st.ref, st.charged, st.excess)
      },
      void: (ref) => (result) => {
        const want = model.pending.has(ref) ? "voided" : "not_pending"
        expect(result === want, `void ${ref}: ${result}, the model says ${want}`)
        if (result === "voided") model.finish(ref, undefined, 0n)
      },
      expire: (now) => (refs) => {
        const mine = refs.filter((ref) => model.refs.has(ref)).sort()
        const want = [...model.pending].filter(([, p]) => p.expires_at <= now).map(([ref]) => ref).sort()
        expect(mine.join() === want.join(), `expire ${now}: ${mine}, the model says ${want}`)
        for (const ref of mine) if (model.pending.has(ref)) model.finish(ref, undefined, 0n)
      },
      setBudgetLimit: (_, budget, limit) => () => void model.limits.set(budget, limit)
    })
    const reserve = reserveOrdered(gated)

    const steps = scenario.steps.map((step, i) =>
      Effect.gen(function*() {
        if (step.kind === "limit") return yield* gated.setBudgetLimit(account, step.budget, step.limit)
        const ref = yield* generateId("usage")
        model.refs.add(ref)
        const expiresAt = y1995(1_000 * (i + 1))
        const result = yield* reserve({
          ref,
          account_id: account,
          machine_id: null,
          scopes: [null],
          amount: step.amount,
          created_at: y1995(0),
          expires_at: expiresAt,
          budgets: claimsOf(step.claims, MONTHS[step.month], scenario.defaults)
        })
        if (result._tag !== "reserved") return
        const { outcome } = step
        if (outcome.kind === "settle") {
          const reserved = { account_id: account, allocations: result.allocations }
          yield* gated.settle(yield* settlementOf(ref, actualCost(step.amount, outcome.cost), reserved))
        } else if (outcome.kind === "void") yield* gated.void(ref, y1995(500))
        else if (outcome.kind === "expire") yield* gated.expire(expiresAt)
      }))
    yield* Effect.all(steps, { concurrency: "unbounded" })

    // Abandoned calls never come back: their expiry releases them. Then nothing is held, and each
    // budget has spent exactly what its settled reservations were charged.
    const left = yield* inner.expire(y1995(86_400_000))
    for (const ref of left) if (model.pending.has(ref)) model.finish(ref, undefined, 0n)
    yield* check("the end")
    for (const month of MONTHS) {
      for (const b of yield* inner.budgets(account, month)) expect(b.held === 0n, `the end: ${b.budget} holds ${b.held}`)
    }
    return violations
  }))

/** Declares the property on the contract's store; `numRuns` scenarios (fewer on a slow store). */
export const budgetProperty = (it: Vitest.MethodsNonLive<LedgerStore>, numRuns: number) =>
  schedulerProperty(
    it,
    "property: any interleaving of budgeted calls and limit changes keeps every limit (fc.scheduler)",
    scenarioArb,
    runScenario,
    numRuns
  )
