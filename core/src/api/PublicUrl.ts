/**
 * The platform's public base URL, for the addresses it hands out (a card checkout's `pay_url`).
 * A shell passes the configured one (PUBLIC_URL) to PlatformServices; without it, the address the
 * request was sent to is used: the request's own absolute URL when the shell has one (a web
 * handler: the Lambda shell builds it from the API Gateway domain), else its Host header and
 * scheme (Effect's `HttpServerRequest.toURL`), e.g. `http://127.0.0.1:8080` for a local server.
 * Forwarding headers are not read: behind a TLS-terminating proxy, set PUBLIC_URL.
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
    Option.match(requestOrigin(request), {
      onNone: () => effect,
      onSome: (origin) => Effect.provideService(effect, RequestBaseUrl, origin)
    }))

const requestOrigin = (request: HttpServerRequest.HttpServerRequest): Option.Option<string> => {
  if (/^https?:\/\//i.test(request.originalUrl)) {
    try {
      return Option.some(new URL(request.originalUrl).origin)
    } catch {
      // not a URL after all: fall through to the Host header
    }
  }
  return Option.map(HttpServerRequest.toURL(request), (url) => url.origin)
}
