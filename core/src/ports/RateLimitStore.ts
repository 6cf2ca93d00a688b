/**
 * Port: request counters in fixed time windows, kept in the store (not in process memory) so
 * that several processes share one limit (DESIGN.md "Scale"). The gateway counts a call per key
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
}>()("@model-platform/core/ports/RateLimitStore") {}
