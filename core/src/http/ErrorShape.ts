/**
 * Every failure answers in the error shape of its surface, never with an empty body:
 * - request decoding errors (bad JSON, schema violations) become 400 with a message naming the field;
 * - unknown routes become 404, a known path with another method 405;
 * - whatever else leaves the router without a JSON body (415 for a wrong content type, a defect's
 *   500) is rewritten by a global middleware, which also keeps internals out of 500s; a defect that
 *   says the store cannot be reached (kernel/StoreUnavailable.ts) is 503 `store_unavailable`.
 * Paths under /v1 (and /forecasts) use the inference shape, everything else the platform shape.
 */
import { Cause, Effect, SchemaIssue } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import type { HttpApiError } from "effect/http-api"
import { HttpApiMiddleware } from "effect/http-api"
import * as Errors from "./Errors.ts"
import { isStoreUnavailableCause, STORE_RETRY_AFTER_SECONDS } from "../kernel/StoreUnavailable.ts"
import { countStoreUnavailable } from "../observability/Metrics.ts"

/** The JSON error body of a status on the surface of `path`. */
export const errorBody = (path: string, status: number, message: string, code?: string) =>
  Errors.isInferencePath(path)
    ? {
      error: {
        message,
        type: Errors.inferenceTypeForStatus(status),
        code: code ?? Errors.platformCodeForStatus(status)
      }
    }
    : { error: { code: code ?? Errors.platformCodeForStatus(status), message } }

export const errorResponse = (path: string, status: number, message: string, code?: string) =>
  HttpServerResponse.jsonUnsafe(errorBody(path, status, message, code), { status })

const formatter = SchemaIssue.makeFormatterStandardSchemaV1()

/** The body could not be parsed as JSON at all (as opposed to JSON of the wrong shape). */
const isInvalidJson = (error: HttpApiError.HttpApiSchemaError): boolean =>
  (error.kind === "Body" || error.kind === "Payload") && /valid JSON/i.test(String(error.cause.message))

/** "name: Expected string" style text, one line per issue, naming each field by its path. */
export const describeSchemaError = (error: HttpApiError.HttpApiSchemaError): string => {
  if (isInvalidJson(error)) return "The request body is not valid JSON."
  const where = { Params: "path", Headers: "header", Query: "query", Body: "body", Payload: "body", ResponseHeaders: "header" }[error.kind]
  const issues = formatter(error.cause.issue).issues.map((issue) => {
    const path = (issue.path ?? []).map((p) => (typeof p === "object" ? String(p.key) : String(p)))
    const field = path.length === 0 ? where : `${where} field "${path.join(".")}"`
    return `${field}: ${issue.message}`
  })
  return issues.length === 0 ? `Invalid ${where}.` : issues.join("; ")
}

/** API-level middleware that turns request decoding errors into 400s in the surface's shape. */
export class SchemaErrors extends HttpApiMiddleware.Service<SchemaErrors>()("@model-platform/core/http/SchemaErrors") {
  static readonly layer = HttpApiMiddleware.layerSchemaErrorTransform(SchemaErrors, (error) =>
    Effect.map(HttpServerRequest.HttpServerRequest, (request) =>
      errorResponse(
        new URL(request.url, "http://x").pathname,
        400,
        describeSchemaError(error),
        isInvalidJson(error) ? "invalid_json" : "invalid_request"
      )))
}

const isJson = (response: HttpServerResponse.HttpServerResponse) =>
  (response.headers["content-type"] ?? ("contentType" in response.body ? response.body.contentType : undefined) ?? "").includes("json")

const isHtml = (response: HttpServerResponse.HttpServerResponse) =>
  (response.headers["content-type"] ?? ("contentType" in response.body ? response.body.contentType : undefined) ?? "").startsWith("text/html")

