/**
 * Agent approvals over HTTP at the account service (docs/agents.md "Approvals"), beside its other
 * routes (AccountRoutes.ts) and served by the same shells:
 *
 *   POST /accounts/api/accounts/{sub}/agent-approvals        (JSON, the platform) -> {id, approve_url}
 *   GET  /accounts/api/accounts/{sub}/agent-approvals/{id}   (JSON, the platform) -> the state
 *   GET  /accounts/approve/{id}                              the approval page (the owner)
 *   POST /accounts/api/approve/options|verify                (JSON, the page script) approve with a passkey
 *
 * The platform's calls carry HTTP Basic with its client id and secret (AccountsConfig.platformClient:
 * the secret's SHA-256 only is configured here) or a service assertion, `Bearer <JWT>` from a
 * trusted service (AccountsConfig.trustedServices; agents/ServiceAssertions.ts) whose `aud` is the
 * URL called: ACCOUNTS_URL, which the client builds its calls from, and the path as the request
 * arrived (not the Host header, which a proxy may rewrite). Anything else is 401
 * client_unauthorized. The page's POSTs are checked like every account page's: same Origin, the
 * double-submit CSRF token.
 */
import { Clock, Effect, Option, Schema } from "effect"
import { HttpRouter, HttpServerRequest } from "effect/http"
import { Approvals } from "../accounts/Approvals.ts"
import { AccountsConfig } from "../accounts/AccountsConfig.ts"
import { approvalPage } from "./pages/ApprovalPage.ts"
import { accountError } from "../accounts/AccountErrors.ts"
import { CreateApprovalWire } from "../agents/ApprovalWire.ts"
import { jtiOnceIn, trustedMap, verify } from "../agents/ServiceAssertions.ts"
import { RateLimitStore } from "../kernel/RateLimitStore.ts"
import { sha256Hex } from "../kernel/Sha256.ts"
import { ACCOUNTS_BASE, csrfHeader, json, jsonBody, jsonError, sameToken, site } from "./AccountRequests.ts"
import * as Pages from "./pages/Pages.ts"
import { anonymousCsrfOk, anonymousPage, apiError, at, checkedPost, guardJson, guardPage, type Response } from "./AccountPages.ts"
import { refusalOf } from "./Refusals.ts"

const param = (name: string) => Effect.map(HttpRouter.params, (params) => params[name] ?? "")

/** The Basic credentials of a request, if it carries some. */
const basicCredentials = Effect.map(HttpServerRequest.HttpServerRequest, (request) => {
  const header = request.headers["authorization"] ?? ""
  if (!header.startsWith("Basic ")) return undefined
  let decoded: string
  try {
    decoded = atob(header.slice(6).trim())
  } catch {
    return undefined
  }
  const colon = decoded.indexOf(":")
  return colon < 0 ? undefined : { id: decoded.slice(0, colon), secret: decoded.slice(colon + 1) }
})

