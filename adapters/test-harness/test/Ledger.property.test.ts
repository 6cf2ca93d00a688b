/**
 * Property tests of the money invariants (docs/architecture.md "Money") on the in-memory ledger store, through the
 * Ledger service:
 *   1. conservation: posted balances = credits added - credits charged; posted = sum of entries
 *      and held = sum of pending allocations, per scope, after any sequence of operations;
 *   2. idempotency: replaying any credit ref, settle or void leaves every balance unchanged;
 *   3. no overspend: under any interleaving of concurrent calls (fast-check's scheduler decides
 *      the order of every store operation) no scope's available goes below zero, except the
 *      account-wide scope by the excess that settlements recorded;
 *   4. scope: credits pinned to machine M are only spent by calls on M;
 *   5. money arithmetic: micro-credits <-> JSON credits round-trip exactly, and the JSON balance
 *      is the exact sum converted once.
 * The pure rules (allocation, settlement charges) have their own properties, and the service's
 * answers are checked against a model of what they must be.
 */
import fc from "fast-check"
import { Effect, Layer, Schema } from "effect"
import { TestClock } from "effect/testing"
import { describe, expect, it } from "vitest"
import {
  ActivityList,
  allocate,
  type Allocation,
  auditAccount,
  CreditBalance,
  type CreditEntryType,
  Ledger,
  type LedgerEntry,
  LedgerStore,
  type ReservationStatus,
  scopeKey,
  settlementCharges,
  type Source,
  totals
} from "@model-platform/core/ledger"
import { creditsToMicro, MICRO_PER_CREDIT, microToCredits, toTimestamp } from "@model-platform/core/kernel"
import {
  actualCost,
  concurrentScenarioArb,
  jsonSafeMicroArb,
  type LedgerOp,
  ledgerOpsArb,
  MACHINES,
  microArb,
  scopeArb,
  TICK_MS
} from "../src/Arbitraries.ts"
import { LedgerStoreMemory } from "@model-platform/memory-stores/MemoryLedgerStore"

const ACCOUNT = "acct_property"
const OTHER_ACCOUNT = "acct_bystander"

const sumOf = (xs: Iterable<bigint>) => {
  let sum = 0n
  for (const x of xs) sum += x
  return sum
}
const max0 = (x: bigint) => x > 0n ? x : 0n
const addTo = (map: Map<string, bigint>, machineId: string | null, amount: bigint) =>
  map.set(scopeKey(machineId), (map.get(scopeKey(machineId)) ?? 0n) + amount)

/** A fresh memory store, the Ledger on it, and a TestClock (starting at 0). */
const freshLedger = () => Ledger.layer.pipe(Layer.provideMerge(LedgerStoreMemory), Layer.provideMerge(TestClock.layer()))

const run = <A, E>(effect: Effect.Effect<A, E, Ledger | LedgerStore | TestClock.TestClock>) =>
  Effect.runPromise(effect.pipe(Effect.provide(freshLedger())))

// ---------------------------------------------------------------------------------------------
// the sequential model

interface ModelReservation {
  readonly ref: string
  readonly machine_id: string | null
  readonly amount: bigint
  readonly expires_ms: number
  status: ReservationStatus
}

interface Model {
  /** Credit refs posted, with what the first post carried. */
  readonly credited: Map<string, { readonly machine_id: string | null; readonly amount: bigint }>
  readonly added: Map<string, bigint>
  readonly charged: Map<string, bigint>
  excess: bigint
  readonly reservations: Array<ModelReservation>
  /** Usage entries by the machine of the call that was charged. */
  readonly usage: Array<{ readonly call_machine: string | null; readonly entry: LedgerEntry }>
  now: number
}

const emptyModel = (): Model => ({
  credited: new Map(),
  added: new Map(),
  charged: new Map(),
  excess: 0n,
  reservations: [],
  usage: [],
  now: 0
})

