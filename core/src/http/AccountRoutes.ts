/**
 * The account service over HTTP (docs/accounts.md "Pages and routes"): raw routes under /accounts,
 * served by every shell with the rest of the platform (Http.ts AppRoutes). Pages (HTML, for a
 * person) and the JSON endpoints the page script calls for the passkey ceremonies; every use-case
 * is AccountService's (ordering and redeeming go to Orders and Tickets for the person's account);
 * what the pages share is in AccountPages.ts.
 *
 *   GET  /accounts                  -> /accounts/manage when signed in, else /accounts/sign-in
 *   GET  /accounts/sign-up          email + "Create a passkey"
 *   POST /accounts/api/sign-up/options|verify      (JSON) begin / finish the sign-up ceremony
 *   GET  /accounts/check-email      "we sent you a link"
 *   GET  /accounts/confirm?token=   a button (mail scanners prefetch GET links)
 *   POST /accounts/confirm          consumes the token, signs in -> /accounts/welcome
 *   GET  /accounts/welcome          create the first API key; POST creates it (secret shown once)
 *   GET  /accounts/sign-in          "Sign in with a passkey"
 *   POST /accounts/api/sign-in/options|verify      (JSON) discoverable-credential sign-in
 *   GET  /accounts/manage           email, identity, passkeys, buy credits, redeem, keys, sign-out
 *   POST /accounts/keys | /passkeys/remove | /sign-out | /buy | /redeem | /recovery/cancel  (forms)
 *   POST /accounts/api/add-passkey/options|verify  (JSON) another passkey, signed in
 *   GET  /accounts/recover          ask for a recovery link; with ?token= the emailed link's page
 *   POST /accounts/recover          mails the link (same answer whether or not the email is known)
 *   POST /accounts/api/recover/options|verify      (JSON) the new passkey, after the delay
 *   GET  /accounts/claim?token=, POST /accounts/api/claim/options|verify  the owner's claim (ClaimRoutes.ts)
 *   GET  /accounts/webauthn.js, /accounts/accounts.js  the scripts, cached for a year (versioned)
 *
 * Every POST must come from the account service's origin (Origin header) and carry the CSRF token
 * (form field `csrf` or header `x-csrf-token`); AccountRequests.ts has the cookies and checks.
 * Page errors are readable pages with the fitting status; JSON errors are the platform's shape.
 * A shell without AccountService (Lambda without SMTP_URL) answers 503 pages under /accounts.
 */
import { Effect, Option, Schema } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { AccountService } from "../accounts/AccountService.ts"
import { type SessionCall } from "../accounts/AccountTypes.ts"
import { PAGE_SCRIPT } from "./pages/PageScript.ts"
import * as Pages from "./pages/Pages.ts"
import { Catalogue } from "../catalogue/Catalogue.ts"
import * as Errors from "./Errors.ts"
import { CreateOrder } from "../payments/Orders.ts"
import { Orders } from "../payments/OrderService.ts"
import { Tickets } from "../payments/Tickets.ts"
import { answered, refusalOf } from "./Refusals.ts"
import { AccountStore } from "../keys/AccountStore.ts"
import {
  ACCOUNTS_BASE,
  AccountPagesSettings,
  clientAddress,
  cookie,
  csrfHeader,
  formFields,
  json,
  jsonBody,
  jsonError,
  page,
  sameToken,
  seeOther,
  SESSION_COOKIE,
  site,
  type Site,
  withoutSessionCookie,
  withSessionCookie
} from "./AccountRequests.ts"
import { CLAIMED_NOTICE, claimRoutes } from "./ClaimRoutes.ts"
import { withRequestBaseUrl } from "./PublicUrl.ts"
import {
  anonymous,
  anonymousCsrfOk,
  type Body,
  type Handler,
  type Route,
  anonymousPage,
  apiError,
  at,
  checkedPost,
  createdView,
  example,
  guardJson,
  guardPage,
  liveSession,
  managePage,
  personCaller,
  requireSession,
  type Response,
  type Service,
  type SignedIn
} from "./AccountPages.ts"

