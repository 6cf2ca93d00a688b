/**
 * The refusals of a key's standing (KeyStanding.ts; docs/architecture.md "Errors"): what stands
 * behind a live key no longer lets it authorise anything, on every surface. http/Refusals.ts maps
 * every reason to its status and code on both surfaces.
 */
import { Schema } from "effect"
import { refusalFields, type RefusalOf } from "../kernel/Refusal.ts"

export const StandingErrorReasons = [
  /** The key's agent was revoked, failed or vanished: answered as an unknown key (invalid_api_key). */
  "agent_revoked",
  /** The delegation of the key's agent has ended. */
  "agent_expired",
  /** The plan the key is scoped to is not active. */
  "subscription_inactive",
  /** The rental the key is scoped to is not running. */
  "rental_ended"
] as const
export type StandingErrorReason = (typeof StandingErrorReasons)[number]

/** Why a live key may not authorise a call. */
export class StandingError extends Schema.TaggedError<StandingError>()("StandingError", refusalFields(StandingErrorReasons)) {
  static readonly reasons = StandingErrorReasons
}

export type StandingErrorOf<R extends StandingErrorReason> = RefusalOf<StandingError, R>

export const standingError = <R extends StandingErrorReason>(reason: R, message: string): StandingErrorOf<R> =>
  new StandingError({ reason, message }) as StandingErrorOf<R>