/** Everything the store shows about the account and every reservation the model knows. */
const snapshot = (model: Model) =>
  Effect.gen(function*() {
    const store = yield* LedgerStore
    return {
      balances: yield* store.balances(ACCOUNT),
      entries: yield* store.entries(ACCOUNT),
      reservations: yield* Effect.forEach(model.reservations, (r) => store.reservation(r.ref)),
      bystander: yield* store.balances(OTHER_ACCOUNT)
    }
  })

/** Applies one operation through the Ledger and checks its answer against the model. */
const step = (model: Model, op: LedgerOp) =>
  Effect.gen(function*() {
    const ledger = yield* Ledger
    const store = yield* LedgerStore
    switch (op._tag) {
      case "Credit": {
        const result = yield* ledger.credit(ACCOUNT, op)
        if (model.credited.has(op.ref)) {
          expect(result._tag).toBe("Duplicate")
        } else {
          expect(result._tag).toBe("Posted")
          model.credited.set(op.ref, { machine_id: op.machine_id, amount: op.amount })
          addTo(model.added, op.machine_id, op.amount)
        }
        return
      }
      case "Reserve": {
        // The oracle: a call on M may use M's pinned credits, then account-wide credits, nothing else.
        const balances = yield* store.balances(ACCOUNT)
        const avail = (machineId: string | null) => {
          const b = balances.find((x) => x.machine_id === machineId)
          return b === undefined ? 0n : max0(b.posted - b.held)
        }
        const pinned = op.machine_id === null ? 0n : avail(op.machine_id)
        const accountWide = avail(null)
        const expiresMs = model.now + op.ttl * TICK_MS
        const result = yield* ledger.reserve(ACCOUNT, op.machine_id, op.amount, toTimestamp(expiresMs))
        if (pinned + accountWide < op.amount) {
          expect(result).toEqual({ _tag: "Insufficient", available: pinned + accountWide })
          return
        }
        expect(result._tag).toBe("Reserved")
        if (result._tag !== "Reserved") return
        const fromPinned = pinned < op.amount ? pinned : op.amount
        const expected: Array<Allocation> = []
        if (fromPinned > 0n) expected.push({ machine_id: op.machine_id, amount: fromPinned })
        if (op.amount - fromPinned > 0n) expected.push({ machine_id: null, amount: op.amount - fromPinned })
        expect(result.allocations).toEqual(expected)
        model.reservations.push({
          ref: result.ref,
          machine_id: op.machine_id,
          amount: op.amount,
          expires_ms: expiresMs,
          status: "pending"
        })
        return
      }
      case "Settle": {
        const r = model.reservations[op.slot % Math.max(1, model.reservations.length)]
        if (r === undefined) return
        const actual = actualCost(r.amount, op.actual)
        const result = yield* ledger.settle(r.ref, actual)
        if (r.status !== "pending") {
          expect(result).toEqual({ _tag: "NotPending", status: r.status })
          return
        }
        expect(result._tag).toBe("Settled")
        if (result._tag !== "Settled") return
        expect(result.charged).toBe(actual)
        expect(result.excess).toBe(max0(actual - r.amount))
        expect(sumOf(result.entries.map((e) => -e.amount))).toBe(actual)
        r.status = "settled"
        model.excess += result.excess
        for (const entry of result.entries) {
          addTo(model.charged, entry.machine_id, -entry.amount)
          model.usage.push({ call_machine: r.machine_id, entry })
        }
        return
      }
      case "Void": {
        const r = model.reservations[op.slot % Math.max(1, model.reservations.length)]
        if (r === undefined) return
        const result = yield* ledger.void(r.ref)
        if (r.status !== "pending") {
          expect(result).toEqual({ _tag: "NotPending", status: r.status })
        } else {
          expect(result).toEqual({ _tag: "Voided" })
          r.status = "voided"
        }
        return
      }
      case "Expire": {
        yield* TestClock.adjust(op.ticks * TICK_MS)
        model.now += op.ticks * TICK_MS
        const expired = yield* ledger.expireDue
        const due = model.reservations.filter((r) => r.status === "pending" && r.expires_ms <= model.now)
        expect([...expired].sort()).toEqual(due.map((r) => r.ref).sort())
        for (const r of due) r.status = "expired"
        return
      }
      case "Replay": {
        const before = yield* snapshot(model)
        const finished = model.reservations.filter((r) => r.status !== "pending")
        const credited = [...model.credited.keys()]
        if (op.slot % 2 === 0 && finished.length > 0) {
          const r = finished[op.slot % finished.length]!
          const settled = yield* ledger.settle(r.ref, actualCost(r.amount, op.actual))
          const voided = yield* ledger.void(r.ref)
          expect(settled).toEqual({ _tag: "NotPending", status: r.status })
          expect(voided).toEqual({ _tag: "NotPending", status: r.status })
        } else if (credited.length > 0) {
          const ref = credited[op.slot % credited.length]!
          const type: CreditEntryType = op.slot % 3 === 0 ? "plan_credit_granted" : "credit_added"
          const machine = op.slot % 4 === 0 ? null : MACHINES[op.slot % MACHINES.length]!
          const result = yield* ledger.credit(ACCOUNT, { ref, machine_id: machine, amount: op.amount, type })
          expect(result._tag).toBe("Duplicate")
        }
        expect(yield* snapshot(model)).toEqual(before)
        return
      }
    }
  })

