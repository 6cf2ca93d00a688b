/**
 * When the background jobs make their first pass (core/src/kernel/BackgroundJobs.ts): at once on a
 * server (JobsStart unset; the healing of paid orders even before the platform is built), and only
 * once the gate opens where a shell sets one (the Lambda shell: the end of its first invocation).
 */
import { Deferred, Effect, Layer, Ref, type Scope } from "effect"
import { describe, expect, it } from "vitest"
import { JobsStart, onceAtStart, repeatInBackground } from "../../src/kernel/BackgroundJobs.ts"

/** Builds `jobs(passes)` in a scope, runs `during` while it lives, and answers the passes counted. */
const passesWhile = (
  jobs: (passes: Ref.Ref<number>) => Effect.Effect<void, never, Scope.Scope>,
  gate: Effect.Effect<void> | undefined,
  during: (passes: Ref.Ref<number>) => Effect.Effect<void>
) =>
  Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const passes = yield* Ref.make(0)
    const layer = Layer.effectDiscard(jobs(passes))
    yield* Layer.build(gate === undefined ? layer : layer.pipe(Layer.provide(Layer.succeed(JobsStart, gate))))
    yield* during(passes)
    return yield* Ref.get(passes)
  })))

const counting = (passes: Ref.Ref<number>) => Ref.update(passes, (n) => n + 1)
const settle = Effect.sleep("30 millis")

describe("background jobs", () => {
  it("on a server: the first pass at once, then every interval", async () => {
    const seen: Array<number> = []
    await passesWhile((passes) => repeatInBackground(counting(passes), "20 millis"), undefined, (passes) =>
      Effect.gen(function*() {
        yield* settle
        seen.push(yield* Ref.get(passes))
        yield* Effect.sleep("100 millis")
        seen.push(yield* Ref.get(passes))
      }))
    expect(seen[0]).toBeGreaterThanOrEqual(1)
    expect(seen[1]!).toBeGreaterThan(seen[0]!)
  })

  it("on a server: a once-at-start pass has run before the layer is built", async () => {
    const atBuild = await passesWhile((passes) => onceAtStart(counting(passes)), undefined, () => Effect.void)
    expect(atBuild).toBe(1)
  })

  it("behind a gate: no pass of either kind until it opens, then the first at once", async () => {
    const gate = Effect.runSync(Deferred.make<void>())
    const seen: Array<number> = []
    await passesWhile(
      (passes) => Effect.andThen(repeatInBackground(counting(passes), "1 hour"), onceAtStart(counting(passes))),
      Deferred.await(gate),
      (passes) =>
        Effect.gen(function*() {
          yield* Effect.sleep("100 millis")
          seen.push(yield* Ref.get(passes))
          yield* Deferred.succeed(gate, undefined)
          yield* settle
          seen.push(yield* Ref.get(passes))
        })
    )
    expect(seen).toEqual([0, 2])
  })

  it("behind a gate that never opens: the jobs end with the scope, having made no pass", async () => {
    const passes = await passesWhile((passes) => repeatInBackground(counting(passes), "10 millis"), Effect.never, () => settle)
    expect(passes).toBe(0)
  })
})
