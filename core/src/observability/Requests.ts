/**
 * Every request, observed once at the edge of the HTTP application (docs/operations.md "Logs"):
 * - its request id: a well-formed incoming `X-Request-Id` is kept, else one is made; every answer
 *   carries it, and every log line written while the request runs is annotated with it;
 * - one access line when it has been answered (a stream: when its last byte was written): request
 *   id, method, route (the route's template, never the path a client wrote, nor its query),
 *   status, duration and the account whose key was used, never a secret, a header or a body;
 * - the request's duration in `http_server_request_duration_seconds` (Metrics.ts).
 *
 * A shell passes `observeRequests` as the `middleware` of `HttpRouter.serve` / `toWebHandler`
 * (SERVE_OPTIONS in http/Http.ts): that middleware wraps the whole request, the sending of its
 * answer included, so it sees every answer, the router's and the error shapes' too.
 */
import { Cause, Clock, Context, Effect, Exit, type LogLevel, Option } from "effect"
import { HttpEffect, HttpRouter, HttpServerError, HttpServerRequest, HttpServerResponse } from "effect/http"
import { generateId } from "../kernel/Ids.ts"
import { recordHttpRequest } from "./Metrics.ts"

export const REQUEST_ID_HEADER = "x-request-id"

/** An incoming request id is kept when it is 1 to 128 of these characters (a UUID, a ULID, a trace id). */
const WELL_FORMED_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

export const isWellFormedRequestId = (incoming: string | undefined): incoming is string =>
  incoming !== undefined && WELL_FORMED_REQUEST_ID.test(incoming)

/** The request's id: the client's, when well-formed, else a new one (`req_…`). */
export const requestIdOf = (incoming: string | undefined): Effect.Effect<string> =>
  isWellFormedRequestId(incoming) ? Effect.succeed(incoming) : generateId("req")

/** What the platform learns about a request while answering it, for its access line. */
export interface RequestFacts {
  readonly id: string
  /** The account whose key authenticated the request (ApiKeys), when one did. */
  accountId: string | undefined
  /** The template of the route that answered (RouteNoter), when one did. */
  route: string | undefined
}

/**
 * The level of access lines: Info where a shell configured its logs (Logging.ts), else Debug, so
 * that a platform built in a test writes none at Effect's default level.
 */
export const AccessLogLevel = Context.Reference<LogLevel.Severity>("@model-platform/core/observability/AccessLogLevel", {
  defaultValue: () => "Debug"
})

/** The current request's facts; undefined outside a request (background work, tests of a service alone). */
export const CurrentRequest = Context.Reference<RequestFacts | undefined>("@model-platform/core/observability/CurrentRequest", {
  defaultValue: () => undefined
})

/** Notes the account behind the current request's key (for its access line). */
export const noteAccount = (accountId: string): Effect.Effect<void> =>
  Effect.withFiber((fiber) => {
    const facts = fiber.getRef(CurrentRequest)
    if (facts !== undefined) facts.accountId = accountId
    return Effect.void
  })

/**
 * Routes polled by machines (probes, scrapes): their access lines are written at Debug, so that a
 * probe every few seconds does not drown the requests of people.
 */
const QUIET_ROUTES = new Set(["/health/live", "/health/ready", "/metrics"])

const statusOf = (exit: Exit.Exit<HttpServerResponse.HttpServerResponse, unknown>): Effect.Effect<number> => {
  if (Exit.isSuccess(exit)) return Effect.succeed(exit.value.status)
  // A client that went away before its answer: nginx's 499, as the router itself answers it.
  if (Cause.hasInterruptsOnly(exit.cause)) return Effect.succeed(499)
  return Effect.map(HttpServerError.causeResponse(exit.cause), ([response]) => response.status)
}

/**
 * A global router middleware, the innermost one (last in AppRoutes): it notes the template of the
 * route that answered ("/keys/:id"), which the router puts in the fiber's context once it found the
 * route and which the middlewares around it take away again when they finish.
 */
export const RouteNoter = HttpRouter.middleware((httpEffect) =>
  Effect.onExit(httpEffect, () =>
    Effect.withFiber((fiber) => {
      const facts = fiber.getRef(CurrentRequest)
      const route = Context.getOption(fiber.context, HttpRouter.RouteContext)
      if (facts !== undefined && Option.isSome(route)) facts.route = route.value.route.path
      return Effect.void
    })), { global: true })

/** A request has been answered with `status`: its HTTP metric and its access line (see the module's comment). */
const recordAnswer = Effect.fnUntraced(function*(facts: RequestFacts, method: string, started: bigint, status: number) {
  const route = facts.route ?? "unmatched"
  const seconds = Number((yield* Clock.currentTimeNanos) - started) / 1e9
  yield* recordHttpRequest({ method, route, status }, seconds)
  const line = Effect.logWithLevel(QUIET_ROUTES.has(route) ? "Debug" : yield* AccessLogLevel)("request")
  yield* Effect.annotateLogs(line, {
    request_id: facts.id,
    method,
    route,
    status,
    duration_ms: Math.round(seconds * 1e6) / 1e3,
    ...(facts.accountId === undefined ? {} : { account_id: facts.accountId })
  })
})

/**
 * For a shell that answers some routes outside the router (the Node shell's /v1 calls,
 * adapters/node-http V1Listener.ts): the same observation as `observeRequests`. `answer` gets the
 * request id (to send as REQUEST_ID_HEADER), sends the answer, and returns its status once the
 * last byte was written; an interrupted answer is 499.
 */
export const observeAnswer = Effect.fnUntraced(function*<E, R>(
  method: string,
  incomingId: string | undefined,
  route: string,
  answer: (requestId: string) => Effect.Effect<number, E, R>
): Effect.fn.Return<void, E, R> {
  const started = yield* Clock.currentTimeNanos
  const facts: RequestFacts = { id: yield* requestIdOf(incomingId), accountId: undefined, route }
  const exit = yield* answer(facts.id).pipe(
    Effect.provideService(CurrentRequest, facts),
    Effect.annotateLogs("request_id", facts.id),
    Effect.exit
  )
  // Only an interruption (the client went away) fails here: `answer` sends every other failure.
  yield* recordAnswer(facts, method, started, Exit.isSuccess(exit) ? exit.value : 499)
  if (Exit.isFailure(exit)) return yield* Effect.failCause(exit.cause)
})

const observing = Effect.fnUntraced(function*<E, R>(
  app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
): Effect.fn.Return<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest> {
  const request = yield* HttpServerRequest.HttpServerRequest
  const started = yield* Clock.currentTimeNanos
  const facts: RequestFacts = { id: yield* requestIdOf(request.headers[REQUEST_ID_HEADER]), accountId: undefined, route: undefined }
  const exit = yield* app.pipe(
    HttpEffect.withPreResponseHandler((_, response) =>
      Effect.succeed(HttpServerResponse.setHeader(response, REQUEST_ID_HEADER, facts.id))
    ),
    Effect.provideService(CurrentRequest, facts),
    Effect.annotateLogs("request_id", facts.id),
    Effect.exit
  )
  yield* recordAnswer(facts, request.method, started, yield* statusOf(exit))
  return yield* exit
})

/**
 * The middleware: see the module's comment. Its requirements are the app's: the request it reads
 * is there for every request a server runs.
 */
export const observeRequests = <E, R>(
  app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R> =>
  observing(app) as Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