/** The invariants that must hold after any sequence (1, 4, 5). */
const checkInvariants = (model: Model) =>
  Effect.gen(function*() {
    const ledger = yield* Ledger
    const store = yield* LedgerStore
    const balances = yield* store.balances(ACCOUNT)
    const entries = yield* store.entries(ACCOUNT)
    const pending = yield* store.pending(ACCOUNT)

    // 1. Conservation: the sum of posted balances is credits added minus credits charged, in total
    //    and per scope, and the cached sums equal the entries and pending allocations.
    const added = sumOf(model.added.values())
    const charged = sumOf(model.charged.values())
    expect(sumOf(balances.map((b) => b.posted))).toBe(added - charged)
    expect(totals(entries)).toEqual({ added, charged })
    for (const b of balances) {
      const key = scopeKey(b.machine_id)
      expect(b.posted).toBe((model.added.get(key) ?? 0n) - (model.charged.get(key) ?? 0n))
    }
    expect(auditAccount({ balances, entries, pending })).toEqual([])
    expect(yield* ledger.audit(ACCOUNT)).toEqual([])
    expect(pending.map((r) => r.ref).sort()).toEqual(
      model.reservations.filter((r) => r.status === "pending").map((r) => r.ref).sort()
    )
    // Only the account-wide scope may go below zero, and by no more than the recorded excess.
    for (const b of balances) {
      if (b.machine_id === null) expect(b.posted - b.held >= -model.excess).toBe(true)
      else expect(b.posted - b.held >= 0n).toBe(true)
    }

    // 4. Scope: a usage entry pinned to M was charged to a call on M; pending holds likewise.
    for (const { call_machine, entry } of model.usage) {
      if (entry.machine_id !== null) expect(entry.machine_id).toBe(call_machine)
    }
    for (const r of pending) {
      for (const a of r.allocations) if (a.machine_id !== null) expect(a.machine_id).toBe(r.machine_id)
    }

    // 5. The JSON balance is exact: each scope's credits and the total convert back to the micros.
    const shown = yield* ledger.balance(ACCOUNT)
    Schema.decodeUnknownSync(CreditBalance)(shown)
    const available = balances.map((b) => b.posted - b.held)
    expect(creditsToMicro(shown.total_credits)).toBe(sumOf(available))
    for (const scope of shown.by_scope) {
      const b = balances.find((x) => x.machine_id === scope.machine_id)
      expect(creditsToMicro(scope.credits)).toBe(b === undefined ? 0n : b.posted - b.held)
    }
    // The activity feed adds up to the posted balances.
    const activity = yield* ledger.activity(ACCOUNT, 500)
    Schema.decodeUnknownSync(ActivityList)(activity)
    if (entries.length <= 500) {
      expect(sumOf(activity.data.map((a) => creditsToMicro(a.credits)!))).toBe(added - charged)
    }
  })

