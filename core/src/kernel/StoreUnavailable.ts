/**
 * The one way every store says "I cannot be reached now" (docs/gateway.md "Metering that survives
 * faults"): a defect of class `StoreUnavailable`. Store failures are defects (the ports have no
 * error channel for them); each adapter knows which of its failures mean the store is down (a
 * refused or dropped connection, a server shutting down, a throttled or unreachable endpoint) and
 * turns those into this class with `markUnavailable`, so core can tell an outage (answer 503
 * store_unavailable, retry metering later) from a bug (500) without knowing the adapter.
 */
import { Cause, Effect } from "effect"

export class StoreUnavailable extends Error {
  readonly _tag = "StoreUnavailable"
  /** The operation that failed ("LedgerStore.settle"). */
  readonly store: string
  constructor(store: string, cause: unknown) {
    super(`${store}: the store cannot be reached`, { cause })
    this.name = "StoreUnavailable"
    this.store = store
  }
}

/** By tag, not instanceof: two copies of this module (bundles, tests) must agree. */
export const isStoreUnavailable = (u: unknown): u is StoreUnavailable =>
  typeof u === "object" && u !== null && (u as { _tag?: unknown })._tag === "StoreUnavailable"

/** Whether a cause holds a StoreUnavailable (a defect, or an error a caller failed with). */
export const isStoreUnavailableCause = (cause: Cause.Cause<unknown>): boolean =>
  cause.reasons.some((r) =>
    (Cause.isDieReason(r) && isStoreUnavailable(r.defect)) || (Cause.isFailReason(r) && isStoreUnavailable(r.error))
  )

/** The seconds a client is told to wait (Retry-After) while a store is unavailable. */
export const STORE_RETRY_AFTER_SECONDS = 2

const mark = <A, E, R>(
  store: string,
  effect: Effect.Effect<A, E, R>,
  isUnavailable: (defect: unknown) => boolean
): Effect.Effect<A, E, R> =>
  Effect.catchCause(effect, (cause) => {
    const down = cause.reasons.find((r) => Cause.isDieReason(r) && !isStoreUnavailable(r.defect) && isUnavailable(r.defect))
    return down === undefined || !Cause.isDieReason(down)
      ? Effect.failCause(cause)
      : Effect.die(new StoreUnavailable(store, down.defect))
  })

/**
 * A store service whose every operation turns the defects `isUnavailable` recognises into
 * StoreUnavailable; other failures are left as they are. Operations are the service's functions
 * that return an Effect, and its Effect-valued fields.
 */
export const markUnavailable = <S extends object>(store: string, service: S, isUnavailable: (defect: unknown) => boolean): S => {
  const marked: Record<string, unknown> = {}
  for (const [name, value] of Object.entries(service)) {
    if (Effect.isEffect(value)) {
      marked[name] = mark(`${store}.${name}`, value, isUnavailable)
    } else if (typeof value === "function") {
      const f = value as (...args: Array<unknown>) => unknown
      marked[name] = (...args: Array<unknown>) => {
        const result = f.apply(service, args)
        return Effect.isEffect(result) ? mark(`${store}.${name}`, result, isUnavailable) : result
      }
    } else {
      marked[name] = value
    }
  }
  return marked as S
}
