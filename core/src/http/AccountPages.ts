/**
 * What the account service's pages share (AccountRoutes.ts): the page context (CSRF token, script
 * version), the session behind the cookie, the Origin and CSRF checks of a POST, the guards that
 * turn defects into pages, the "call a model" example, the manage page, and the person's account
 * as a Caller for Orders and Tickets.
 */
import { refusalOf } from "./Refusals.ts"
import { Effect } from "effect"
import { HttpRouter, HttpServerRequest, type HttpServerResponse } from "effect/http"
import { type AccountError, AccountService } from "../accounts/AccountService.ts"
import { type LiveSession } from "../accounts/AccountTypes.ts"
import { PAGE_SCRIPT } from "./pages/PageScript.ts"
import * as Pages from "./pages/Pages.ts"
import type { Caller } from "../keys/Caller.ts"
import { Catalogue } from "../catalogue/Catalogue.ts"
import type { Orders } from "../payments/OrderService.ts"
import { Tickets } from "../payments/Tickets.ts"
import { AccountStore } from "../keys/AccountStore.ts"
import { sha256Hex } from "../kernel/Sha256.ts"

/** A JSON body as the account pages' API reads it. */
export type Body = Readonly<Record<string, unknown>> | undefined

/** What an account page's handler needs, and a route of the account service. */
type Needs = HttpServerRequest.HttpServerRequest | Catalogue | AccountStore | Orders | Tickets
export type Handler = Effect.Effect<Response, never, Needs>

export interface Route {
  readonly method: "GET" | "POST"
  readonly path: HttpRouter.PathInput
  readonly handler: Handler
}
import {
  ACCOUNTS_BASE,
  AccountPagesSettings,
  catchDefects,
  cookie,
  CSRF_COOKIE,
  formFields,
  jsonError,
  newCsrfToken,
  originProblem,
  page,
  sameToken,
  seeOther,
  SESSION_COOKIE,
  site,
  withCsrfCookie
} from "./AccountRequests.ts"

export type Service = AccountService["Service"]
export type Response = HttpServerResponse.HttpServerResponse

export const at = (path: string): HttpRouter.PathInput => `${ACCOUNTS_BASE}${path}` as HttpRouter.PathInput

export const errorPage = (ctx: Pages.PageContext) => (title: string, message: string) => Pages.errorPage(ctx, title, message)

let versionMemo: { readonly bundle: string | undefined; readonly version: string } | undefined

/** The scripts' version: the first hex digits of SHA-256 of both scripts (computed once per bundle). */
export const scriptsVersion = Effect.map(AccountPagesSettings, (settings) => {
  if (versionMemo === undefined || versionMemo.bundle !== settings.webauthnBundle) {
    versionMemo = { bundle: settings.webauthnBundle, version: sha256Hex(`${settings.webauthnBundle ?? ""}\n${PAGE_SCRIPT}`).slice(0, 12) }
  }
  return versionMemo.version
})

export const pageCtx = (csrf: string) => Effect.map(scriptsVersion, (version): Pages.PageContext => ({ base: ACCOUNTS_BASE, csrf, version }))

/** The page context of an anonymous visitor: their double-submit CSRF token, made when missing. */
export const anonymous = Effect.gen(function*() {
  const existing = yield* cookie(CSRF_COOKIE)
  const token = existing ?? (yield* newCsrfToken)
  return { ctx: yield* pageCtx(token), fresh: existing === undefined }
})

/** An anonymous page, with the CSRF cookie set when it was missing. */
export const anonymousPage = (render: (ctx: Pages.PageContext) => string, status = 200) =>
  Effect.gen(function*() {
    const { ctx, fresh } = yield* anonymous
    const response = page(render(ctx), status)
    return fresh ? withCsrfCookie(response, (yield* site).secure, ctx.csrf) : response
  })

/** The live session behind the cookie, if any. */
export const liveSession = (service: Service) =>
  Effect.flatMap(cookie(SESSION_COOKIE), (token) =>
    token === undefined
      ? Effect.succeed(undefined)
      : Effect.map(service.session(token), (live) => live === undefined ? undefined : { token, live }))

export interface SignedIn {
  readonly token: string
  readonly live: LiveSession
  readonly ctx: Pages.PageContext
}

/** Runs `then` for a signed-in person; otherwise to the sign-in page. */
export const requireSession = <R>(service: Service, then: (s: SignedIn) => Effect.Effect<Response, never, R>) =>
  Effect.flatMap(liveSession(service), (found) =>
    found === undefined
      ? Effect.succeed(seeOther(at("/sign-in")))
      : Effect.flatMap(pageCtx(found.live.csrf), (ctx) => then({ ...found, ctx })))

/** The anonymous POST's CSRF token (field or header) matches its cookie. */
export const anonymousCsrfOk = (sent: string | undefined) => Effect.map(cookie(CSRF_COOKIE), (kept) => sameToken(sent, kept))

/** Every POST: the Origin must be the account service's; a page or a JSON error otherwise. */
export const checkedPost = <R>(asJson: boolean, handler: Effect.Effect<Response, never, R>) =>
  Effect.gen(function*() {
    const where = yield* site
    const problem = yield* originProblem(where.origin)
    if (problem === undefined) return yield* handler
    const request = yield* HttpServerRequest.HttpServerRequest
    if (asJson) return jsonError(new URL(request.url, "http://x").pathname, 403, problem, "origin_mismatch")
    const { ctx } = yield* anonymous
    return page(Pages.errorPage(ctx, "Request refused", problem), 403)
  })

