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

export const GatewayErrorReasons = [
  // Validation (Validation.ts): the body is not a call the model takes.
  "invalid_json",
  "invalid_input",
  "missing_model",
  "wrong_endpoint",
  "invalid_history",
  "invalid_horizon",
  "invalid_size",
  "model_not_found",
  "machine_not_found",
  // Admission (Gateway.ts, Admission.ts): the key, its rate and its money.
  "key_lacks_inference_permission",
  /** The key was revoked while its call was admitted: answered as an unknown key (invalid_api_key). */
  "key_revoked",
  /** The key's requests per minute are used up: carries `retry_after_seconds`. */
  "rate_limited",
  "insufficient_credit",
  "agent_daily_limit",
  "agent_total_limit",
  "monthly_limit_reached",
  "key_monthly_limit_reached",
  // Dispatch (Dispatch.ts, Gateway.ts): which machine takes the call, and how it answered.
  "model_not_in_plan",
  "key_not_scoped_to_machine",
  "no_capacity",
  "machine_unreachable",
  "machine_error"
] as const
export type GatewayErrorReason = (typeof GatewayErrorReasons)[number]

/**
 * Why the gateway refuses one inference call (validation, admission, dispatch). http answers it on
 * /v1 from http/InferenceRefusals.ts: status, OpenAI's error `type`, and Retry-After for a 429.
 */
export class GatewayError extends Schema.TaggedError<GatewayError>()("GatewayError", {
  ...refusalFields(GatewayErrorReasons),
  /** For `rate_limited`: when the key's window ends. */
  retry_after_seconds: Schema.optional(Schema.Number)
}) {
  static readonly reasons = GatewayErrorReasons
}

export type GatewayErrorOf<R extends GatewayErrorReason> = RefusalOf<GatewayError, R>

export const gatewayError = <R extends GatewayErrorReason>(reason: R, message: string): GatewayErrorOf<R> =>
  new GatewayError({ reason, message }) as GatewayErrorOf<R>

/** 429: the key's requests per minute are used up; retry after `seconds`. */
export const rateLimited = (seconds: number, message: string): GatewayErrorOf<"rate_limited"> =>
  new GatewayError({ reason: "rate_limited", message, retry_after_seconds: seconds }) as GatewayErrorOf<"rate_limited">
