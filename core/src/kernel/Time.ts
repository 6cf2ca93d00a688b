/**
 * Timestamps: ISO 8601 UTC strings with milliseconds, as every resource of the spec shows them.
 * They are read from Effect's Clock so tests can move time with TestClock.
 */
import { Clock, Effect, Schema } from "effect"

export const Timestamp = Schema.String.check(
  Schema.isPattern(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/, {
    expected: "an ISO 8601 UTC timestamp with milliseconds"
  })
)
export type Timestamp = typeof Timestamp.Type

// The instant formatted last: a gateway call formats its one `now` several times (its
// reservation, the month of its limits and allowance, its record).
let lastMillis = Number.NaN
let lastTimestamp = ""

export const toTimestamp = (millis: number): Timestamp => {
  if (millis !== lastMillis) {
    lastTimestamp = new Date(millis).toISOString()
    lastMillis = millis
  }
  return lastTimestamp
}

/** The current time as a Timestamp. */
export const now: Effect.Effect<Timestamp> = Effect.map(Clock.currentTimeMillis, toTimestamp)

/** The UTC calendar day (YYYY-MM-DD) of an instant, given as epoch milliseconds or a Timestamp: the period of daily limits. */
export const dayOf = (at: number | Timestamp): string => (typeof at === "number" ? toTimestamp(at) : at).slice(0, 10)

/** The UTC calendar month (YYYY-MM) of an instant, as `dayOf`: the period of monthly limits, allowances and statements. */
export const monthOf = (at: number | Timestamp): string => (typeof at === "number" ? toTimestamp(at) : at).slice(0, 7)
