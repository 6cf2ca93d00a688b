/**
 * The management surface's error shape of the spec, {error: {code, message, scope?}}, as Schema
 * error classes that carry their HTTP status; with the inference surface's (kernel/Errors.ts),
 * re-exported so http reads both from here. Handlers answer an area's refusal through
 * Refusals.ts, which makes one of these; request-shape refusals (ErrorShape.ts, RequestLimits.ts,
 * Idempotency.ts...) make them directly.
 */
import { Schema } from "effect"

export * from "../kernel/Errors.ts"

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

/** 410: a mailed link used or expired (the account pages' answers; no API endpoint declares it). */
export class Gone extends Schema.Error<Gone>("Gone")({ error: PlatformErrorBody }, { httpApiStatus: 410 }) {}
/** 425: a recovery link not usable yet (as Gone). */
export class TooEarly extends Schema.Error<TooEarly>("TooEarly")({ error: PlatformErrorBody }, { httpApiStatus: 425 }) {}

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

