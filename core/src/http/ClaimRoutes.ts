/**
 * Claiming the owner account over HTTP (docs/accounts.md "The owner"), among the account service's
 * routes (AccountRoutes.ts builds them with its own helpers: the Origin and CSRF checks, the guards):
 *
 *   GET  /accounts/claim?token=          the claim link's page: whose account, a "Create a passkey" button
 *   POST /accounts/api/claim/options     (JSON) {token} -> {ceremony, options}: the link checked, not used
 *   POST /accounts/api/claim/verify      (JSON) {token, ceremony, response} -> {redirect} + the session cookie
 *
 * GET changes nothing (a link may be opened by a preview before the owner does).
 */
import { Effect } from "effect"
import { HttpServerRequest } from "effect/http"
import { claimPage } from "./pages/ClaimPage.ts"
import * as Pages from "./pages/Pages.ts"
import { json, site, type Site, withSessionCookie } from "./AccountRequests.ts"
import { anonymousPage, apiError, at, type Body, type Handler, type Route, type Service } from "./AccountPages.ts"
import { refusalOf } from "./Refusals.ts"


/** The route builders of AccountRoutes.ts the claim routes are made with. */
export interface ClaimRouteBuilders {
  readonly get: (path: string, handler: Handler) => Route
  readonly postAnonymousJson: (path: string, handler: (where: Site, body: Body) => Handler) => Route
  readonly ceremonyBody: (body: Body) => { readonly flow: string; readonly response: unknown; readonly name: string | undefined }
}

/** The manage page's notice after a claim (`/accounts/manage?claimed=1`). */
export const CLAIMED_NOTICE = "Your passkey is set: it signs you in here and approves the agents your applications propose."

const tokenOf = (body: Body) => typeof body?.["token"] === "string" ? body["token"] : ""

export const claimRoutes = (service: Service, { ceremonyBody, get, postAnonymousJson }: ClaimRouteBuilders): ReadonlyArray<Route> => [
  get("/claim", Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const token = new URL(request.url, "http://x").searchParams.get("token") ?? ""
    if (token === "") {
      return yield* anonymousPage((ctx) => Pages.errorPage(ctx, "Link incomplete", "This claim link has no token: open the whole link."), 400)
    }
    const where = yield* site
    const view = yield* Effect.result(service.claimView(token))
    return view._tag === "Failure"
      ? yield* anonymousPage((ctx) => Pages.errorPage(ctx, "This link cannot be used", view.failure.message), refusalOf(view.failure).status)
      : yield* anonymousPage((ctx) => claimPage(ctx, token, { ...view.success, platformUrl: where.platformUrl }))
  })),
  postAnonymousJson("/claim/options", (where, body) =>
    service.beginClaim({ token: tokenOf(body), origin: where.origin, rpId: where.rpId }).pipe(
      Effect.map((b) => json({ ceremony: b.flow, options: b.options })),
      Effect.catch(apiError)
    )),
  postAnonymousJson("/claim/verify", (where, body) =>
    service.finishClaim({ ...ceremonyBody(body), origin: where.origin, rpId: where.rpId }).pipe(
      Effect.map((done) => withSessionCookie(json({ redirect: at("/manage?claimed=1") }), where.secure, done.session)),
      Effect.catch(apiError)
    ))
]
