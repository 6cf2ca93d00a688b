/**
 * Lambda events <-> web Request/Response, in the style of Hono's aws-lambda adapter: one event
 * processor per event format, which turns an event into a web `Request` and a web `Response` into
 * the result Lambda hands back. Nothing here knows a route: the platform serves the Request.
 *
 * API Gateway HTTP APIs (payload format 2.0) and Lambda Function URLs send the same event and
 * accept the same result, so one processor serves both triggers:
 * - request: method from requestContext.http, the raw path and raw query string as the client sent
 *   them (repeated parameters and percent-encodings intact), headers (API Gateway has already
 *   joined repeated headers with commas), the `cookies` array back into one Cookie header, and
 *   the body decoded from base64 when `isBase64Encoded`; without a well-formed X-Request-Id of
 *   the client's, API Gateway's requestContext.requestId becomes the request's id;
 * - result: status, headers, every Set-Cookie in `cookies` (payload 2.0 has no multi-value
 *   headers), the body as text when it is textual UTF-8 and as base64 otherwise.
 *
 * The API must be served on the `$default` stage without a path mapping key: with a named stage,
 * API Gateway puts the stage in rawPath and no route would match.
 */
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from "aws-lambda"
import { Predicate } from "effect"
import { isWellFormedRequestId, REQUEST_ID_HEADER } from "@model-platform/core/observability"

/** One event format: its events into web Requests, web Responses into its results. */
export interface EventProcessor<Event, Result> {
  /** The triggers that send this format. */
  readonly triggers: ReadonlyArray<string>
  readonly accepts: (event: unknown) => event is Event
  /** Throws a TypeError when the event cannot make a valid Request (a malformed header value...). */
  readonly toRequest: (event: Event, init?: { readonly signal?: AbortSignal }) => Request
  readonly toResult: (response: Response) => Promise<Result>
}

export type PayloadV2Event = APIGatewayProxyEventV2
export type PayloadV2Result = APIGatewayProxyStructuredResultV2

// ---------------------------------------------------------------------------------------------
// bodies

const base64ToBytes = (text: string): Uint8Array<ArrayBuffer> => new Uint8Array(Buffer.from(text, "base64"))
const bytesToBase64 = (bytes: Uint8Array): string => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64")

const TEXTUAL_TYPE =
  /^\s*(?:text\/[^;\s]+|[^/;\s]+\/(?:[^;\s]*\+)?(?:json|xml)|[^/;\s]+\/(?:javascript|ecmascript|x-www-form-urlencoded|x-ndjson|ndjson|yaml|x-yaml|graphql))\s*(?:;|$)/i

/** Whether a content type names text (JSON, XML, JavaScript, forms, text/*...). */
export const isTextualContentType = (contentType: string): boolean => TEXTUAL_TYPE.test(contentType)

/** Any content-encoding but identity (gzip, br...) makes the body bytes, whatever its type. */
const isEncoded = (contentEncoding: string | null): boolean =>
  contentEncoding !== null && contentEncoding.trim() !== "" && !/^\s*identity\s*$/i.test(contentEncoding)

const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })

/** The body as UTF-8 text, or undefined when it is not valid UTF-8. */
const asUtf8 = (bytes: Uint8Array): string | undefined => {
  try {
    return strictUtf8.decode(bytes)
  } catch {
    return undefined
  }
}

/**
 * The body as Lambda carries it: text when the response says it is text (or says nothing) and the
 * bytes are valid UTF-8 (so a text/plain body in Latin-1 is not mangled), base64 otherwise.
 */
const encodeBody = async (response: Response): Promise<{ readonly body: string; readonly isBase64Encoded: boolean }> => {
  if (response.body === null) return { body: "", isBase64Encoded: false }
  const bytes = new Uint8Array(await response.arrayBuffer())
  const contentType = response.headers.get("content-type")
  const mayBeText = !isEncoded(response.headers.get("content-encoding")) &&
    (contentType === null || isTextualContentType(contentType))
  const text = mayBeText ? asUtf8(bytes) : undefined
  return text === undefined ? { body: bytesToBase64(bytes), isBase64Encoded: true } : { body: text, isBase64Encoded: false }
}