/** A bystander account with credits in every scope: nothing done to ACCOUNT may touch it. */
const seedBystander = Effect.gen(function*() {
  const ledger = yield* Ledger
  for (const machine of [null, ...MACHINES]) {
    const ref = `seed-${machine ?? "account"}`
    yield* ledger.credit(OTHER_ACCOUNT, { ref, machine_id: machine, amount: 7n * MICRO_PER_CREDIT, type: "credit_added" })
  }
  return yield* (yield* LedgerStore).balances(OTHER_ACCOUNT)
})

const runSequence = (ops: ReadonlyArray<LedgerOp>) =>
  Effect.gen(function*() {
    const bystander = yield* seedBystander
    const model = emptyModel()
    for (const op of ops) yield* step(model, op)
    yield* checkInvariants(model)
    expect(yield* (yield* LedgerStore).balances(OTHER_ACCOUNT)).toEqual(bystander)
    return model
  })

// ---------------------------------------------------------------------------------------------

describe("ledger rules (pure)", () => {
  const sourcesArb = fc.uniqueArray(
    fc.record({ machine_id: scopeArb, available: fc.bigInt({ min: -5_000_000n, max: 30_000_000n }) }),
    { selector: (s) => scopeKey(s.machine_id), maxLength: 4 }
  )

  it("allocate takes sources in order, never more than they have, all or insufficient", () => {
    fc.assert(
      fc.property(sourcesArb, fc.bigInt({ min: 0n, max: 80_000_000n }), (sources: ReadonlyArray<Source>, amount) => {
        const positive = sumOf(sources.map((s) => max0(s.available)))
        const result = allocate(sources, amount)
        if (positive < amount) {
          expect(result).toEqual({ _tag: "Insufficient", available: positive })
          return
        }
        expect(result._tag).toBe("Allocated")
        if (result._tag !== "Allocated") return
        expect(sumOf(result.allocations.map((a) => a.amount))).toBe(amount)
        // In source order, only positive amounts, each within its source, and a source is used
        // only when every earlier source with credits was used up.
        let remaining = amount
        const expected: Array<Allocation> = []
        for (const s of sources) {
          const take = remaining < max0(s.available) ? remaining : max0(s.available)
          if (take > 0n) expected.push({ machine_id: s.machine_id, amount: take })
          remaining -= take
        }
        expect(result.allocations).toEqual(expected)
      }),
      { numRuns: 500 }
    )
  })

  it("settlement charges the allocations in order, and any excess account-wide", () => {
    const allocationsArb = fc.uniqueArray(fc.record({ machine_id: scopeArb, amount: microArb(20) }), {
      selector: (a) => scopeKey(a.machine_id),
      maxLength: 3
    })
    fc.assert(
      fc.property(allocationsArb, fc.bigInt({ min: 0n, max: 80_000_000n }), (allocations, actual) => {
        const reserved = sumOf(allocations.map((a) => a.amount))
        const { charges, excess } = settlementCharges([], allocations, actual)
        expect(excess).toBe(max0(actual - reserved))
        expect(sumOf(charges.map((c) => c.amount))).toBe(actual)
        expect(new Set(charges.map((c) => scopeKey(c.machine_id))).size).toBe(charges.length)
        for (const charge of charges) {
          expect(charge.amount > 0n).toBe(true)
          const allocated = allocations.find((a) => a.machine_id === charge.machine_id)?.amount ?? 0n
          // Only the account-wide charge may exceed what was allocated, by the excess.
          expect(charge.amount <= allocated + (charge.machine_id === null ? excess : 0n)).toBe(true)
        }
        // Pinned charges: a later allocation is charged only when the earlier ones are charged in full.
        let short = false
        for (const a of allocations) {
          const charged = charges.find((c) => c.machine_id === a.machine_id)?.amount ?? 0n
          if (short && a.machine_id !== null) expect(charged).toBe(0n)
          if (charged < a.amount) short = true
        }
      }),
      { numRuns: 500 }
    )
  })
})

