/**
 * The two error shapes of the spec, as Schema error classes that carry their HTTP status.
 * Platform (management) surface: {error: {code, message, scope?}}.
 * Inference surface (/v1):       {error: {message, type, code}}.
 * Use-cases fail with these directly, so a handler never translates an error by hand.
 */
import { Schema } from "effect"

const PlatformErrorBody = Schema.Struct({
  code: Schema.String,
  message: Schema.String,
  scope: Schema.optionalKey(Schema.String)
})

const make = <T>(Class: new (args: { error: typeof PlatformErrorBody.Type }) => T) =>
  (code: string, message: string, scope?: string): T =>
    new Class({ error: scope === undefined ? { code, message } : { code, message, scope } })

export class BadRequest extends Schema.Error<BadRequest>("BadRequest")(
  { error: PlatformErrorBody }, { httpApiStatus: 400 }) {}
export class Unauthorized extends Schema.Error<Unauthorized>("Unauthorized")(
  { error: PlatformErrorBody }, { httpApiStatus: 401 }) {}
export class PaymentRequired extends Schema.Error<PaymentRequired>("PaymentRequired")(
  { error: PlatformErrorBody }, { httpApiStatus: 402 }) {}
export class Forbidden extends Schema.Error<Forbidden>("Forbidden")(
  { error: PlatformErrorBody }, { httpApiStatus: 403 }) {}
export class NotFound extends Schema.Error<NotFound>("NotFound")(
  { error: PlatformErrorBody }, { httpApiStatus: 404 }) {}
export class Conflict extends Schema.Error<Conflict>("Conflict")(
  { error: PlatformErrorBody }, { httpApiStatus: 409 }) {}
export class TooManyRequests extends Schema.Error<TooManyRequests>("TooManyRequests")(
  { error: PlatformErrorBody }, { httpApiStatus: 429 }) {}
export class ServiceUnavailable extends Schema.Error<ServiceUnavailable>("ServiceUnavailable")(
  { error: PlatformErrorBody }, { httpApiStatus: 503 }) {}

export const badRequest = make(BadRequest)
export const unauthorized = make(Unauthorized)
export const forbidden = make(Forbidden)
export const notFound = make(NotFound)
export const conflict = make(Conflict)

/** Every platform error class, declared once on the whole API so each one encodes in its shape. */
export const PlatformErrors = [
  BadRequest, Unauthorized, PaymentRequired, Forbidden, NotFound, Conflict, TooManyRequests, ServiceUnavailable
] as const
export type PlatformError = InstanceType<(typeof PlatformErrors)[number]>

/** Fallback codes by status, for failures that happen before a handler runs (routing, parsing). */
export const platformCodeForStatus = (status: number): string =>
  ({
    400: "invalid_request",
    401: "invalid_api_key",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    429: "rate_limited",
    431: "headers_too_large"
  })[status] ?? (status >= 500 ? "internal_error" : "invalid_request")

// ---- Inference surface --------------------------------------------------------------------

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