/** 503 store_unavailable in the surface's shape, with Retry-After: the store cannot be reached now. */
export const storeUnavailableResponse = (path: string) =>
  HttpServerResponse.setHeader(
    errorResponse(path, 503, "The platform's database cannot be reached right now; retry shortly.", "store_unavailable"),
    "retry-after",
    String(STORE_RETRY_AFTER_SECONDS)
  )

/**
 * The answer to a request on `path` that failed with `cause`: 503 when the store cannot be
 * reached, else a logged 500 that keeps internals out; an interruption stays one.
 */
export const answerFailure = (path: string) => <E>(cause: Cause.Cause<E>): Effect.Effect<HttpServerResponse.HttpServerResponse, E> =>
  Cause.hasInterruptsOnly(cause)
    ? Effect.failCause(cause)
    : isStoreUnavailableCause(cause)
    // An outage of the store, not a bug: say so, and when to retry (docs/gateway.md).
    ? Effect.as(
      Effect.andThen(countStoreUnavailable(cause), Effect.logWarning(`request answered 503: ${String(Cause.squash(cause))}`)),
      storeUnavailableResponse(path)
    )
    : Effect.as(
      Effect.logError("request failed", cause),
      errorResponse(path, 500, "The platform failed to answer this request; it has been logged.")
    )

/** Global router middleware: no error leaves without a JSON body in its surface's shape. */
export const ErrorShapeMiddleware = HttpRouter.middleware((httpEffect) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const path = new URL(request.url, "http://x").pathname
    const response = yield* httpEffect.pipe(Effect.catchCause(answerFailure(path)))
    // HTML pages for a person (the hosted checkout, http/Checkout.ts) keep their own error pages.
    if (response.status < 400 || isJson(response) || isHtml(response)) return response
    const message = response.status === 415
      ? "Send the body as JSON with `Content-Type: application/json`."
      : response.status >= 500
      ? "The platform failed to answer this request; it has been logged."
      : `The request failed with status ${response.status}.`
    return errorResponse(path, response.status, message)
  }), { global: true })

/**
 * The last route: answers 405 when the path exists only for other methods, else 404.
 * Built from the API definitions so it knows every path they serve.
 */
interface RouteTable {
  readonly groups: { readonly [name: string]: { readonly endpoints: { readonly [name: string]: { readonly path: string; readonly method: string } } } }
}

export const fallbackRoute = (apis: ReadonlyArray<RouteTable>, extraPaths: ReadonlyArray<string> = []) => {
  const patterns: Array<{ regex: RegExp; method: string }> = []
  const toRegex = (path: string) =>
    new RegExp("^" + path.replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replace(/\\?:[A-Za-z_]+/g, "[^/]+") + "/?$")
  for (const api of apis) {
    for (const group of Object.values(api.groups)) {
      for (const endpoint of Object.values(group.endpoints)) {
        patterns.push({ regex: toRegex(endpoint.path), method: endpoint.method })
      }
    }
  }
  for (const path of extraPaths) patterns.push({ regex: toRegex(path), method: "GET" })
  return HttpRouter.add("*", "*", (request) => {
    const path = new URL(request.url, "http://x").pathname
    const allowed = [...new Set(patterns.filter((p) => p.regex.test(path)).map((p) => p.method))]
    // The path has a route for this very method, yet the router took none: an id in it that no
    // route can take (longer than any id). Nothing is there; a 405 would name the method sent.
    if (allowed.includes(request.method) || (request.method === "HEAD" && allowed.includes("GET"))) {
      return Effect.succeed(errorResponse(path, 404, `Nothing is found at ${path}.`))
    }
    if (allowed.length > 0) {
      return Effect.succeed(
        HttpServerResponse.setHeader(
          errorResponse(path, 405, `${request.method} is not allowed on ${path}; use ${allowed.join(" or ")}.`),
          "allow",
          allowed.join(", ")
        )
      )
    }
    return Effect.succeed(errorResponse(path, 404, `No route for ${request.method} ${path}.`))
  })
}