// ---- the routes --------------------------------------------------------------------------------

interface Form {
  readonly get: (name: string) => string | undefined
}

const ceremonyBody = (body: Body) => ({
  flow: typeof body?.["ceremony"] === "string" ? body["ceremony"] : "",
  response: body?.["response"],
  name: typeof body?.["name"] === "string" ? body["name"] : undefined
})

const begun = (b: { readonly flow: string; readonly options: unknown }) => json({ ceremony: b.flow, options: b.options })

const routes = (service: Service): ReadonlyArray<Route> => {
  const get = (path: string, handler: Handler): Route => ({ method: "GET", path: at(path), handler: guardPage(handler) })
  const postForm = (path: string, handler: Handler): Route => ({
    method: "POST",
    path: at(path),
    handler: guardPage(checkedPost(false, handler))
  })
  /** A JSON POST of an anonymous ceremony: the double-submit CSRF header is checked first. */
  const postAnonymousJson = (path: string, handler: (where: Site, body: Body) => Handler): Route => ({
    method: "POST",
    path: at(`/api${path}`),
    handler: guardJson(checkedPost(
        true,
        Effect.gen(function*() {
          if (!(yield* anonymousCsrfOk(yield* csrfHeader))) {
            return jsonError(at(`/api${path}`), 403, "The page's security token is missing or stale: reload the page and try again.", "csrf_mismatch")
          }
          return yield* handler(yield* site, yield* jsonBody)
        })
      ))
  })
  /** A JSON POST of a signed-in person: the service checks the session and its CSRF token. */
  const postSessionJson = (path: string, handler: (call: SessionCall, where: Site, body: Body) => Handler): Route => ({
    method: "POST",
    path: at(`/api${path}`),
    handler: guardJson(checkedPost(
        true,
        Effect.gen(function*() {
          const session = (yield* cookie(SESSION_COOKIE)) ?? ""
          return yield* handler({ session, csrf: yield* csrfHeader }, yield* site, yield* jsonBody)
        })
      ))
  })
  const signedInForm = (path: string, handler: (s: SignedIn, form: Form) => Handler): Route =>
    postForm(
      path,
      Effect.gen(function*() {
        const form = yield* formFields
        return yield* requireSession(service, (s) =>
          sameToken(form.get("csrf"), s.live.csrf)
            ? handler(s, form)
            : managePage(service, s, { error: "The page's security token did not match. Nothing was changed; try again." }, 403))
      })
    )

  return [

    // sign-up
    get("/sign-up", Effect.flatMap(liveSession(service), (s) =>
      s === undefined ? anonymousPage((ctx) => Pages.signUpPage(ctx)) : Effect.succeed(seeOther(at("/manage"))))),
    // Without the script (or with it failing) the form posts here: say what is needed.
    postForm("/sign-up", anonymousPage((ctx) =>
      Pages.signUpPage(ctx, { error: "Creating a passkey needs JavaScript in this browser: enable it and try again." }), 400)),
    postAnonymousJson("/sign-up/options", (where, body) =>
      Effect.gen(function*() {
        const email = typeof body?.["email"] === "string" ? body["email"] : ""
        return yield* service.beginSignUp({ email, origin: where.origin, rpId: where.rpId, clientAddress: yield* clientAddress }).pipe(
          Effect.map(begun),
          Effect.catch(apiError)
        )
      })),
    postAnonymousJson("/sign-up/verify", (where, body) =>
      service.finishSignUp({ ...ceremonyBody(body), origin: where.origin, rpId: where.rpId }).pipe(
        Effect.map(() => json({ redirect: at("/check-email") })),
        Effect.catch(apiError)
      )),
    get("/check-email", anonymousPage((ctx) => Pages.checkEmailPage(ctx))),

    // confirmation
    get("/confirm", Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const token = new URL(request.url, "http://x").searchParams.get("token") ?? ""
      if (token === "") return yield* anonymousPage((ctx) => Pages.errorPage(ctx, "Link incomplete", "This confirmation link has no token: open the whole link from the email."), 400)
      return yield* anonymousPage((ctx) => Pages.confirmPage(ctx, token))
    })),
    postForm("/confirm", Effect.gen(function*() {
      const form = yield* formFields
      const token = form.get("token") ?? ""
      if (!(yield* anonymousCsrfOk(form.get("csrf")))) {
        return yield* anonymousPage((ctx) => Pages.confirmPage(ctx, token, { error: "This page was stale. Press the button again." }), 403)
      }
      const where = yield* site
      return yield* service.confirmEmail({ token }).pipe(
        Effect.map((done) => withSessionCookie(seeOther(at("/welcome")), where.secure, done.session)),
        Effect.catch((error) =>
          anonymousPage((ctx) =>
            Pages.errorPage(ctx, "This link cannot be used", error.message, { href: at("/sign-in"), label: "Go to sign-in" }), refusalOf(error).status))
      )
    })),

    // welcome: the first key
    get("/welcome", requireSession(service, (s) =>
      Effect.map(example, (ex) => page(Pages.welcomePage(s.ctx, { email: s.live.person.email, example: ex }))))),
    postForm("/welcome", Effect.gen(function*() {
      const form = yield* formFields
      return yield* requireSession(service, (s) =>
        service.createKey({ session: s.token, csrf: form.get("csrf") ?? "", name: form.get("name") ?? "", permissions: form.all("permission") }).pipe(
          Effect.flatMap((key) =>
            Effect.map(example, (ex) => page(Pages.welcomePage(s.ctx, { email: s.live.person.email, example: ex, created: createdView(key) })))),
          Effect.catch((error) =>
            Effect.map(example, (ex) => page(Pages.welcomePage(s.ctx, { email: s.live.person.email, example: ex, error: error.message }), refusalOf(error).status)))
        ))
    })),

    // sign-in
    get("/sign-in", Effect.gen(function*() {
      if ((yield* liveSession(service)) !== undefined) return seeOther(at("/manage"))
      const request = yield* HttpServerRequest.HttpServerRequest
      const signedOut = new URL(request.url, "http://x").searchParams.has("signed_out")
      return yield* anonymousPage((ctx) => Pages.signInPage(ctx, signedOut ? { notice: "You are signed out." } : {}))
    })),
    postAnonymousJson("/sign-in/options", (where) =>
      Effect.gen(function*() {
        return yield* service.beginSignIn({ origin: where.origin, rpId: where.rpId, clientAddress: yield* clientAddress }).pipe(
          Effect.map(begun),
          Effect.catch(apiError)
        )
      })),
    postAnonymousJson("/sign-in/verify", (where, body) =>
      service.finishSignIn({ ...ceremonyBody(body), origin: where.origin, rpId: where.rpId }).pipe(
        Effect.map((done) => withSessionCookie(json({ redirect: at("/manage") }), where.secure, done.session)),
        Effect.catch(apiError)
      )),

    // manage
    get("/manage", Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const query = new URL(request.url, "http://x").searchParams
      const notice = query.has("added") ? "Passkey added." : query.has("claimed") ? CLAIMED_NOTICE : undefined
      return yield* requireSession(service, (s) => managePage(service, s, { notice }))
    })),
    postForm("/keys", Effect.gen(function*() {
      const form = yield* formFields
      return yield* requireSession(service, (s) =>
        service.createKey({ session: s.token, csrf: form.get("csrf") ?? "", name: form.get("name") ?? "", permissions: form.all("permission") }).pipe(
          Effect.flatMap((key) => managePage(service, s, { created: createdView(key) })),
          Effect.catch((error) => managePage(service, s, { error: error.message }, refusalOf(error).status))
        ))
    })),
    postForm("/passkeys/remove", Effect.gen(function*() {
      const form = yield* formFields
      return yield* requireSession(service, (s) =>
        service.removePasskey({ session: s.token, csrf: form.get("csrf") ?? "", credentialId: form.get("credential_id") ?? "" }).pipe(
          Effect.flatMap(() => managePage(service, s, { notice: "Passkey removed." })),
          Effect.catch((error) => managePage(service, s, { error: error.message }, refusalOf(error).status))
        ))
    })),
    postSessionJson("/add-passkey/options", (call, where) =>
      service.beginAddPasskey({ ...call, origin: where.origin, rpId: where.rpId }).pipe(Effect.map(begun), Effect.catch(apiError))),
    postSessionJson("/add-passkey/verify", (call, where, body) =>
      service.finishAddPasskey({ ...call, ...ceremonyBody(body), origin: where.origin, rpId: where.rpId }).pipe(
        Effect.map(() => json({ redirect: at("/manage?added=1") })),
        Effect.catch(apiError)
      )),
    postForm("/sign-out", Effect.gen(function*() {
      const form = yield* formFields
      const where = yield* site
      const session = (yield* cookie(SESSION_COOKIE)) ?? ""
      return yield* service.signOut({ session, csrf: form.get("csrf") ?? "" }).pipe(
        Effect.map(() => withoutSessionCookie(seeOther(at("/sign-in?signed_out=1")), where.secure)),
        Effect.catch((error) =>
          error.reason === "session_required"
            ? Effect.succeed(withoutSessionCookie(seeOther(at("/sign-in?signed_out=1")), where.secure))
            : requireSession(service, (s) => managePage(service, s, { error: error.message }, refusalOf(error).status)))
      )
    })),
    signedInForm("/recovery/cancel", (s, form) =>
      service.cancelRecovery({ session: s.token, csrf: form.get("csrf") ?? "" }).pipe(
        Effect.flatMap(() => managePage(service, s, { notice: "The recovery was cancelled; its link no longer works." })),
        Effect.catch((error) => managePage(service, s, { error: error.message }, refusalOf(error).status))
      )),

    // buying and redeeming, for the person's account
    signedInForm("/buy", (s, form) =>
      Effect.gen(function*() {
        const caller = yield* personCaller(s.live)
        if (caller === undefined) return yield* managePage(service, s, { error: "Your account is not ready yet. Try again shortly." }, 409)
        const amount = Number((form.get("amount_usd") ?? "").trim())
        const body = yield* Schema.decodeUnknownEffect(CreateOrder)({ type: "credits", amount_usd: amount, gift: form.get("gift") === "true" }).pipe(
          Effect.option
        )
        if (Option.isNone(body)) return yield* managePage(service, s, { error: "Enter a whole number of US dollars from 5 to 5000." }, 400)
        const result = yield* withRequestBaseUrl(
          Effect.flatMap(Orders, (service) => {
            const orders = answered(service)
            return Effect.flatMap(orders.create(caller, body.value), (order) => orders.pay(caller, order.id, { method: "card" }))
          })
        ).pipe(Effect.result)
        if (result._tag === "Failure") return yield* managePage(service, s, { error: result.failure.error.message }, 400)
        const order = result.success
        return page(Pages.orderPage(s.ctx, {
          id: order.id,
          title: order.title,
          amount_usd: order.amount_usd,
          pay_url: order.pay_url,
          gift: form.get("gift") === "true"
        }))
      })),
    signedInForm("/redeem", (s, form) =>
      Effect.gen(function*() {
        const caller = yield* personCaller(s.live)
        if (caller === undefined) return yield* managePage(service, s, { error: "Your account is not ready yet. Try again shortly." }, 409)
        const code = (form.get("code") ?? "").trim()
        if (code === "") return yield* managePage(service, s, { error: "Enter the ticket's code." }, 400)
        const result = yield* Effect.flatMap(Tickets, (tickets) => answered(tickets).redeem(caller, code)).pipe(Effect.result)
        if (result._tag === "Failure") {
          const status = result.failure instanceof Errors.NotFound ? 404 : 409
          return yield* managePage(service, s, { error: result.failure.error.message }, status)
        }
        return yield* managePage(service, s, { notice: `Ticket redeemed: ${result.success.credits} credits added to your account.` })
      })),

    // recovery
    get("/recover", Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const token = new URL(request.url, "http://x").searchParams.get("token")
      return yield* token === null || token === ""
        ? anonymousPage((ctx) => Pages.recoverPage(ctx))
        : anonymousPage((ctx) => Pages.recoveryLinkPage(ctx, token))
    })),
    postForm("/recover", Effect.gen(function*() {
      const form = yield* formFields
      if (!(yield* anonymousCsrfOk(form.get("csrf")))) {
        return yield* anonymousPage((ctx) => Pages.recoverPage(ctx, { error: "This page was stale. Enter your address again." }), 403)
      }
      return yield* service.requestRecovery({ email: form.get("email") ?? "", clientAddress: yield* clientAddress }).pipe(
        Effect.flatMap(() => anonymousPage((ctx) => Pages.recoverPage(ctx, { sent: true }))),
        Effect.catch((error) => anonymousPage((ctx) => Pages.recoverPage(ctx, { error: error.message }), refusalOf(error).status))
      )
    })),
    postAnonymousJson("/recover/options", (where, body) =>
      service.beginRecovery({ token: typeof body?.["token"] === "string" ? body["token"] : "", origin: where.origin, rpId: where.rpId }).pipe(
        Effect.map((b) => json({ ceremony: b.flow, options: b.options, link: b.link })),
        Effect.catch(apiError)
      )),
    postAnonymousJson("/recover/verify", (where, body) =>
      service.finishRecovery({ ...ceremonyBody(body), origin: where.origin, rpId: where.rpId }).pipe(
        Effect.map((done) => withSessionCookie(json({ redirect: at("/manage") }), where.secure, done.session)),
        Effect.catch(apiError)
      )),

    ...claimRoutes(service, { get, postAnonymousJson, ceremonyBody })
  ]
}

