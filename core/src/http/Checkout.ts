/**
 * The checkout pages the platform serves for a person (docs/payments.md "Card"): raw routes
 * answering HTML, not part of the JSON API contract. With the built-in test processor (its pages
 * are the platform's) they are the card form:
 *
 *   GET  /checkout/{session}  the card form, or the paid / expired page
 *   POST /checkout/{session}  form fields card_number, expiry (MM/YY), cvc
 *                             (application/x-www-form-urlencoded) -> the paid or declined page
 *
 * With a processor that has its own page (Stripe), GET /checkout/{session} is where the person
 * comes back to: the platform asks the processor what happened (CardCheckouts.returned), pays the
 * order if it was paid and shows the paid page, or says it is not paid (with the way back to the
 * processor's page), processing, or expired. There is no form to POST to.
 *
 * Statuses tell a script what happened; a person sees the page: 200 form or paid, 402 declined,
 * 410 expired, 400 an unreadable form (the form again with its error), 404 no such checkout.
 * Pages are never cached nor framed (a payment form must not be clickjacked), and typed card
 * details never come back on a page.
 */
import { Effect, Option } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse, UrlParams } from "effect/http"
import * as Page from "./pages/CheckoutPage.ts"
import { Orders } from "../payments/OrderService.ts"
import { type CheckoutInfo } from "../payments/Orders.ts"
import { CardCheckouts } from "../billing/CardCheckouts.ts"
import { CardProcessor } from "../payments/CardProcessor.ts"

export const CHECKOUT_PATH = "/checkout/:session"

const HEADERS = {
  "cache-control": "no-store",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff",
  "content-security-policy":
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
}

const page = (html: string, status: number) =>
  HttpServerResponse.setHeaders(HttpServerResponse.html(html), HEADERS).pipe(HttpServerResponse.setStatus(status))

const statusOf = (info: CheckoutInfo) => info.status === "expired" ? 410 : 200

const notFound = page(Page.notFoundPage(), 404)

const sessionParam = Effect.map(HttpRouter.params, (params) => params["session"] ?? "")

const show = (orders: Orders["Service"]) => Effect.gen(function*() {
  const info = yield* Effect.option(orders.checkout(yield* sessionParam))
  return Option.match(info, { onNone: () => notFound, onSome: (info) => page(Page.checkoutPage(info), statusOf(info)) })
})

/** The person back from the processor's own page. */
const showReturn = (checkouts: CardCheckouts["Service"]) => Effect.gen(function*() {
  const view = yield* Effect.option(checkouts.returned(yield* sessionParam))
  if (Option.isNone(view)) return notFound
  const shown = view.value
  switch (shown._tag) {
    case "Paid":
      return page(Page.paidPage(shown.info), 200)
    case "Expired":
      return page(Page.expiredPage(shown.info), 410)
    case "NotPaid":
      return page(Page.returnPage(shown.info, shown.state, shown.pay_url), shown.state === "processing" ? 202 : 402)
  }
})

const formFields = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const params = yield* Effect.orElseSucceed(request.urlParamsBody, () => UrlParams.empty)
  const field = (name: string) => Option.getOrUndefined(UrlParams.getFirst(params, name))
  return { card_number: field("card_number"), expiry: field("expiry"), cvc: field("cvc") }
})

const submit = (orders: Orders["Service"]) => Effect.gen(function*() {
  const session = yield* sessionParam
  const current = yield* Effect.option(orders.checkout(session))
  if (Option.isNone(current)) return notFound
  const info = current.value
  if (info.status === "expired") return page(Page.expiredPage(info), 410)
  const form = Page.parseCheckoutForm(yield* formFields)
  if (form._tag === "Invalid") {
    return info.status === "paid" ? page(Page.paidPage(info), 200) : page(Page.checkoutPage(info, { error: form.message }), 400)
  }
  // Also for a paid order: it charges nothing then, answers paid, and completes a fulfilment a
  // crash may have cut short.
  const result = yield* Effect.option(orders.completeCardPayment(session, form.card))
  if (Option.isNone(result)) return notFound
  const outcome = result.value
  if (outcome._tag === "Paid") return page(Page.paidPage(outcome.checkout), 200)
  return page(
    Page.declinedPage(outcome.checkout, { reason: outcome.reason, message: outcome.message }),
    outcome.reason === "checkout_expired" ? 410 : 402
  )
})

export const CheckoutRoutes = HttpRouter.use((router) =>
  Effect.gen(function*() {
    const orders = yield* Orders
    if ((yield* CardProcessor).pages === "processor") {
      yield* router.add("GET", CHECKOUT_PATH, showReturn(yield* CardCheckouts))
      // The card is typed on the processor's page, never posted here.
      yield* router.add("POST", CHECKOUT_PATH, Effect.succeed(notFound))
      return
    }
    yield* router.add("GET", CHECKOUT_PATH, show(orders))
    yield* router.add("POST", CHECKOUT_PATH, submit(orders))
  })
)
