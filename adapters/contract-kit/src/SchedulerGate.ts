/**
 * What the interleaving properties share (BudgetProperty.ts, GrantProperty.ts, DrawProperty.ts;
 * BillingProperties.ts uses the gate alone): fast-check's scheduler choosing the order of a
 * scenario's store operations, each run alone and followed by the property's checks; the ledger
 * store with its operations so gated, its answers checked by the property's model; and the
 * declaration of such a property on a contract's store.
 */
import { assert, type Vitest } from "@effect/vitest"
import fc from "fast-check"
import { Effect } from "effect"
import { LedgerStore } from "@model-platform/core/ledger"

/**
 * A gate: runs `op` when the scheduler says, alone (the scheduler waits for it to finish before
 * releasing the next), then `after` with its result, then `check(label)`.
 */
export const schedulerGate = (s: fc.Scheduler, check: (label: string) => Effect.Effect<void>) =>
<A>(label: string, op: Effect.Effect<A>, after: (a: A) => void = () => {}): Effect.Effect<A> =>
  Effect.suspend(() => {
    let finished!: () => void
    const done = new Promise<void>((resolve) => (finished = resolve))
    const act = async (release: () => Promise<void>) => {
      await release()
      await done
    }
    return Effect.promise(() => s.schedule(Promise.resolve(label), label, undefined, act)).pipe(
      Effect.andThen(op),
      Effect.tap((a) => Effect.sync(() => after(a))),
      Effect.tap(() => check(label)),
      Effect.ensuring(Effect.sync(() => finished()))
    )
  })

/** A gate as `schedulerGate` makes it. */
export type Gate = ReturnType<typeof schedulerGate>

type Ledger = LedgerStore["Service"]
type Operation = "reserve" | "reserveInOrder" | "settle" | "void" | "expire" | "draw" | "setBudgetLimit"
type Call<K extends Operation> = NonNullable<Ledger[K]>

/**
 * What a property's model does with one gated ledger operation. It is called when the scheduler
 * releases the operation, right before the store runs it, so a prediction made then sees the
 * model as the store does; the function it answers gets the store's answer (to check it, and to
 * bring the model up to date).
 */
export type OnRelease<K extends Operation> = (...input: Parameters<Call<K>>) => (answer: Effect.Success<ReturnType<Call<K>>>) => void

/** The operations a property gates and what its model does with each; the others run ungated. */
export interface GatedOperations {
  /** The reads to gate too: the scheduler may then run others' operations between a read and the write after it. */
  readonly reads: ReadonlyArray<"balances" | "grants" | "budgets">
  readonly reserve: OnRelease<"reserve">
  /** Gated only where the store has it. */
  readonly reserveInOrder: OnRelease<"reserveInOrder">
  readonly void: OnRelease<"void">
  readonly expire: OnRelease<"expire">
  readonly settle?: OnRelease<"settle">
  /** Gated only where the store has it. */
  readonly draw?: OnRelease<"draw">
  readonly setBudgetLimit?: OnRelease<"setBudgetLimit">
}

/** Runs the store's `op` through the gate, `onRelease` when the scheduler releases it, then what that answered. */
const released = <A>(gate: Gate, label: string, onRelease: () => (answer: A) => void, op: () => Effect.Effect<A>) =>
  Effect.suspend(() => {
    let afterwards: (answer: A) => void = () => {}
    return gate(label, Effect.suspend(() => {
      afterwards = onRelease()
      return op()
    }), (answer) => afterwards(answer))
  })

/** `inner` with the operations of `gated` run through `gate` and answered to the property's model. */
export const gatedLedger = (inner: Ledger, gate: Gate, gated: GatedOperations): Ledger => {
  const { draw, reserveInOrder } = inner
  const { settle, setBudgetLimit, draw: onDraw } = gated
  const reads = new Set(gated.reads)
  return LedgerStore.of({
    ...inner,
    ...(reads.has("balances") ? { balances: (a) => gate("balances", inner.balances(a)) } : {}),
    ...(reads.has("grants") ? { grants: (a) => gate("grants", inner.grants(a)) } : {}),
    ...(reads.has("budgets") ? { budgets: (a, month) => gate(`budgets ${month}`, inner.budgets(a, month)) } : {}),
    reserve: (r) => released(gate, `reserve ${r.ref}`, () => gated.reserve(r), () => inner.reserve(r)),
    ...(reserveInOrder === undefined ? {} : {
      reserveInOrder: (r) => released(gate, `reserveInOrder ${r.ref}`, () => gated.reserveInOrder(r), () => reserveInOrder(r))
    }),
    ...(settle === undefined ? {} : {
      settle: (st) => released(gate, `settle ${st.ref}`, () => settle(st), () => inner.settle(st))
    }),
    ...(draw === undefined || onDraw === undefined ? {} : {
      draw: (d) => released(gate, `draw ${d.settlement.ref}`, () => onDraw(d), () => draw(d))
    }),
    void: (ref, at) => released(gate, `void ${ref}`, () => gated.void(ref, at), () => inner.void(ref, at)),
    expire: (now) => released(gate, `expire ${now}`, () => gated.expire(now), () => inner.expire(now)),
    ...(setBudgetLimit === undefined ? {} : {
      setBudgetLimit: (a, budget, limit) =>
        released(gate, `limit ${budget} ${limit}`, () => setBudgetLimit(a, budget, limit), () => inner.setBudgetLimit(a, budget, limit))
    })
  })
}

/** Runs the ledger effects of a scenario on the contract's store. */
export type RunOnStore = <A>(effect: Effect.Effect<A, never, LedgerStore>) => Promise<A>

/**
 * Declares an interleaving property on the contract's store: `numRuns` scenarios from `scenarios`,
 * each run with its own scheduler; it holds when a scenario reports no violations.
 */
export const schedulerProperty = <S>(
  it: Vitest.MethodsNonLive<LedgerStore>,
  name: string,
  scenarios: fc.Arbitrary<S>,
  runScenario: (s: fc.Scheduler, scenario: S, run: RunOnStore) => Promise<ReadonlyArray<string>>,
  numRuns: number
) =>
  it.effect(name, () =>
    Effect.gen(function*() {
      const services = yield* Effect.context<LedgerStore>()
      const run: RunOnStore = (effect) => Effect.runPromiseWith(services)(effect)
      yield* Effect.promise(() =>
        fc.assert(
          fc.asyncProperty(fc.scheduler(), scenarios, async (s, scenario) => {
            const violations = await s.waitFor(runScenario(s, scenario, run))
            assert.deepStrictEqual(violations, [])
          }),
          { numRuns }
        )
      )
    }), 600_000)
