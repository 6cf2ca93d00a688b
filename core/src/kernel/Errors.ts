/**
 * The inference surface's error shape (/v1): {error: {message, type, code}}, with OpenAI's `type`
 * per status, so OpenAI clients classify our errors as theirs. http answers the gateway's
 * refusals (GatewayError) and the key's in it: http/InferenceRefusals.ts. (The management
 * surface's errors are http's: http/Errors.ts; the areas refuse with their own refusals,
 * kernel/Refusal.ts, mapped in http/Refusals.ts.)
 */
import { Schema } from "effect"

const InferenceErrorBody = Schema.Struct({
  message: Schema.String,
  type: Schema.String,
  code: Schema.String
})

/** OpenAI's error `type` values by status, so OpenAI clients classify our errors as theirs. */
export const inferenceTypeForStatus = (status: number): string =>
  ({
    400: "invalid_request_error",
    401: "authentication_error",
    402: "insufficient_quota",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    409: "conflict_error",
    413: "invalid_request_error",
    415: "invalid_request_error",
    431: "invalid_request_error",
    429: "rate_limit_error"
  })[status] ?? (status >= 500 ? "server_error" : "invalid_request_error")

export class InferenceError extends Schema.Error<InferenceError>("InferenceError")({
  status: Schema.Number,
  error: InferenceErrorBody
}) {}

export const inferenceError = (status: number, code: string, message: string) =>
  new InferenceError({ status, error: { message, type: inferenceTypeForStatus(status), code } })

/** Whether a request path belongs to the inference surface and so answers in its error shape. */
export const isInferencePath = (path: string): boolean =>
  path === "/v1" || path.startsWith("/v1/") || path === "/forecasts" || path.startsWith("/forecasts/")
