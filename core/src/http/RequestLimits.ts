/**
 * The request boundary: what any request may carry, checked before a route or a handler sees it,
 * in one global router middleware (the values are in Limits.ts, listed in docs/limits.md):
 * - the request target: dot segments (`/./me`, `/orders/../keys`) are resolved, as every fetch
 *   client and the web shells (Lambda, in-process) already do, so all shells route the same path;
 *   a path or query that is not percent-encoded UTF-8 text, or decodes to NUL, is 400;
 * - the request head (request line and headers) over MAX_HEADER_BYTES is 431;
 * - the body over its surface's size is 413: from Content-Length before a byte is read, else while
 *   reading. It is read here once, bounded, and handlers get it from the request's cache (`text`,
 *   `arrayBuffer`, `urlParamsBody`); a route that must stream its body instead of holding it
 *   would be skipped here and bound its own stream;
 * - a management JSON body must be UTF-8 and nest at most MAX_JSON_DEPTH deep (400).
 * Refusals answer in the surface's error shape (ErrorShape.ts).
 */
import { ByteSize, Effect, Result } from "effect"
import { HttpIncomingMessage, HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { Catalogue } from "../catalogue/Catalogue.ts"
import * as Errors from "./Errors.ts"
import * as Limits from "../kernel/Limits.ts"
import { textProblem } from "../kernel/Text.ts"
import { isUpload } from "./FileRoutes.ts"
import { errorResponse } from "./ErrorShape.ts"
import { INGEST_ITEMS_PATH } from "../fieldwork/IngestViews.ts"

/** A card processor's webhooks (http/Webhooks.ts): their events may be larger than a management body. */
const WEBHOOKS_PREFIX = "/webhooks/"

/** Bytes a body on `path` may have: /v1 from the catalogue, an ingest take, a webhook, a dataset upload, else management. */
export const bodyLimitFor = (method: string, path: string, inferenceLimit: number): number =>
  Errors.isInferencePath(path)
    ? inferenceLimit
    : path === INGEST_ITEMS_PATH
    ? Limits.MAX_TAKE_BYTES
    : path.startsWith(WEBHOOKS_PREFIX)
    ? Limits.MAX_WEBHOOK_BODY_BYTES
    : isUpload(method, path)
    ? Limits.MAX_UPLOAD_BYTES
    : Limits.MAX_MANAGEMENT_BODY_BYTES

const shorten = (text: string) => (text.length > 64 ? `${text.slice(0, 61)}...` : text)

/** A percent-encoded path segment or query part: undefined when it decodes to client text. */
const componentProblem = (raw: string): string | undefined => {
  const decoded = decodeComponent(raw)
  if (decoded === undefined) return `"${shorten(raw)}" is not UTF-8 text in percent-encoding`
  const problem = textProblem(decoded)
  return problem === undefined ? undefined : `"${shorten(raw)}" ${problem}`
}

const decodeComponent = (raw: string): string | undefined => {
  try {
    return decodeURIComponent(raw)
  } catch {
    return undefined
  }
}

/** Splits a request url ("/a/b?c=d") into its path and its query. */
const splitTarget = (url: string): readonly [string, string] => {
  const q = url.indexOf("?")
  return q === -1 ? [url, ""] : [url.slice(0, q), url.slice(q + 1)]
}

/** What is wrong with a request target (path and query), or undefined when nothing is. */
export const targetProblem = (url: string): string | undefined => {
  const [path, query] = splitTarget(url)
  for (const segment of path.split("/")) {
    const problem = componentProblem(segment)
    if (problem !== undefined) return `The path is not valid: ${problem}.`
  }
  if (query === "") return undefined
  for (const pair of query.split("&")) {
    for (const part of pair.split("=")) {
      const problem = componentProblem(part.replace(/\+/g, " "))
      if (problem !== undefined) return `The query is not valid: ${problem}.`
    }
  }
  return undefined
}

const DOT_SEGMENT = /(?:^|\/)(?:\.|%2e){1,2}(?:\/|$)/i

/** The url with dot segments resolved (as WHATWG URL does), or undefined when it has none. */
export const resolveDotSegments = (url: string): string | undefined => {
  const [path, query] = splitTarget(url)
  if (!DOT_SEGMENT.test(path)) return undefined
  // Prefixed so that a path starting with "//" stays a path, not an authority.
  const resolved = new URL(`http://x${path.startsWith("/") ? "" : "/"}${path}`).pathname
  return query === "" ? resolved : `${resolved}?${query}`
}

/** Bytes of the request line and headers, counted as HTTP/1.1 sends them. */
export const headBytes = (request: {
  readonly method: string
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
}): number => {
  let bytes = request.method.length + request.url.length + 12
  for (const [name, value] of Object.entries(request.headers)) bytes += name.length + value.length + 4
  return bytes
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })

/** What is wrong with a management JSON body, or undefined (unparsable JSON is the handler's 400). */
export const jsonBodyProblem = (bytes: Uint8Array): { readonly code: string; readonly message: string } | undefined => {
  let text: string
  try {
    text = strictUtf8.decode(bytes)
  } catch {
    return { code: "invalid_json", message: "The request body is not valid UTF-8." }
  }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return undefined
  }
  return Limits.exceedsJsonDepth(value)
    ? { code: "invalid_request", message: `The request body nests deeper than ${Limits.MAX_JSON_DEPTH} levels.` }
    : undefined
}

const isJsonContent = (request: HttpServerRequest.HttpServerRequest) =>
  /json/i.test(request.headers["content-type"] ?? "")

const tooLarge = (path: string, limit: number) =>
  HttpServerResponse.setHeader(
    errorResponse(path, 413, `The request body is larger than ${limit} bytes, the most ${path} takes.`, "payload_too_large"),
    // The rest of the body is not read: the connection cannot carry another request.
    "connection",
    "close"
  )

const BODYLESS = new Set(["GET", "HEAD", "OPTIONS"])

/** The global middleware; needs the Catalogue (for the /v1 body size). */
export const RequestLimitsMiddleware = HttpRouter.middleware(
  Effect.gen(function*() {
    const catalogue = yield* Catalogue
    const inferenceLimit = Limits.inferenceBodyLimit(catalogue.config)
    return (httpEffect) =>
      Effect.gen(function*() {
        const original = yield* HttpServerRequest.HttpServerRequest
        const resolved = resolveDotSegments(original.url)
        const request = resolved === undefined ? original : original.modify({ url: resolved })
        const path = splitTarget(request.url)[0]
        const problem = targetProblem(request.url)
        if (problem !== undefined) return errorResponse(path, 400, problem, "invalid_request")
        if (headBytes(request) > Limits.MAX_HEADER_BYTES) {
          return errorResponse(
            path,
            431,
            `The request line and headers are larger than ${Limits.MAX_HEADER_BYTES} bytes.`,
            "headers_too_large"
          )
        }
        const limit = bodyLimitFor(request.method, path, inferenceLimit)
        const declared = request.headers["content-length"]
        if (declared !== undefined && /^\d+$/.test(declared) && Number(declared) > limit) return tooLarge(path, limit)
        const serve = Effect.provideService(httpEffect, HttpServerRequest.HttpServerRequest, request)
        // A dataset upload streams its body into the blob store and bounds it there.
        if (BODYLESS.has(request.method) || isUpload(request.method, path)) return yield* serve
        // Read once, bounded: the request caches the bytes for the handler.
        const body = yield* Effect.result(
          Effect.provideService(request.arrayBuffer, HttpIncomingMessage.MaxBodySize, ByteSize.bytes(limit))
        )
        if (Result.isFailure(body)) {
          const reason = body.failure.reason
          if (reason._tag === "RequestParseError" && reason.reason === "BodyTooLarge") return tooLarge(path, limit)
          return yield* serve
        }
        if (!Errors.isInferencePath(path) && isJsonContent(request)) {
          const invalid = jsonBodyProblem(new Uint8Array(body.success))
          if (invalid !== undefined) return errorResponse(path, 400, invalid.message, invalid.code)
        }
        return yield* serve
      })
  }),
  { global: true }
)