describe("ledger invariants (property, memory store)", () => {
  it("1 & 4 & 5: conservation, scope and exact balances hold after any sequence of operations", async () => {
    await fc.assert(
      fc.asyncProperty(ledgerOpsArb(60), (ops) => run(Effect.asVoid(runSequence(ops)))),
      { numRuns: 300 }
    )
  })

  it("2: replaying every credit ref, settle, void and expiry leaves every balance unchanged", async () => {
    await fc.assert(
      fc.asyncProperty(
        ledgerOpsArb(40),
        fc.array(fc.tuple(microArb(50), scopeArb), { minLength: 1, maxLength: 5 }),
        fc.bigInt({ min: 0n, max: 50_000_000n }),
        (ops, variants, actual) =>
          run(Effect.gen(function*() {
            const ledger = yield* Ledger
            const model = yield* runSequence(ops)
            const before = yield* snapshot(model)
            // Payment completions and grants again, with whatever amounts and scopes.
            for (const ref of model.credited.keys()) {
              for (const [amount, machine] of variants) {
                expect((yield* ledger.credit(ACCOUNT, { ref, machine_id: machine, amount, type: "credit_added" }))._tag)
                  .toBe("Duplicate")
              }
            }
            // Usage records again: every finished reservation settled and voided once more.
            for (const r of model.reservations.filter((r) => r.status !== "pending")) {
              expect(yield* ledger.settle(r.ref, actual)).toEqual({ _tag: "NotPending", status: r.status })
              expect(yield* ledger.void(r.ref)).toEqual({ _tag: "NotPending", status: r.status })
            }
            // Expiry again at the same instant.
            const due = model.reservations.filter((r) => r.status === "pending" && r.expires_ms <= model.now)
            expect(due).toEqual([])
            expect(yield* ledger.expireDue).toEqual([])
            expect(yield* snapshot(model)).toEqual(before)
            yield* checkInvariants(model)
          }))
      ),
      { numRuns: 200 }
    )
  })

  it("3 & 4: no interleaving of concurrent calls overspends a scope (fc.scheduler)", async () => {
    const NEVER = toTimestamp(Date.UTC(2100, 0, 1))
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), concurrentScenarioArb, async (s, scenario) => {
        const violations: Array<string> = []
        // Upper bound of the excess recorded so far: raised before a settlement is applied and
        // lowered if it was not, so a check between the two never underestimates it.
        let excessBound = 0n

        const program = Effect.gen(function*() {
          const inner = yield* LedgerStore

          const check = Effect.gen(function*() {
            const balances = yield* inner.balances(ACCOUNT)
            const problems = auditAccount({
              balances,
              entries: yield* inner.entries(ACCOUNT),
              pending: yield* inner.pending(ACCOUNT)
            })
            violations.push(...problems)
            for (const b of balances) {
              const floor = b.machine_id === null ? -excessBound : 0n
              if (b.posted - b.held < floor) {
                violations.push(`${b.machine_id ?? "account-wide"}: available ${b.posted - b.held} < ${floor}`)
              }
            }
          })
          // Every store operation waits for the scheduler, then runs, then the invariants are checked.
          const gate = (label: string) => Effect.promise(() => s.schedule(Promise.resolve(label), label))
          const scheduled = <A>(label: string, op: Effect.Effect<A>) =>
            gate(label).pipe(Effect.andThen(op), Effect.tap(() => check))
          const store = LedgerStore.of({
            post: (e) => scheduled(`post ${e.ref}`, inner.post(e)),
            balances: (a) => scheduled("balances", inner.balances(a)),
            entries: (a, l) => scheduled("entries", inner.entries(a, l)),
            creditTotals: (a) => scheduled("creditTotals", inner.creditTotals(a)),
            reserve: (r) => scheduled(`reserve ${r.ref}`, inner.reserve(r)),
            reservation: (ref) => scheduled(`reservation ${ref}`, inner.reservation(ref)),
            pending: (a) => scheduled("pending", inner.pending(a)),
            settle: (st) =>
              scheduled(
                `settle ${st.ref}`,
                Effect.sync(() => {
                  excessBound += st.excess
                }).pipe(
                  Effect.andThen(inner.settle(st)),
                  Effect.tap((result) =>
                    Effect.sync(() => {
                      if (result === "not_pending") excessBound -= st.excess
                    })
                  )
                )
              ),
            void: (ref, at) => scheduled(`void ${ref}`, inner.void(ref, at)),
            expire: (now) => scheduled("expire", inner.expire(now)),
            setBudgetLimit: (a, budget, limit) => scheduled(`limit ${budget}`, inner.setBudgetLimit(a, budget, limit)),
            budgets: (a, month) => scheduled(`budgets ${month}`, inner.budgets(a, month)),
            grants: (a) => scheduled("grants", inner.grants(a))
          })

          const calls = Effect.gen(function*() {
            const ledger = yield* Ledger
            for (const [i, fund] of scenario.funds.entries()) {
              yield* ledger.credit(ACCOUNT, { ref: `fund_${i}`, machine_id: fund.machine_id, amount: fund.amount, type: "credit_added" })
            }
            return yield* Effect.all(
              scenario.calls.map((call) =>
                Effect.gen(function*() {
                  const reserved = yield* ledger.reserve(ACCOUNT, call.machine_id, call.amount, NEVER)
                  if (reserved._tag !== "Reserved") return { call, reserved, outcomes: [] as const }
                  const actual = call.outcome.kind === "settle" || call.outcome.kind === "race"
                    ? actualCost(call.amount, call.outcome.actual)
                    : 0n
                  const outcomes = call.outcome.kind === "settle"
                    ? [yield* ledger.settle(reserved.ref, actual)]
                    : call.outcome.kind === "void"
                    ? [yield* ledger.void(reserved.ref)]
                    : call.outcome.kind === "race"
                    ? yield* Effect.all([ledger.settle(reserved.ref, actual), ledger.void(reserved.ref)], {
                      concurrency: "unbounded"
                    })
                    : []
                  return { call, reserved, outcomes }
                })
              ),
              { concurrency: "unbounded" }
            )
          }).pipe(Effect.provide(Ledger.layer.pipe(Layer.provide(Layer.succeed(LedgerStore, store)))))

          const results = yield* calls
          yield* check
          // Abandoned calls never come back: expiry releases them.
          yield* inner.expire(toTimestamp(Date.UTC(2200, 0, 1)))
          const balances = yield* inner.balances(ACCOUNT)
          const entries = yield* inner.entries(ACCOUNT)
          return { results, balances, entries }
        }).pipe(Effect.provide(LedgerStoreMemory))

        const { results, balances, entries } = await s.waitFor(Effect.runPromise(program))

        expect(violations).toEqual([])
        // Races: exactly one of settle and void won.
        for (const { call, outcomes } of results) {
          if (call.outcome.kind === "race" && outcomes.length === 2) {
            expect(outcomes.filter((o) => o._tag === "Settled" || o._tag === "Voided").length).toBe(1)
          }
        }
        // Nothing is held any more, and conservation holds: funds - charged = posted.
        const funded = sumOf(scenario.funds.map((f) => f.amount))
        let charged = 0n
        let excess = 0n
        const callMachine = new Map<string, string | null>()
        for (const { call, reserved, outcomes } of results) {
          if (reserved._tag === "Reserved") callMachine.set(reserved.ref, call.machine_id)
          for (const o of outcomes) {
            if (o._tag === "Settled") {
              charged += o.charged
              excess += o.excess
            }
          }
        }
        for (const b of balances) expect(b.held).toBe(0n)
        expect(sumOf(balances.map((b) => b.posted))).toBe(funded - charged)
        expect(excess).toBe(excessBound)
        // 4. Pinned usage only on its machine: a usage entry's ref names the reservation.
        for (const entry of entries.filter((e) => e.type === "usage" && e.machine_id !== null)) {
          const ref = entry.ref.slice(0, entry.ref.lastIndexOf("@"))
          expect(callMachine.get(ref)).toBe(entry.machine_id)
        }
      }),
      { numRuns: 200 }
    )
  })
})

