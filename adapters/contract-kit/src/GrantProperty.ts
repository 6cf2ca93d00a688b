/**
 * The grants' interleaving property (docs/billing.md "Allowances and the trial"), part of the
 * ledger store contract: concurrent calls of one account — each reserving through its month's
 * allowance (one of two months), then the trial, then credits, and then settled (within or above
 * what it reserved), voided, expired or abandoned — with fast-check's scheduler choosing the order
 * in which their store operations run. Each operation runs alone, so after each one the store must
 * agree with a model, and:
 *   1. no grant goes below zero or past its size: per grant and period, spent >= 0, held >= 0 and
 *      spent + held <= size;
 *   2. allowances never carry across months: each month's allowance is its own (its spent is what
 *      that month's calls were charged, never more than the size), and the trial has one period
 *      only ("once"): the trial is used once;
 *   3. held = what the pending reservations hold (as the store lists them), spent = what the
 *      settlements charged the grant;
 *   4. the balance invariants (Ledger.auditAccount), and credits pay only what grants did not.
 * Reservations go through `reserveOrdered` (the store's reserveInOrder, or the read-take-write path),
 * so every path is exercised.
 *
 * Reservations here live in 1985 (created and expiring), an era no other suite expires in.
 */
import type { Vitest } from "@effect/vitest"
import fc from "fast-check"
import { Effect } from "effect"
import {
  auditAccount,
  grantAvailable,
  type GrantClaim,
  type GrantHold,
  LedgerStore,
  reservedAmount,
  reserveOrdered,
  settlementOf,
  takeGrants
} from "@model-platform/core/ledger"
import { generateId, type Timestamp, toTimestamp } from "@model-platform/core/kernel"
import { gatedLedger, type RunOnStore, schedulerGate, schedulerProperty } from "./SchedulerGate.ts"

const y1985 = (ms: number): Timestamp => toTimestamp(Date.UTC(1985, 0, 1) + ms)
const MONTHS = ["2026-01", "2026-02"] as const

type Outcome =
  | { readonly kind: "settle"; readonly permille: number; readonly extra: bigint }
  | { readonly kind: "void" | "expire" | "abandon" }
interface Call {
  readonly amount: bigint
  readonly month: 0 | 1
  readonly outcome: Outcome
}
interface Scenario {
  readonly funds: bigint
  readonly allowance: bigint
  readonly trial: bigint
  readonly calls: ReadonlyArray<Call>
}

const callArb: fc.Arbitrary<Call> = fc.record({
  amount: fc.bigInt({ min: 0n, max: 10n }),
  month: fc.constantFrom<0 | 1>(0, 0, 1),
  outcome: fc.oneof(
    {
      weight: 3,
      arbitrary: fc.record({
        kind: fc.constant("settle" as const),
        permille: fc.constantFrom(0, 300, 500, 1000, 1000),
        extra: fc.constantFrom(0n, 0n, 0n, 2n)
      })
    },
    { weight: 1, arbitrary: fc.record({ kind: fc.constantFrom("void" as const, "expire" as const, "abandon" as const) }) }
  )
})
const scenarioArb: fc.Arbitrary<Scenario> = fc.record({
  funds: fc.bigInt({ min: 0n, max: 20n }),
  allowance: fc.bigInt({ min: 0n, max: 8n }),
  trial: fc.bigInt({ min: 0n, max: 6n }),
  calls: fc.array(callArb, { minLength: 2, maxLength: 10 })
})

const key = (grant: string, period: string) => `${grant} ${period}`
const json = (v: unknown) => JSON.stringify(v, (_, x) => typeof x === "bigint" ? `${x}` : x)

interface Pending {
  readonly holds: ReadonlyArray<GrantHold>
  readonly credits: bigint
  readonly expires_at: Timestamp
}