export const guardPage = <R>(handler: Effect.Effect<Response, never, R>) =>
  catchDefects(handler, false, errorPage({ base: ACCOUNTS_BASE, csrf: "" }))
export const guardJson = <R>(handler: Effect.Effect<Response, never, R>) =>
  catchDefects(handler, true, errorPage({ base: ACCOUNTS_BASE, csrf: "" }))

export const apiError = (error: AccountError) =>
  Effect.map(HttpServerRequest.HttpServerRequest, (request) =>
    jsonError(new URL(request.url, "http://x").pathname, refusalOf(error).status, error.message, error.reason, error.retry_after_seconds))

/** The "call a model" example: the platform's /v1 and its first chat model. */
export const example = Effect.gen(function*() {
  const where = yield* site
  const catalogue = yield* Catalogue
  const models = catalogue.config.models
  const chat = models.find((m) => m.endpoint === "/v1/chat/completions") ?? models[0]
  return { inferenceBase: `${where.platformUrl}/v1`, model: chat?.id ?? "MODEL_ID" } satisfies Pages.CallExample
})

export const createdView = (key: { id: string; name: string; prefix: string; permissions: ReadonlyArray<string>; secret: string }) => ({
  id: key.id,
  name: key.name,
  prefix: key.prefix,
  permissions: key.permissions,
  secret: key.secret
})

// ---- the manage page ---------------------------------------------------------------------------

export interface ManageExtras {
  readonly created?: Pages.CreatedKeyView | undefined
  readonly notice?: string | undefined
  readonly error?: string | undefined
}

export const managePage = (service: Service, s: SignedIn, extras: ManageExtras = {}, status = 200) =>
  Effect.gen(function*() {
    const passkeys = yield* Effect.orElseSucceed(service.listPasskeys(s.token), () => [])
    const pending = yield* Effect.orElseSucceed(service.pendingRecovery(s.token), () => undefined)
    const caller = yield* personCaller(s.live)
    const tickets = caller === undefined
      ? []
      : (yield* Effect.flatMap(Tickets, (t) => t.list(caller))).data
    const identity = s.live.person.account_id === null
      ? { state: "provisioning", did: null, wallet_address: null, error: null }
      : yield* service.identityOf(s.live.person.account_id)
    return page(
      Pages.managePage(s.ctx, {
        email: s.live.person.email,
        identity,
        passkeys,
        example: yield* example,
        created: extras.created,
        pendingRecovery: pending,
        tickets,
        notice: extras.notice,
        error: extras.error
      }),
      status
    )
  })

/**
 * Orders and tickets for the signed-in person's account. Orders and Tickets read only the caller's
 * account; the key is a stand-in naming the session (no key made the request).
 */
export const personCaller = (live: LiveSession) =>
  Effect.gen(function*() {
    if (live.person.account_id === null) return undefined
    const account = yield* Effect.flatMap(AccountStore, (store) => store.get(live.person.account_id!))
    if (account === undefined) return undefined
    const caller: Caller = {
      account,
      key: {
        id: "account-service-session",
        account_id: account.id,
        name: "account service session",
        prefix: "",
        secret_hash: "",
        permissions: ["read", "manage"],
        machine_id: null,
        subscription_id: null,
        rental_id: null,
        agent_id: null,
        created_at: account.created_at,
        last_used_at: null,
        revoked_at: null
      }
    }
    return caller
  })

/** A person's page while their account is not made yet (409): it is made shortly after sign-up. */
export const notReadyPage = (s: SignedIn) =>
  page(Pages.errorPage(s.ctx, "Not ready yet", "Your account is not ready yet. Try again shortly.", { href: at("/manage"), label: "Your account" }), 409)

/** `then` with the signed-in person's account as the caller, or the not-ready page. */
export const withPersonCaller = <R>(s: SignedIn, then: (caller: Caller) => Effect.Effect<Response, never, R>) =>
  Effect.flatMap(personCaller(s.live), (caller) => caller === undefined ? Effect.succeed(notReadyPage(s)) : then(caller))

export type FormFields = { readonly get: (name: string) => string | undefined }

/**
 * A form post of a person's page (billing, plans): Origin checked, then the session, then its CSRF
 * token (a mismatch is shown with `refused`, 403, and changes nothing), then `then`.
 */
export const personFormPost = <R>(
  service: Service,
  refused: (s: SignedIn, caller: Caller, error: string, status: number) => Effect.Effect<Response, never, R>,
  then: (s: SignedIn, caller: Caller, form: FormFields) => Effect.Effect<Response, never, R>
) =>
  guardPage(checkedPost(
    false,
    Effect.gen(function*() {
      const form = yield* formFields
      return yield* requireSession(service, (s) =>
        withPersonCaller(s, (caller) =>
          sameToken(form.get("csrf"), s.live.csrf)
            ? then(s, caller, form)
            : refused(s, caller, "The page's security token did not match. Nothing was changed; try again.", 403)))
    })
  ))
