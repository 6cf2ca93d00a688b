/**
 * What the account service's routes (AccountRoutes.ts) read from a request and write on a
 * response: where the service lives (its origin and WebAuthn RP ID), its cookies, the CSRF and
 * Origin checks, form and JSON bodies, and the answers (pages for a person, JSON in the platform's
 * error shape for the page script). docs/accounts.md "Pages and routes".
 *
 * - The session cookie (`mp_session`) holds the session token: HttpOnly, SameSite=Lax,
 *   Path=/accounts, Secure when the account service's URL is https, expiring with the session.
 * - Before sign-in, forms are protected by a double-submit token: the `mp_csrf` cookie (same
 *   attributes, for the browser session) and the same value in the form's `csrf` field or the
 *   `x-csrf-token` header. Signed in, the session's own CSRF token is used and AccountService checks
 *   it (LiveSession.csrf).
 * - Every POST must carry an Origin header equal to the account service's origin.
 */
import { Cause, Context, Effect, Option } from "effect"
import { HttpServerRequest, HttpServerResponse, UrlParams } from "effect/http"
import { AccountsConfig } from "../accounts/AccountService.ts"
import { type RelyingParty } from "../accounts/AccountTypes.ts"
import { base64url, randomBytes } from "../kernel/Ids.ts"
import { sha256Hex } from "../kernel/Sha256.ts"
import { isStoreUnavailableCause, STORE_RETRY_AFTER_SECONDS } from "../kernel/StoreUnavailable.ts"
import { errorResponse } from "./ErrorShape.ts"
import { trustedBaseUrl } from "./PublicUrl.ts"
import { PublicAddress } from "../kernel/RequestBaseUrl.ts"

/** The base path every account route lives under. */
export const ACCOUNTS_BASE = "/accounts"
export const SESSION_COOKIE = "mp_session"
export const CSRF_COOKIE = "mp_csrf"
export const CSRF_HEADER = "x-csrf-token"

/**
 * What the shell hands the account pages: the @simplewebauthn/browser UMD bundle's text (core
 * reads no files; the Node shell reads it from node_modules), and the platform's public URL for
 * the "call a model" examples (unset: the request's own origin).
 */
export interface AccountPagesSettings {
  readonly webauthnBundle?: string | undefined
  readonly platformUrl?: string | undefined
}

export const AccountPagesSettings = Context.Reference<AccountPagesSettings>(
  "@model-platform/core/http/AccountPagesSettings",
  { defaultValue: () => ({}) }
)

/** Where the account service lives, as this request sees it. */
export interface Site extends RelyingParty {
  /** The account service's base URL (ACCOUNTS_URL), no trailing slash. */
  readonly accountsUrl: string
  /** Cookies get Secure when the account service is served over https. */
  readonly secure: boolean
  /** The platform's base URL, for the inference examples. */
  readonly platformUrl: string
}

/**
 * The account service's origin and RP ID: ACCOUNTS_URL's when configured, else the platform's
 * public address as PublicUrl.ts trusts it (never a Host the client chose), else localhost.
 */
export const site = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const config = yield* Effect.serviceOption(AccountsConfig)
  const pages = yield* AccountPagesSettings
  const own = trustedBaseUrl(request, yield* PublicAddress)
  const accountsUrl = Option.match(config, {
    onNone: () => (own ?? "http://localhost") + ACCOUNTS_BASE,
    onSome: (c) => c.accountsUrl.replace(/\/+$/, "")
  })
  const url = new URL(accountsUrl)
  return {
    accountsUrl,
    origin: url.origin,
    rpId: url.hostname,
    secure: url.protocol === "https:",
    platformUrl: (pages.platformUrl ?? own ?? url.origin).replace(/\/+$/, "")
  } satisfies Site
})

export const clientAddress = Effect.map(
  HttpServerRequest.HttpServerRequest,
  (request) => Option.getOrElse(request.remoteAddress, () => "unknown")
)

export const cookie = (name: string) =>
  Effect.map(HttpServerRequest.HttpServerRequest, (request) => {
    const value = request.cookies[name]
    return value === undefined || value === "" ? undefined : value
  })

/** A POST whose Origin header is not the account service's (a cross-site form, or no Origin at all). */
export const originProblem = (expected: string) =>
  Effect.map(HttpServerRequest.HttpServerRequest, (request): string | undefined => {
    const origin = request.headers["origin"]
    if (origin === undefined) return "This request did not say where it came from (no Origin header)."
    if (origin !== expected) return `This request came from ${origin}, not from the account service (${expected}).`
    return undefined
  })

/** The form fields of a POST (application/x-www-form-urlencoded); an unreadable body is empty. */
export const formFields = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const params = yield* Effect.orElseSucceed(request.urlParamsBody, () => UrlParams.empty)
  return {
    get: (name: string) => Option.getOrUndefined(UrlParams.getFirst(params, name)),
    all: (name: string) => UrlParams.getAll(params, name)
  }
})