describe("money arithmetic (property)", () => {
  it("5: micro-credits -> JSON credits -> micro-credits is exact below 10^9 credits", () => {
    fc.assert(
      fc.property(jsonSafeMicroArb, (micro) => {
        expect(creditsToMicro(microToCredits(micro))).toBe(micro)
        // And what JSON carries parses back to the same number.
        expect(creditsToMicro(JSON.parse(JSON.stringify(microToCredits(micro))))).toBe(micro)
      }),
      { numRuns: 5_000 }
    )
  })

  it("5: a decimal with at most 6 places converts to exactly its micro-credits", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 999_999_999n }), fc.bigInt({ min: 0n, max: 999_999n }), fc.boolean(), (whole, frac, negative) => {
        const micro = (whole * MICRO_PER_CREDIT + frac) * (negative ? -1n : 1n)
        // (-0 is not a credit amount anyone writes; JSON has no use for it.)
        const text = `${negative && micro !== 0n ? "-" : ""}${whole}.${frac.toString().padStart(6, "0")}`
        expect(creditsToMicro(Number(text))).toBe(micro)
        expect(microToCredits(micro)).toBe(Number(text))
      }),
      { numRuns: 5_000 }
    )
  })

  it("5: sums are exact in micro-credits, converted once (no micro-credit lost to floats)", () => {
    fc.assert(
      fc.property(fc.array(fc.bigInt({ min: 1n, max: 10n ** 12n }), { maxLength: 50 }), (parts) => {
        const total = sumOf(parts)
        expect(creditsToMicro(microToCredits(total))).toBe(total)
        // Converting each part and going back loses nothing either.
        expect(sumOf(parts.map((p) => creditsToMicro(microToCredits(p))!))).toBe(total)
      }),
      { numRuns: 2_000 }
    )
  })

  it("credits with more than 6 decimals are refused rather than rounded", () => {
    for (const n of [1e-7, 0.1234567, 1.0000001, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(creditsToMicro(n)).toBeUndefined()
    }
  })
})

