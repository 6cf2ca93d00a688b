/**
 * The billing page (docs/billing.md "The billing page"), served by the account service for the
 * signed-in person's account: every page for a person signs in through the account service, so
 * this one has its session cookie, its CSRF token and its Origin check (AccountPages.ts), and
 * uses the billing use-cases with the person's account as the caller.
 *
 *   GET  /accounts/billing                 balance, month's spend, usage chart, the allowance and
 *                                          trial used, alerts, receipts, the saved card and the
 *                                          automatic top-up settings
 *   GET  /accounts/billing/receipts/{id}   a receipt to print
 *   POST /accounts/billing/card            save or replace the card (CardProcessor.saveCard); with a
 *                                          processor that has its own page (Stripe), open that page
 *                                          and link to it (billing/CardSetups.ts)
 *   GET  /accounts/billing/card?session_id=…  back from that page: the card saved there
 *   POST /accounts/billing/card/remove     forget the card (top-ups turn off)
 *   POST /accounts/billing/buy             with such a processor: an order of credits, linked to its
 *                                          page, whose payment keeps the card for top-ups
 *   POST /accounts/billing/auto-reload     the automatic top-up settings
 *
 * Showing the page marks the alerts it lists seen (the person saw them; GET /billing/alerts marks
 * nothing). A refusal is shown on the page with its status (400, 403, 402 for a declined card);
 * nothing a person sends can make a 500.
 */
import { Clock, Effect, Option, Schema } from "effect"
import { HttpRouter, HttpServerRequest } from "effect/http"
import { AccountService } from "../accounts/AccountService.ts"
import * as Pages from "./pages/Pages.ts"
import type { Caller } from "../keys/Caller.ts"
import { Alerts } from "../billing/Alerts.ts"
import { grantsView } from "../billing/Allowances.ts"
import { AutoReload } from "../billing/AutoReload.ts"
import { billingPage, type BillingPageView, receiptPage } from "./pages/BillingPage.ts"
import { monthOf } from "../kernel/Time.ts"
import { SetAutoReload } from "../billing/Schemas.ts"
import { makeBillingSummary } from "../billing/Summary.ts"
import { makeUsageReports } from "../billing/Usage.ts"
import { parseCheckoutForm } from "./pages/CheckoutPage.ts"
import { Orders } from "../payments/OrderService.ts"
import { answered } from "./Refusals.ts"
import { Catalogue } from "../catalogue/Catalogue.ts"
import { AccountStore } from "../keys/AccountStore.ts"
import { LedgerStore } from "../ledger/LedgerStore.ts"
import { page, seeOther } from "./AccountRequests.ts"
import { cardSetupPage } from "./pages/BillingPage.ts"
import { CardSetups } from "../billing/CardSetups.ts"
import { CardProcessor } from "../payments/CardProcessor.ts"
import { site } from "./AccountRequests.ts"
import { withRequestBaseUrl } from "./PublicUrl.ts"
import {
  at,
  type FormFields,
  guardPage,
  personFormPost,
  requireSession,
  type Response,
  type Service,
  type SignedIn,
  withPersonCaller
} from "./AccountPages.ts"

/** How many alerts the page lists (newest first). */
export const PAGE_ALERTS = 20

type Extras = Pick<BillingPageView, "notice" | "error" | "cardError" | "settingsError" | "posted">

/** Where the person comes back from the processor's card page: the billing page's card address. */
const CARD_RETURN_PATH = "/billing/card"

