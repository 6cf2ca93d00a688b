/**
 * The platform's public base URL, for the addresses it hands out (a card checkout's `pay_url`).
 * A shell passes the configured one (PUBLIC_URL) to PlatformServices; without it, the address the
 * request was sent to is used: its Host header and scheme (Effect's `HttpServerRequest.toURL`),
 * e.g. `http://127.0.0.1:8080` for a local server, or the API Gateway domain on Lambda.
 */
import { Context, Effect, Option } from "effect"
import { HttpServerRequest } from "effect/http"

/** The base URL of the request being handled (no trailing slash), when known. */
export const RequestBaseUrl = Context.Reference<string | undefined>("@model-platform/core/api/RequestBaseUrl", {
  defaultValue: () => undefined
})

/** Runs `effect` with RequestBaseUrl set from the current request. */
export const withRequestBaseUrl = <A, E, R>(
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E, R | HttpServerRequest.HttpServerRequest> =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
    Option.match(HttpServerRequest.toURL(request), {
      onNone: () => effect,
      onSome: (url) => Effect.provideService(effect, RequestBaseUrl, url.origin)
    }))