describe("Ledger service (examples)", () => {
  it("balance lists account-wide first (also when empty) and shows available credits", async () => {
    const shown = await run(Effect.gen(function*() {
      const ledger = yield* Ledger
      const empty = yield* ledger.balance("acct_empty")
      expect(empty).toEqual({ total_credits: 0, by_scope: [{ machine_id: null, credits: 0 }] })
      yield* ledger.credit(ACCOUNT, { ref: "o1", machine_id: "m_b", amount: 2_500_000n, type: "credit_added" })
      yield* ledger.credit(ACCOUNT, { ref: "o2", machine_id: "m_a", amount: 1n, type: "credit_added" })
      const reserved = yield* ledger.reserve(ACCOUNT, "m_b", 1_000_000n, toTimestamp(60_000))
      expect(reserved._tag).toBe("Reserved")
      return yield* ledger.balance(ACCOUNT)
    }))
    expect(shown).toEqual({
      total_credits: 1.500001,
      by_scope: [
        { machine_id: null, credits: 0 },
        { machine_id: "m_a", credits: 0.000001 },
        { machine_id: "m_b", credits: 1.5 }
      ]
    })
  })

  it("a call spends pinned credits first, then account-wide; excess goes account-wide below zero", async () => {
    await run(Effect.gen(function*() {
      const ledger = yield* Ledger
      yield* ledger.credit(ACCOUNT, { ref: "o1", machine_id: "m_a", amount: 3_000_000n, type: "credit_added" })
      yield* ledger.credit(ACCOUNT, { ref: "o2", machine_id: null, amount: 5_000_000n, type: "plan_credit_granted" })
      // A call on m_b cannot use m_a's credits.
      expect(yield* ledger.reserve(ACCOUNT, "m_b", 6_000_000n, toTimestamp(60_000))).toEqual({
        _tag: "Insufficient",
        available: 5_000_000n
      })
      const r = yield* ledger.reserve(ACCOUNT, "m_a", 4_000_000n, toTimestamp(60_000))
      expect(r).toMatchObject({
        _tag: "Reserved",
        allocations: [{ machine_id: "m_a", amount: 3_000_000n }, { machine_id: null, amount: 1_000_000n }]
      })
      if (r._tag !== "Reserved") return
      const settled = yield* ledger.settle(r.ref, 10_000_000n)
      expect(settled).toMatchObject({ _tag: "Settled", charged: 10_000_000n, excess: 6_000_000n })
      expect(yield* ledger.balance(ACCOUNT)).toEqual({
        total_credits: -2,
        by_scope: [{ machine_id: null, credits: -2 }, { machine_id: "m_a", credits: 0 }]
      })
      expect(yield* ledger.settle(r.ref, 1n)).toEqual({ _tag: "NotPending", status: "settled" })
      expect(yield* ledger.void(r.ref)).toEqual({ _tag: "NotPending", status: "settled" })
      expect(yield* ledger.settle("usage_unknown", 1n)).toEqual({ _tag: "Unknown" })
      expect(yield* ledger.void("usage_unknown")).toEqual({ _tag: "Unknown" })
      // No further reservation while the account-wide balance is negative.
      expect((yield* ledger.reserve(ACCOUNT, null, 1n, toTimestamp(60_000)))._tag).toBe("Insufficient")
      const activity = yield* ledger.activity(ACCOUNT)
      // Newest first; entries of one instant: the last written first.
      expect(activity.data.map((a) => [a.type, a.credits, a.machine_id])).toEqual([
        ["usage", -7, null],
        ["usage", -3, "m_a"],
        ["plan_credit_granted", 5, null],
        ["credit_added", 3, "m_a"]
      ])
    }))
  })

  it("activity: newest first, limit 1 to 500 (default 50), anything else is 400 invalid_request", async () => {
    await run(Effect.gen(function*() {
      const ledger = yield* Ledger
      for (let i = 0; i < 60; i++) {
        yield* ledger.credit(ACCOUNT, { ref: `o${i}`, machine_id: null, amount: BigInt(i + 1), type: "credit_added" })
        yield* TestClock.adjust(1_000)
      }
      const page = yield* ledger.activity(ACCOUNT)
      expect(page.data.length).toBe(50)
      expect(page.data[0]).toMatchObject({ type: "credit_added", credits: 0.00006, machine_id: null, at: toTimestamp(59_000) })
      expect((yield* ledger.activity(ACCOUNT, 1)).data.length).toBe(1)
      expect((yield* ledger.activity(ACCOUNT, 500)).data.length).toBe(60)
      for (const bad of [0, 501, -1, 2.5, Number.NaN]) {
        const error = yield* Effect.flip(ledger.activity(ACCOUNT, bad))
        expect(error.reason).toBe("invalid_limit")
        expect(error.message).toContain("limit must be an integer from 1 to 500")
      }
    }))
  })

  it("reservations expire at expires_at by the clock, and a late settle charges nothing", async () => {
    await run(Effect.gen(function*() {
      const ledger = yield* Ledger
      yield* ledger.credit(ACCOUNT, { ref: "o1", machine_id: null, amount: 5_000_000n, type: "credit_added" })
      const r = yield* ledger.reserve(ACCOUNT, null, 5_000_000n, toTimestamp(60_000))
      if (r._tag !== "Reserved") throw new Error("expected a reservation")
      expect((yield* ledger.balance(ACCOUNT)).total_credits).toBe(0)
      yield* TestClock.adjust(59_999)
      expect(yield* ledger.expireDue).toEqual([])
      yield* TestClock.adjust(1)
      expect(yield* ledger.expireDue).toEqual([r.ref])
      expect((yield* ledger.balance(ACCOUNT)).total_credits).toBe(5)
      expect(yield* ledger.settle(r.ref, 1_000_000n)).toEqual({ _tag: "NotPending", status: "expired" })
      expect((yield* ledger.balance(ACCOUNT)).total_credits).toBe(5)
    }))
  })
})