const makePages = Effect.gen(function*() {
  const summary = yield* makeBillingSummary
  const reports = answered(yield* makeUsageReports)
  const alerts = answered(yield* Alerts)
  const autoReload = answered(yield* AutoReload)
  const orders = answered(yield* Orders)
  const ledger = yield* LedgerStore
  const catalogue = yield* Catalogue
  const setups = answered(yield* CardSetups)
  const cardPages = (yield* CardProcessor).pages

  const render = (s: SignedIn, caller: Caller, extras: Extras = {}, status = 200) =>
    Effect.gen(function*() {
      const period = monthOf(yield* Clock.currentTimeMillis)
      const [sum, usage, listed, receipts, grants] = yield* Effect.all([
        summary(caller),
        reports.report(caller, { month: period, group_by: "day" }),
        alerts.list(caller, PAGE_ALERTS),
        orders.receipts(caller),
        ledger.grants(caller.account.id)
      ], { concurrency: 5 })
      // Shown, so seen: marked after they were read, and shown with `seen` as it was before.
      const unseen = listed.data.filter((a) => !a.seen).map((a) => a.id)
      if (unseen.length > 0) yield* alerts.markSeen(caller.account.id, unseen)
      const view: BillingPageView = {
        email: s.live.person.email,
        balance: { credits: sum.balance.credits, usd: sum.balance.usd },
        month: {
          period,
          // GET /billing's month: the account budget's spend against the limit in force.
          spent_credits: sum.month.spent_credits,
          limit_credits: sum.month.limit_credits,
          own_limit: sum.month.own_limit_credits !== null
        },
        days: usage.data.map((d) => ({ day: d.key, credits: d.credits, calls: d.calls })),
        grants: grantsView(catalogue.config, grants, period),
        alerts: listed.data,
        receipts: receipts.data,
        autoReload: sum.auto_reload,
        cardPages,
        ...extras
      }
      return page(billingPage(s.ctx, view), status)
    }).pipe(
      // The month's report never fails for a month it names itself; a BadRequest here is a defect.
      Effect.orDie
    )

  const saveCard = (s: SignedIn, caller: Caller, form: FormFields) =>
    Effect.gen(function*() {
      if (cardPages === "processor") {
        // The card is typed on the processor's page; the person comes back to this page's card address.
        const where = yield* site
        const opened = yield* Effect.result(setups.open(caller.account.id, `${where.accountsUrl}${CARD_RETURN_PATH}`))
        if (opened._tag === "Failure") return yield* render(s, caller, { cardError: opened.failure.error.message }, 400)
        return page(cardSetupPage(s.ctx, s.live.person.email, opened.success.checkout_url))
      }
      const parsed = parseCheckoutForm({ card_number: form.get("card_number"), expiry: form.get("expiry"), cvc: form.get("cvc") })
      if (parsed._tag === "Invalid") return yield* render(s, caller, { cardError: parsed.message }, 400)
      // The card details go to the processor only: never stored, never logged (nor traced: an untraced call).
      const result = yield* Effect.result(autoReload.saveCard(caller.account.id, parsed.card))
      if (result._tag === "Failure") return yield* render(s, caller, { cardError: result.failure.error.message }, 400)
      if (result.success._tag === "Declined") {
        return yield* render(s, caller, { cardError: `${result.success.message} Nothing was saved.` }, 402)
      }
      return yield* render(s, caller, { notice: `Card saved: ${result.success.auto_reload.card ?? ""}.` })
    })

  /** Back from the processor's card page (GET, with its session): the card saved there, for this account only. */
  const cardSaved = (s: SignedIn, caller: Caller, sessionId: string) =>
    Effect.gen(function*() {
      const result = yield* setups.complete(caller.account.id, sessionId)
      if (result._tag === "NotSaved") return yield* render(s, caller, { cardError: result.message }, 400)
      return yield* render(s, caller, { notice: `Card saved: ${result.auto_reload.card ?? ""}.` })
    })

  const removeCard = (s: SignedIn, caller: Caller, _form: FormFields) =>
    Effect.gen(function*() {
      yield* setups.remove(caller.account.id)
      return yield* render(s, caller, { notice: "The card was removed; automatic top-ups are off." })
    })

  /** Credits paid on the processor's page, keeping the card for automatic top-ups. */
  const buyKeepingCard = (s: SignedIn, caller: Caller, form: FormFields) =>
    Effect.gen(function*() {
      const amount = Number((form.get("amount_usd") ?? "").trim())
      const result = yield* withRequestBaseUrl(
        Effect.flatMap(
          orders.create(caller, { type: "credits", amount_usd: amount }),
          (order) => orders.pay(caller, order.id, { method: "card" }, { keepCard: true })
        )
      ).pipe(Effect.result)
      if (result._tag === "Failure") return yield* render(s, caller, { cardError: result.failure.error.message }, 400)
      const order = result.success
      return page(Pages.orderPage(s.ctx, { id: order.id, title: order.title, amount_usd: order.amount_usd, pay_url: order.pay_url, gift: false }))
    })

  const setAutoReload = (s: SignedIn, caller: Caller, form: FormFields) =>
    Effect.gen(function*() {
      const posted = {
        enabled: form.get("enabled") === "true",
        threshold: (form.get("threshold_credits") ?? "").trim(),
        amount: (form.get("amount_usd") ?? "").trim()
      }
      const number = (text: string) => (text === "" || !/^\d+(\.\d+)?$/.test(text) ? Number.NaN : Number(text))
      const threshold = number(posted.threshold.replace(/,/g, ""))
      // Turned off with no amount: keep the saved one (or the smallest order) so the form still saves.
      const amount = posted.amount === "" && !posted.enabled ? 5 : number(posted.amount)
      const body = yield* Effect.option(Schema.decodeUnknownEffect(SetAutoReload)({ enabled: posted.enabled, threshold_credits: threshold, amount_usd: amount }))
      if (Option.isNone(body)) {
        return yield* render(s, caller, {
          settingsError: "Enter the threshold as a number of credits (at most 6 decimals) and the amount as whole US dollars from 5 to 5000.",
          posted
        }, 400)
      }
      // The API's refusal names the API; a person is told where the card goes on this page.
      if (body.value.enabled && (yield* autoReload.view(caller.account.id)).card === null) {
        return yield* render(s, caller, { settingsError: "Save a card above first: automatic top-ups charge the saved card.", posted }, 400)
      }
      const result = yield* Effect.result(autoReload.set(caller, body.value))
      if (result._tag === "Failure") {
        return yield* render(s, caller, { settingsError: result.failure.error.message.replace(/^enabled: /, ""), posted }, 400)
      }
      return yield* render(s, caller, { notice: result.success.enabled ? "Automatic top-ups are on." : "Automatic top-ups are off." })
    })

  const receipt = (s: SignedIn, caller: Caller, id: string) =>
    Effect.gen(function*() {
      const found = yield* Effect.result(orders.receipt(caller, id))
      if (found._tag === "Failure") {
        return page(Pages.errorPage(s.ctx, "Receipt not found", "Your account has no receipt with this number.", { href: at("/billing"), label: "Back to billing" }), 404)
      }
      return page(receiptPage(s.ctx, s.live.person.email, found.success))
    })

  /** A form post of this page (AccountPages.ts personFormPost): a refusal is shown on the page. */
  const post = (
    service: Service,
    then: (s: SignedIn, caller: Caller, form: FormFields) => Effect.Effect<Response, never, HttpServerRequest.HttpServerRequest>
  ) =>
    personFormPost(service, (s, caller, error, status) => render(s, caller, { error }, status), then)

  return { render, saveCard, cardSaved, removeCard, buyKeepingCard, setAutoReload, receipt, post, cardPages }
})

