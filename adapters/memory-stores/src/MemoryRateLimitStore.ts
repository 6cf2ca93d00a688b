/**
 * The rate-limit store port in memory: one Ref of counters keyed by bucket and window start;
 * `hit` is a single `Ref.modify`, so N concurrent hits answer 1..N. Windows that ended more than
 * RETAIN_MS before the newest window seen are dropped every PRUNE_EVERY hits, so the map stays
 * small in a long-running test process.
 */
import { Effect, Layer, Ref } from "effect"
import { hitProblem, RateLimitStore } from "@model-platform/core/kernel"

/** How long a counter is kept after its window ends. */
export const RETAIN_MS = 5 * 60_000
const PRUNE_EVERY = 1_000

interface Counter {
  readonly count: number
  /** windowStart + windowMs */
  readonly end: number
}

interface State {
  readonly counters: ReadonlyMap<string, Counter>
  readonly hits: number
}

const prune = (counters: Map<string, Counter>, now: number) => {
  for (const [key, counter] of counters) if (counter.end + RETAIN_MS < now) counters.delete(key)
}

export const RateLimitStoreMemory: Layer.Layer<RateLimitStore> = Layer.effect(
  RateLimitStore,
  Effect.gen(function*() {
    const state = yield* Ref.make<State>({ counters: new Map(), hits: 0 })

    const hit = (bucket: string, windowStart: number, windowMs: number) => {
      const problem = hitProblem(bucket, windowStart, windowMs)
      if (problem !== undefined) return Effect.die(new Error(`RateLimitStore.hit: ${problem}`))
      // JSON keeps the two parts apart whatever characters the bucket holds.
      const key = JSON.stringify([bucket, windowStart])
      return Ref.modify(state, (s): readonly [number, State] => {
        const counters = new Map(s.counters)
        const count = (counters.get(key)?.count ?? 0) + 1
        counters.set(key, { count, end: windowStart + windowMs })
        const hits = s.hits + 1
        if (hits % PRUNE_EVERY === 0) prune(counters, windowStart)
        return [count, { counters, hits }]
      }).pipe(Effect.withSpan("RateLimitStore.hit"))
    }

    return RateLimitStore.of({ hit })
  })
)