// ---------------------------------------------------------------------------------------------
// headers

/**
 * Header values with characters a web Headers object refuses (beyond Latin-1) are percent-encoded,
 * as Hono does, rather than failing the whole request.
 */
const sanitizeHeaderValue = (value: string): string =>
  /[^\x00-\x7F]/.test(value) ? encodeURIComponent(value) : value

const BODYLESS_METHODS = new Set(["GET", "HEAD"])

// ---------------------------------------------------------------------------------------------
// payload format 2.0: API Gateway HTTP API and Lambda Function URLs

/** Payload 2.0 has a rawPath and a requestContext.http; v1 (REST API) and ALB events do not. */
const isPayloadV2Event = (event: unknown): event is PayloadV2Event =>
  Predicate.hasProperty(event, "rawPath") &&
  Predicate.isString(event.rawPath) &&
  Predicate.hasProperty(event, "requestContext") &&
  Predicate.hasProperty(event.requestContext, "http") &&
  Predicate.hasProperty(event.requestContext.http, "method")

const payloadV2Request = (event: PayloadV2Event, init: { readonly signal?: AbortSignal } = {}): Request => {
  const method = event.requestContext.http.method.toUpperCase()
  const headers = new Headers()
  for (const [name, value] of Object.entries(event.headers ?? {})) {
    if (value !== undefined) headers.append(name, sanitizeHeaderValue(value))
  }
  // Payload 2.0 moves the Cookie header into `cookies`, one entry per cookie.
  if (event.cookies !== undefined && event.cookies.length > 0) {
    headers.set("cookie", sanitizeHeaderValue(event.cookies.join("; ")))
  }
  // Without a request id of the client's, API Gateway's own: the one in its access logs.
  if (!isWellFormedRequestId(headers.get(REQUEST_ID_HEADER) ?? undefined) && event.requestContext.requestId) {
    headers.set(REQUEST_ID_HEADER, event.requestContext.requestId)
  }
  // The domain AWS answered on; never the Host header, which the client writes (PublicUrl.ts
  // builds links on this URL). An event without it is not API Gateway's: localhost.
  const host = event.requestContext.domainName || "localhost"
  const query = event.rawQueryString ? `?${event.rawQueryString}` : ""
  const url = `https://${host}${event.rawPath || "/"}${query}`
  // A body on GET or HEAD has no meaning, and a web Request refuses one.
  const body = event.body === undefined || event.body === "" || BODYLESS_METHODS.has(method)
    ? undefined
    : event.isBase64Encoded
    ? base64ToBytes(event.body)
    : new TextEncoder().encode(event.body)
  return new Request(url, {
    method,
    headers,
    ...(body === undefined ? {} : { body }),
    ...(init.signal === undefined ? {} : { signal: init.signal })
  })
}

/**
 * Set-Cookie goes to `cookies`; the length and framing of the body are API Gateway's to set, since
 * the body it sends is not the one in the result (base64 is decoded), and so is the connection
 * (a 413's `Connection: close` is for a socket the Node server holds, not for API Gateway's).
 */
const RESULT_OMITS = new Set(["set-cookie", "content-length", "transfer-encoding", "connection"])

const payloadV2Result = async (response: Response): Promise<PayloadV2Result> => {
  const headers: Record<string, string> = {}
  // Headers joins repeated values with ", " (what HTTP allows for every header but Set-Cookie).
  response.headers.forEach((value, name) => {
    if (!RESULT_OMITS.has(name)) headers[name] = value
  })
  const cookies = response.headers.getSetCookie()
  const { body, isBase64Encoded } = await encodeBody(response)
  return {
    statusCode: response.status,
    headers,
    ...(cookies.length > 0 ? { cookies } : {}),
    body,
    isBase64Encoded
  }
}

/** API Gateway HTTP API (payload format 2.0) and Lambda Function URL events. */
export const payloadV2: EventProcessor<PayloadV2Event, PayloadV2Result> = {
  triggers: ["API Gateway HTTP API (payload 2.0)", "Lambda Function URL"],
  accepts: isPayloadV2Event,
  toRequest: payloadV2Request,
  toResult: payloadV2Result
}