// ---- scripts -----------------------------------------------------------------------------------

const script = (text: string) =>
  HttpServerResponse.setHeaders(HttpServerResponse.text(text, { contentType: "text/javascript; charset=utf-8" }), {
    // The pages name the scripts with their contents' hash (`?v=`), so a new version is a new address.
    "cache-control": "public, max-age=31536000, immutable",
    "x-content-type-options": "nosniff"
  })

const missingBundle = `window.SimpleWebAuthnBrowser = undefined; console.error("The account service has no WebAuthn bundle: the shell must provide AccountPagesSettings.webauthnBundle.");`

// ---- the layer ---------------------------------------------------------------------------------

/**
 * The account service's routes. Needs AccountService from the context when it is there; without
 * it (a shell that does not wire the account service yet) every /accounts address answers 503.
 */
export const AccountRoutes = HttpRouter.use((router) =>
  Effect.gen(function*() {
    const settings = yield* AccountPagesSettings
    const bundle = settings.webauthnBundle ?? missingBundle
    yield* router.add("GET", at("/webauthn.js"), Effect.succeed(script(bundle)))
    yield* router.add("GET", at("/accounts.js"), Effect.succeed(script(PAGE_SCRIPT)))
    const service = yield* Effect.serviceOption(AccountService)
    if (Option.isNone(service)) {
      const unavailable = Effect.succeed(page(
        Pages.errorPage(
          { base: ACCOUNTS_BASE, csrf: "" },
          "Accounts are not available here",
          "This server does not run the account service yet."
        ),
        503
      ))
      yield* router.add("*", at("/*"), unavailable) // also /accounts itself
      return
    }
    // The routes' services, taken once here (the router's handlers get only the request's).
    const services = yield* Effect.context<Catalogue | AccountStore | Orders | Tickets>()
    for (const route of routes(service.value)) {
      yield* router.add(route.method, route.path, Effect.provide(route.handler, services))
    }
    // /accounts itself, and a page for any other address under it (not the API's JSON 404).
    yield* router.add("*", at("/*"), guardPage(Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const path = new URL(request.url, "http://x").pathname.replace(/\/+$/, "")
      if (path === ACCOUNTS_BASE && request.method === "GET") {
        return seeOther(at((yield* liveSession(service.value)) === undefined ? "/sign-in" : "/manage"))
      }
      return yield* anonymousPage((ctx) =>
        Pages.errorPage(ctx, "Page not found", "There is no page at this address.", { href: at(""), label: "Go to your account" }), 404)
    })))
  })
)