/** What the store must hold: per grant and period, spent; the pending reservations' holds. */
class Model {
  readonly spent = new Map<string, bigint>()
  readonly pending = new Map<string, Pending>()
  readonly refs = new Set<string>()
  posted: bigint
  constructor(funds: bigint) {
    this.posted = funds
  }
  held(grant: string, period: string): bigint {
    let sum = 0n
    for (const p of this.pending.values()) {
      for (const h of p.holds) if (h.grant === grant && h.period === period) sum += h.amount
    }
    return sum
  }
  state(claim: GrantClaim) {
    return { grant: claim.grant, period: claim.period, spent: this.spent.get(key(claim.grant, claim.period)) ?? 0n, held: this.held(claim.grant, claim.period) }
  }
  creditsHeld(): bigint {
    let sum = 0n
    for (const p of this.pending.values()) sum += p.credits
    return sum
  }
  finish(ref: string, charges: ReadonlyArray<GrantHold> | undefined, credits: bigint) {
    this.pending.delete(ref)
    for (const c of charges ?? []) this.spent.set(key(c.grant, c.period), (this.spent.get(key(c.grant, c.period)) ?? 0n) + c.amount)
    this.posted -= credits
  }
}

const runScenario = (s: fc.Scheduler, scenario: Scenario, run: RunOnStore) =>
  run(Effect.gen(function*() {
    const inner = yield* LedgerStore
    const account = yield* generateId("acct")
    const model = new Model(scenario.funds)
    const violations: Array<string> = []
    const expect = (ok: boolean, what: string) => void (ok || violations.push(what))
    const claimsOf = (month: 0 | 1): ReadonlyArray<GrantClaim> => [
      { grant: "allowance:svc", period: MONTHS[month], size: scenario.allowance },
      { grant: "trial:svc", period: "once", size: scenario.trial }
    ]
    const sizeOf = (grant: string) => grant.startsWith("trial:") ? scenario.trial : scenario.allowance

    if (scenario.funds > 0n) {
      yield* inner.post({
        id: yield* generateId("led"),
        account_id: account,
        machine_id: null,
        amount: scenario.funds,
        type: "credit_added",
        ref: yield* generateId("order"),
        created_at: y1985(0)
      })
    }

    /** Invariants 1-4, read from the store with nothing else running. */
    const check = (label: string) =>
      Effect.gen(function*() {
        const [balances, entries, pending, grants] = yield* Effect.all([
          inner.balances(account),
          inner.entries(account),
          inner.pending(account),
          inner.grants(account)
        ])
        for (const problem of auditAccount({ balances, entries, pending })) violations.push(`${label}: ${problem}`)
        for (const g of grants) {
          expect(g.spent >= 0n && g.held >= 0n, `${label}: ${key(g.grant, g.period)} below zero`)
          expect(g.spent + g.held <= sizeOf(g.grant), `${label}: ${key(g.grant, g.period)} spent ${g.spent} + held ${g.held} past ${sizeOf(g.grant)}`)
          expect(
            g.grant.startsWith("trial:") ? g.period === "once" : (MONTHS as ReadonlyArray<string>).includes(g.period),
            `${label}: ${key(g.grant, g.period)}: a period no call claimed`
          )
          const listed = pending.flatMap((r) => r.grants ?? []).filter((h) => h.grant === g.grant && h.period === g.period)
          expect(g.held === listed.reduce((n, h) => n + h.amount, 0n), `${label}: ${key(g.grant, g.period)} held ${g.held}, its pending holds differ`)
        }
        const want = [...new Set([...model.spent.keys(), ...[...model.pending.values()].flatMap((p) => p.holds.map((h) => key(h.grant, h.period)))])]
          .map((k) => {
            const [grant, period] = k.split(" ") as [string, string]
            return model.state({ grant, period, size: 0n })
          })
          .filter((g) => g.spent !== 0n || g.held !== 0n)
          .sort((a, b) => a.grant < b.grant ? -1 : a.grant > b.grant ? 1 : a.period < b.period ? -1 : a.period > b.period ? 1 : 0)
        expect(json(grants) === json(want), `${label}: grants ${json(grants)}, the model says ${json(want)}`)
        const wide = balances.find((b) => b.machine_id === null) ?? { posted: 0n, held: 0n }
        expect(wide.posted === model.posted && wide.held === model.creditsHeld(), `${label}: balance ${wide.posted}/${wide.held}`)
      })

    const gate = schedulerGate(s, check)

    const gated = gatedLedger(inner, gate, {
      reads: ["balances", "grants"],
      reserve: (r) => {
        const credits = reservedAmount(r.allocations)
        const fits = (r.grants ?? []).every((h) => {
          const g = model.state({ grant: h.grant, period: h.period, size: h.size })
          return g.spent + g.held + h.amount <= h.size
        }) && (credits === 0n || model.posted - model.creditsHeld() >= credits)
        return (result) => {
          expect(result === (fits ? "reserved" : "insufficient"), `reserve ${r.ref}: ${result}, the model says ${fits}`)
          if (result === "reserved") {
            const holds = (r.grants ?? []).map(({ amount, grant, period }) => ({ grant, period, amount }))
            model.pending.set(r.ref, { holds, credits: reservedAmount(r.allocations), expires_at: r.expires_at })
          }
        }
      },
      reserveInOrder: (r) => {
        const sources = (r.grants ?? []).map((c) => ({ ...c, available: grantAvailable(c, model.state(c)) }))
        const { holds, rest } = takeGrants(sources, r.amount)
        const fits = rest === 0n || model.posted - model.creditsHeld() >= rest
        return (result) => {
          expect(result._tag === (fits ? "reserved" : "insufficient"), `reserveInOrder ${r.ref}: ${result._tag}`)
          if (result._tag === "reserved") {
            expect(json(result.grants ?? []) === json(holds), `reserveInOrder ${r.ref}: holds ${json(result.grants)}, the model says ${json(holds)}`)
            model.pending.set(r.ref, { holds: result.grants ?? [], credits: reservedAmount(result.allocations), expires_at: r.expires_at })
          }
        }
      },
      settle: (st) => (result) => {
        expect(result === (model.pending.has(st.ref) ? "settled" : "not_pending"), `settle ${st.ref}: ${result}`)
        if (result === "settled") model.finish(st.ref, st.grants, st.charged)
      },
      void: (ref) => (result) => {
        expect(result === (model.pending.has(ref) ? "voided" : "not_pending"), `void ${ref}: ${result}`)
        if (result === "voided") model.finish(ref, undefined, 0n)
      },
      expire: (now) => (refs) => {
        for (const ref of refs) if (model.pending.has(ref)) model.finish(ref, undefined, 0n)
        const late = [...model.pending].filter(([, p]) => p.expires_at <= now).map(([ref]) => ref)
        expect(late.length === 0, `expire ${now}: left ${late} pending`)
      }
    })
    const reserve = reserveOrdered(gated)

    const calls = scenario.calls.map((call, i) =>
      Effect.gen(function*() {
        const ref = yield* generateId("usage")
        model.refs.add(ref)
        const expiresAt = y1985(1_000 * (i + 1))
        const result = yield* reserve({
          ref,
          account_id: account,
          machine_id: null,
          scopes: [null],
          amount: call.amount,
          created_at: y1985(0),
          expires_at: expiresAt,
          grants: claimsOf(call.month)
        })
        if (result._tag !== "reserved") return
        const { outcome } = call
        if (outcome.kind === "settle") {
          const actual = (call.amount * BigInt(outcome.permille)) / 1000n + outcome.extra
          const reserved = { account_id: account, allocations: result.allocations, grants: result.grants ?? [] }
          yield* gated.settle(yield* settlementOf(ref, actual, reserved))
        } else if (outcome.kind === "void") yield* gated.void(ref, y1985(500))
        else if (outcome.kind === "expire") yield* gated.expire(expiresAt)
      }))
    yield* Effect.all(calls, { concurrency: "unbounded" })

    // Abandoned calls never come back: their expiry releases them. Then nothing is held.
    const left = yield* inner.expire(y1985(86_400_000))
    for (const ref of left) if (model.pending.has(ref)) model.finish(ref, undefined, 0n)
    yield* check("the end")
    for (const g of yield* inner.grants(account)) expect(g.held === 0n, `the end: ${key(g.grant, g.period)} holds ${g.held}`)
    return violations
  }))

/** Declares the property on the contract's store; `numRuns` scenarios (fewer on a slow store). */
export const grantProperty = (it: Vitest.MethodsNonLive<LedgerStore>, numRuns: number) =>
  schedulerProperty(
    it,
    "property: any interleaving of calls keeps every allowance and trial within its size, month by month (fc.scheduler)",
    scenarioArb,
    runScenario,
    numRuns
  )
