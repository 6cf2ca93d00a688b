/**
 * What the interleaving properties share (BudgetProperty.ts, GrantProperty.ts): fast-check's
 * scheduler choosing the order of a scenario's store operations, each run alone and followed by
 * the property's checks, and the declaration of such a property on a contract's store.
 */
import { assert, type Vitest } from "@effect/vitest"
import fc from "fast-check"
import { Effect } from "effect"
import type { LedgerStore } from "@model-platform/core/ledger"

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
