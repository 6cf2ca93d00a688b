/**
 * The refusals of the inference surface (/v1) in its error shape (docs/architecture.md "Errors"):
 * the gateway's own refusals of a call (GatewayError) have a status and code here, total over the
 * reasons like http/Refusals.ts (core/test/http/Refusals.test.ts checks it at run time); the key's
 * and its standing's refusals answer with the management surface's table. The body is
 * {error: {message, type, code}}, OpenAI's `type` by status (kernel/Errors.ts).
 */
import { GatewayError } from "../gateway/GatewayErrors.ts"
import { type InferenceError, inferenceError } from "../kernel/Errors.ts"
import { type AreaError, isAreaError, refusalOf } from "./Refusals.ts"

/** The refusal classes only the inference surface answers, for the totality test. */
export const InferenceErrorClasses = [GatewayError] as const

export type InferenceStatus = 400 | 401 | 402 | 403 | 404 | 429 | 502 | 503
/** A status (the code is the reason), or a status and the spec's code when the reason is finer than it. */
export type InferenceEntry = InferenceStatus | readonly [InferenceStatus, string]

type InferenceTable = {
  readonly [E in InstanceType<(typeof InferenceErrorClasses)[number]> as E["_tag"]]: {
    readonly [R in E["reason"]]: InferenceEntry
  }
}

export const INFERENCE_REFUSALS = {
  GatewayError: {
    invalid_json: 400,
    invalid_input: 400,
    missing_model: 400,
    wrong_endpoint: 400,
    invalid_history: 400,
    invalid_horizon: 400,
    invalid_size: 400,
    model_not_found: 404,
    machine_not_found: 404,
    key_lacks_inference_permission: 403,
    key_revoked: [401, "invalid_api_key"],
    rate_limited: 429,
    insufficient_credit: 402,
    agent_daily_limit: 402,
    agent_total_limit: 402,
    monthly_limit_reached: 402,
    key_monthly_limit_reached: 402,
    model_not_in_plan: 403,
    key_not_scoped_to_machine: 403,
    no_capacity: 503,
    machine_unreachable: 502,
    machine_error: 502
  }
} as const satisfies InferenceTable

/** The status and code a gateway refusal answers with. */
export const inferenceRefusalOf = (error: GatewayError): { readonly status: InferenceStatus; readonly code: string } => {
  const entry: InferenceEntry = INFERENCE_REFUSALS.GatewayError[error.reason]
  return typeof entry === "number" ? { status: entry, code: error.reason } : { status: entry[0], code: entry[1] }
}

/** A refusal on the inference surface (the gateway's, or an area's), as its status and error body. */
export const toInferenceError = <E>(error: E): Exclude<E, AreaError | GatewayError> | InferenceError => {
  if (error instanceof GatewayError) {
    const { code, status } = inferenceRefusalOf(error)
    return inferenceError(status, code, error.message)
  }
  if (!isAreaError(error)) return error as Exclude<E, AreaError | GatewayError>
  const { code, status } = refusalOf(error)
  return inferenceError(status, code, error.message)
}

/** The Retry-After seconds a refusal answers with, if any (a rate-limited call's). */
export const retryAfterOf = (error: unknown): number | undefined =>
  error instanceof GatewayError ? error.retry_after_seconds : undefined

