/**
 * Port: request counters in fixed time windows, kept in the store (not in process memory) so
 * that several processes share one limit (docs/architecture.md "Scale"). The gateway counts a call per key
 * per minute: `hit("rpm:" + keyId, windowStart, 60_000)` and refuses it when the count passes the
 * key's rpm. Counters of past windows are garbage; stores drop them when convenient (TTL).
 */
import { Context, type Effect } from "effect"

export class RateLimitStore extends Context.Service<RateLimitStore, {
  /**
   * Adds one hit to `bucket` in the window starting at `windowStart` (epoch milliseconds, a
   * multiple of windowMs) and returns the window's count including this hit. Atomic: N concurrent
   * hits from any number of processes return N distinct counts 1..N.
   */
  readonly hit: (bucket: string, windowStart: number, windowMs: number) => Effect.Effect<number>
}>()("@model-platform/core/kernel/RateLimitStore") {}

/** The start of the window of `windowMs` that holds the instant `nowMs` (epoch milliseconds). */
export const windowStartOf = (nowMs: number, windowMs: number): number => nowMs - (nowMs % windowMs)

/** Why a store must refuse this hit (a defect), or undefined. Pure, shared by the stores. */
export const hitProblem = (bucket: string, windowStart: number, windowMs: number): string | undefined => {
  if (bucket.length === 0) return "the bucket must be non-empty"
  if (!Number.isSafeInteger(windowMs) || windowMs <= 0) return `windowMs must be a positive integer, got ${windowMs}`
  if (!Number.isSafeInteger(windowStart) || windowStart < 0 || windowStart % windowMs !== 0) {
    return `windowStart must be a non-negative multiple of windowMs (${windowMs}), got ${windowStart}`
  }
  return undefined
}
