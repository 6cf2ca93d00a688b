/**
 * A clock for a whole platform under test (PlatformOptions.clock) that a test moves forward: the
 * system's time plus an offset. Sleeping and monotonic time stay the system's, so timers and
 * timeouts behave as usual while the platform's "now" jumps (a plan's period ending, a rental's
 * hours passing).
 */
import { Clock, Effect } from "effect"

export interface MovableClock {
  readonly clock: Clock.Clock
  /** Moves the platform's "now" forward by `ms`. */
  readonly advance: (ms: number) => void
  /** The platform's "now" in milliseconds. */
  readonly now: () => number
}

export const movableClock = (): MovableClock => {
  const system = Effect.runSync(Clock.clockWith(Effect.succeed))
  let offset = 0
  const now = () => system.currentTimeMillisUnsafe() + offset
  const nanos = () => system.currentTimeNanosUnsafe() + BigInt(offset) * 1_000_000n
  const clock: Clock.Clock = {
    currentTimeMillisUnsafe: now,
    currentTimeMillis: Effect.sync(now),
    currentTimeNanosUnsafe: nanos,
    currentTimeNanos: Effect.sync(nanos),
    monotonicTimeNanosUnsafe: () => system.monotonicTimeNanosUnsafe(),
    monotonicTimeNanos: system.monotonicTimeNanos,
    sleep: (duration) => system.sleep(duration)
  }
  return {
    clock,
    advance: (ms) => {
      if (!(ms >= 0)) throw new Error(`a clock moves forward only, not by ${ms}`)
      offset += ms
    },
    now
  }
}