/**
 * The billing page's routes, under the account service's base path. Without AccountService (a
 * shell not serving accounts) there are none: AccountRoutes answers those addresses with 503.
 */
export const BillingPageRoutes = HttpRouter.use((router) =>
  Effect.gen(function*() {
    const service = yield* Effect.serviceOption(AccountService)
    if (Option.isNone(service)) return
    const pages = yield* makePages
    const accounts = yield* Effect.context<AccountStore>()
    const add = (
      method: "GET" | "POST",
      path: string,
      handler: Effect.Effect<Response, never, HttpServerRequest.HttpServerRequest | HttpRouter.RouteContext | AccountStore>
    ) =>
      router.add(method, at(path), Effect.provide(handler, accounts))

    yield* add("GET", "/billing", guardPage(requireSession(service.value, (s) => withPersonCaller(s, (caller) => pages.render(s, caller)))))
    yield* add("GET", "/billing/receipts/:id", guardPage(Effect.gen(function*() {
      const params = yield* HttpRouter.params
      return yield* requireSession(service.value, (s) => withPersonCaller(s, (caller) => pages.receipt(s, caller, params["id"] ?? "")))
    })))
    yield* add("POST", "/billing/card", pages.post(service.value, pages.saveCard))
    yield* add("POST", "/billing/auto-reload", pages.post(service.value, pages.setAutoReload))
    if (pages.cardPages === "processor") {
      yield* add("POST", "/billing/card/remove", pages.post(service.value, pages.removeCard))
      yield* add("POST", "/billing/buy", pages.post(service.value, pages.buyKeepingCard))
    }
    // Back from the processor's card page with its session; a plain GET of a form's address (a
    // reload after posting) shows the page.
    yield* add("GET", CARD_RETURN_PATH, guardPage(Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const sessionId = new URL(request.url, "http://x").searchParams.get("session_id")
      if (pages.cardPages !== "processor" || sessionId === null || sessionId === "") return seeOther(at("/billing"))
      return yield* requireSession(service.value, (s) => withPersonCaller(s, (caller) => pages.cardSaved(s, caller, sessionId)))
    })))
    yield* add("GET", "/billing/auto-reload", Effect.succeed(seeOther(at("/billing"))))
  })
)