/** The JSON body of a POST as an object, or undefined when it is not one. */
export const jsonBody = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const json = yield* Effect.orElseSucceed(request.json, () => undefined)
  return typeof json === "object" && json !== null && !Array.isArray(json)
    ? json as Readonly<Record<string, unknown>>
    : undefined
})

export const csrfHeader = Effect.map(HttpServerRequest.HttpServerRequest, (request) => request.headers[CSRF_HEADER] ?? "")

/** A new anonymous CSRF token (for the double-submit cookie). */
export const newCsrfToken = Effect.map(randomBytes(32), base64url)

/** Compares two tokens by their hashes, so the comparison's time says nothing about the token. */
export const sameToken = (a: string | undefined, b: string | undefined): boolean =>
  a !== undefined && b !== undefined && a !== "" && sha256Hex(a) === sha256Hex(b)

// ---- answers ----------------------------------------------------------------------------------

const PAGE_HEADERS = {
  "cache-control": "no-store",
  "x-frame-options": "DENY",
  // Links carry one-time tokens: never send them to another site as a Referer. (Not no-referrer:
  // with it Chromium sends `Origin: null` on the pages' own form posts, which the Origin check refuses.)
  "referrer-policy": "same-origin",
  "x-content-type-options": "nosniff",
  "content-security-policy": "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'unsafe-inline'; " +
    "img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
}

export const page = (html: string, status = 200) =>
  HttpServerResponse.setHeaders(HttpServerResponse.html(html), PAGE_HEADERS).pipe(HttpServerResponse.setStatus(status))

export const seeOther = (location: string) =>
  HttpServerResponse.setHeaders(HttpServerResponse.redirect(location, { status: 303 }), { "cache-control": "no-store" })

export const json = (body: unknown, status = 200) =>
  HttpServerResponse.setHeaders(HttpServerResponse.jsonUnsafe(body, { status }), { "cache-control": "no-store" })

/** An error of the JSON endpoints, in the platform's shape. */
export const jsonError = (path: string, status: number, message: string, code: string, retryAfterSeconds?: number) => {
  const response = HttpServerResponse.setHeader(errorResponse(path, status, message, code), "cache-control", "no-store")
  return retryAfterSeconds === undefined
    ? response
    : HttpServerResponse.setHeader(response, "retry-after", String(retryAfterSeconds))
}

const cookieOptions = (secure: boolean) => ({ httpOnly: true, sameSite: "lax" as const, path: ACCOUNTS_BASE, secure })

export const withSessionCookie = (
  response: HttpServerResponse.HttpServerResponse,
  secure: boolean,
  session: { readonly token: string; readonly expires_at: string }
) => HttpServerResponse.setCookieUnsafe(response, SESSION_COOKIE, session.token, {
  ...cookieOptions(secure),
  expires: new Date(session.expires_at)
})

export const withoutSessionCookie = (response: HttpServerResponse.HttpServerResponse, secure: boolean) =>
  HttpServerResponse.setCookieUnsafe(response, SESSION_COOKIE, "", { ...cookieOptions(secure), expires: new Date(0) })

export const withCsrfCookie = (response: HttpServerResponse.HttpServerResponse, secure: boolean, token: string) =>
  HttpServerResponse.setCookieUnsafe(response, CSRF_COOKIE, token, cookieOptions(secure))

/**
 * Answers a defect as a page (or JSON under /api): 503 when the store cannot be reached, else 500
 * after logging it. The global error middleware would answer JSON, which a person cannot read.
 */
export const catchDefects = <R>(
  handler: Effect.Effect<HttpServerResponse.HttpServerResponse, never, R>,
  asJson: boolean,
  errorPage: (title: string, message: string) => string
): Effect.Effect<HttpServerResponse.HttpServerResponse, never, R | HttpServerRequest.HttpServerRequest> =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const path = new URL(request.url, "http://x").pathname
    return yield* handler.pipe(
      Effect.catchCause((cause) => {
        if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause)
        if (isStoreUnavailableCause(cause)) {
          const message = "The account service cannot reach its database right now. Try again in a moment."
          const response = asJson
            ? jsonError(path, 503, message, "store_unavailable")
            : page(errorPage("Try again shortly", message), 503)
          return Effect.as(
            Effect.logWarning(`account page answered 503: ${String(Cause.squash(cause))}`),
            HttpServerResponse.setHeader(response, "retry-after", String(STORE_RETRY_AFTER_SECONDS))
          )
        }
        const message = "Something went wrong on our side; it has been logged. Try again."
        return Effect.as(
          Effect.logError("account page failed", cause),
          asJson ? jsonError(path, 500, message, "internal_error") : page(errorPage("Something went wrong", message), 500)
        )
      })
    )
  })