export const ApprovalRoutes = HttpRouter.use((router) =>
  Effect.gen(function*() {
    const found = yield* Effect.serviceOption(Approvals)
    if (Option.isNone(found)) return
    const approvals = found.value
    // Where Approvals is, so is AccountsConfig (the account service's layer); read as optional to need nothing more.
    const config = Option.getOrUndefined(yield* Effect.serviceOption(AccountsConfig))
    const client = config?.platformClient
    const trusted = trustedMap(config?.trustedServices)
    // The store every process shares (the account service's layer needs it): a jti is used once.
    const store = Option.getOrUndefined(yield* Effect.serviceOption(RateLimitStore))
    const jtiOnce = store === undefined ? undefined : jtiOnceIn(store)

    const unauthorized = (why: string) =>
      apiError(accountError("client_unauthorized", `The agent approvals API takes the platform's client credentials (HTTP Basic) or a service assertion (Bearer): ${why}.`))

    /** A service assertion for this very URL: ACCOUNTS_URL and the path as it arrived. */
    const assertionOk = (token: string) =>
      Effect.gen(function*() {
        if (jtiOnce === undefined || trusted.size === 0) return "no service is trusted"
        const request = yield* HttpServerRequest.HttpServerRequest
        const path = new URL(request.url, "http://x").pathname
        const audience = (yield* site).accountsUrl + (path.startsWith(ACCOUNTS_BASE) ? path.slice(ACCOUNTS_BASE.length) : path)
        const now = yield* Clock.currentTimeMillis
        const result = yield* Effect.result(verify(token, { audience, trusted, jtiOnce, now }))
        return result._tag === "Success" ? undefined : `the service assertion was refused (${result.failure.reason})`
      })

    /** The platform's call: refused unless it carries a valid assertion or the configured client id and secret. */
    const platformOnly = (handler: Effect.Effect<Response, never, HttpServerRequest.HttpServerRequest | HttpRouter.RouteContext>) =>
      guardJson(Effect.gen(function*() {
        const header = (yield* HttpServerRequest.HttpServerRequest).headers["authorization"] ?? ""
        if (/^bearer /i.test(header)) {
          const refused = yield* assertionOk(header.slice(7).trim())
          return refused === undefined ? yield* handler : yield* unauthorized(refused)
        }
        const sent = yield* basicCredentials
        const ok = client !== undefined && sent !== undefined && sent.id === client.id && sameToken(sha256Hex(sent.secret), client.secretSha256)
        if (!ok) return yield* unauthorized("the credentials are missing or wrong")
        return yield* handler
      }))

    yield* router.add("POST", at("/api/accounts/:sub/agent-approvals"), platformOnly(Effect.gen(function*() {
      const body = yield* Schema.decodeUnknownEffect(CreateApprovalWire)(yield* jsonBody).pipe(Effect.option)
      if (Option.isNone(body)) {
        return yield* apiError(accountError("invalid_request", "The body must be {kind, settings?, serving_nodes?, agent_did?, return_to?} as the approvals API describes."))
      }
      return yield* approvals.create(yield* param("sub"), body.value).pipe(Effect.map((created) => json(created)), Effect.catch(apiError))
    })))

    yield* router.add("GET", at("/api/accounts/:sub/agent-approvals/:id"), platformOnly(
      Effect.gen(function*() {
        return yield* approvals.read(yield* param("sub"), yield* param("id")).pipe(Effect.map((result) => json(result)), Effect.catch(apiError))
      })
    ))

    yield* router.add("GET", at("/approve/:id"), guardPage(Effect.gen(function*() {
      const view = yield* Effect.result(approvals.view(yield* param("id")))
      if (view._tag === "Failure") {
        return yield* anonymousPage((ctx) => Pages.errorPage(ctx, "No such approval", view.failure.message), refusalOf(view.failure).status)
      }
      return yield* anonymousPage((ctx) => approvalPage(ctx, view.success))
    })))

    /** The page script's JSON POSTs: same Origin and the double-submit CSRF token first. */
    const pagePost = (path: string, handler: (approvalId: string, body: Readonly<Record<string, unknown>> | undefined) => Effect.Effect<Response, never, HttpServerRequest.HttpServerRequest>) =>
      router.add("POST", at(`/api${path}`), guardJson(checkedPost(true, Effect.gen(function*() {
        if (!(yield* anonymousCsrfOk(yield* csrfHeader))) {
          return jsonError(at(`/api${path}`), 403, "The page's security token is missing or stale: reload the page and try again.", "csrf_mismatch")
        }
        const body = yield* jsonBody
        const approvalId = typeof body?.["approval"] === "string" ? body["approval"] : ""
        return yield* handler(approvalId, body)
      }))))

    yield* pagePost("/approve/options", (id) =>
      Effect.gen(function*() {
        const where = yield* site
        return yield* approvals.beginApprove({ id, origin: where.origin, rpId: where.rpId }).pipe(
          Effect.map((b) => json({ ceremony: b.flow, options: b.options })),
          Effect.catch(apiError)
        )
      }))
    yield* pagePost("/approve/verify", (id, body) =>
      Effect.gen(function*() {
        const where = yield* site
        return yield* approvals.finishApprove({
          id,
          flow: typeof body?.["ceremony"] === "string" ? body["ceremony"] : "",
          response: body?.["response"],
          origin: where.origin,
          rpId: where.rpId
        }).pipe(Effect.map(() => json({ redirect: at(`/approve/${id}`) })), Effect.catch(apiError))
      }))
  })
)
