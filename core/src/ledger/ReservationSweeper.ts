/**
 * Expires reservations whose call never came back (a process died mid-call, docs/architecture.md "Money"):
 * every `intervalMs` it runs Ledger.expireDue, which releases each pending reservation past its
 * expires_at exactly once (the stores make that a conditional update, so several processes may
 * sweep the same ledger at once). The first sweep runs at once, so a restart frees what the
 * previous process left pending; on Lambda after the container's first invocation
 * (kernel/BackgroundJobs.ts), and the loop runs while a container is thawed.
 */
import { Duration, Effect, Layer } from "effect"
import { repeatInBackground } from "../kernel/BackgroundJobs.ts"
import { Ledger } from "./Ledger.ts"
import { Metric } from "effect"
import { reservationsExpired } from "../observability/Metrics.ts"

export interface ReservationSweeperOptions {
  readonly intervalMs: number
}

export const defaultReservationSweeperOptions: ReservationSweeperOptions = { intervalMs: 30_000 }

/** One sweep: expires what is due and logs how many; a store failure is logged, never fatal. */
export const sweepOnce = Effect.gen(function*() {
  const expired = yield* (yield* Ledger).expireDue
  yield* Metric.update(reservationsExpired, expired.length)
  if (expired.length > 0) yield* Effect.logInfo(`expired ${expired.length} reservation(s) whose call never completed`)
  return expired.length
}).pipe(
  Effect.catchCause((cause) => Effect.as(Effect.logWarning("reservation sweep failed; retrying later", cause), 0))
)

/** Sweeps in a background fiber for as long as the layer lives. */
export const layer = (options: Partial<ReservationSweeperOptions> = {}): Layer.Layer<never, never, Ledger> => {
  const { intervalMs } = { ...defaultReservationSweeperOptions, ...options }
  return Layer.effectDiscard(repeatInBackground(sweepOnce, Duration.millis(intervalMs)))
}

export const ReservationSweeper = { layer, sweepOnce } as const
