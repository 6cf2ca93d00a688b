/**
 * The base of every address the platform hands out (a card checkout's `pay_url`, an agent
 * approval's `return_to`, an identity's `manage_url`, the account pages' examples), in one place
 * (docs/api-decisions.md "Links"):
 * 1. the configured public URL (PUBLIC_URL);
 * 2. else the request's absolute URL when the shell builds it (`requestUrlFromShell`: the Lambda
 *    shell builds it from API Gateway's `requestContext.domainName`, which AWS sets to the domain
 *    it answered on; a client cannot choose it);
 * 3. else the request's Host header, only when it names a loopback address (127.0.0.0/8, ::1,
 *    localhost): a local server talked to directly, e.g. `http://127.0.0.1:8080`;
 * 4. else none, and a request that needs a link is refused: 400 `untrusted_host`. Any other Host
 *    is the client's to write, and a link built on it would send people wherever the client likes.
 * Forwarding headers are never read: behind a proxy, set PUBLIC_URL.
 */
import { Context, Effect } from "effect"
import { HttpServerRequest } from "effect/http"
import * as Errors from "./Errors.ts"
import { PublicAddress, type PublicAddressSettings, RequestBaseUrl } from "../kernel/RequestBaseUrl.ts"

/** Whether a host name (as in a URL, IPv6 in brackets) is a loopback address. */
export const isLoopbackHost = (hostname: string): boolean => {
  const name = hostname.toLowerCase().replace(/\.$/, "")
  return name === "localhost" || name === "[::1]" || name === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(name)
}

const originOf = (url: string): string | undefined => {
  try {
    const origin = new URL(url).origin
    return origin === "null" ? undefined : origin
  } catch {
    return undefined
  }
}

/** The base URL the request's links may be built on, by the rules above; undefined: none. */
export const trustedBaseUrl = (request: HttpServerRequest.HttpServerRequest, settings: PublicAddressSettings): string | undefined => {
  if (settings.publicUrl !== undefined && settings.publicUrl !== "") return settings.publicUrl.replace(/\/+$/, "")
  if (settings.requestUrlFromShell === true && /^https?:\/\//i.test(request.originalUrl)) return originOf(request.originalUrl)
  const host = request.headers["host"]
  if (host === undefined || host === "") return undefined
  const origin = originOf(`http://${host}`)
  return origin !== undefined && isLoopbackHost(new URL(origin).hostname) ? origin : undefined
}

/** The Host a refused request named, as its message shows it. */
const shownHost = (request: HttpServerRequest.HttpServerRequest): string =>
  JSON.stringify((request.headers["host"] ?? "").slice(0, 100))

export const untrustedHost = (request: HttpServerRequest.HttpServerRequest) =>
  Errors.badRequest(
    "untrusted_host",
    `This server builds its links from its PUBLIC_URL, which is not set, or from a loopback Host; the Host ${shownHost(request)} is neither. ` +
      "Call it at 127.0.0.1 or localhost, or ask its operator to set PUBLIC_URL (docs/configuration.md)."
  )

/** Runs `effect` with RequestBaseUrl set for the current request; fails 400 untrusted_host when there is none. */
export const withRequestBaseUrl = <A, E, R>(
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E | Errors.BadRequest, R | HttpServerRequest.HttpServerRequest> =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const base = trustedBaseUrl(request, yield* PublicAddress)
    if (base === undefined) return yield* Effect.fail(untrustedHost(request))
    return yield* Effect.provideService(effect, RequestBaseUrl, base)
  })
