/**
 * The plans page (docs/plans.md "The plans page"), served by the account service for the
 * signed-in person's account, with its session cookie, CSRF token and Origin check
 * (AccountPages.ts), as the billing page is:
 *
 *   GET  /accounts/plans          the account's plans and rentals, and the plans machines offer
 *   POST /accounts/plans/buy      a subscription order of {machine_id, plan_id}, paid on the checkout page
 *   POST /accounts/plans/cancel   {id}: a card plan ends at its period's end
 *   POST /accounts/plans/resume   {id}: it renews again
 *
 * A refusal is shown on the page with its status; nothing a person sends can make a 500.
 */
import { Effect, Option } from "effect"
import { HttpRouter, HttpServerRequest } from "effect/http"
import { AccountService } from "../accounts/AccountService.ts"
import * as Pages from "./pages/Pages.ts"
import type { Caller } from "../keys/Caller.ts"
import { Catalogue } from "../catalogue/Catalogue.ts"
import { Orders } from "../payments/OrderService.ts"
import { answered } from "./Refusals.ts"
import { subscribeOfferOf } from "../plans/Offers.ts"
import { makePlans } from "../plans/Plans.ts"
import { type OfferedPlan, plansPage } from "./pages/PlansPage.ts"
import { AccountStore } from "../keys/AccountStore.ts"
import { page } from "./AccountRequests.ts"
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
import { withRequestBaseUrl } from "./PublicUrl.ts"

type Extras = { readonly notice?: string; readonly error?: string }

const makePages = Effect.gen(function*() {
  const plans = answered(yield* makePlans)
  const orders = answered(yield* Orders)
  const catalogue = yield* Catalogue

  /** Every plan of every machine whose subscribe offer can be ordered (plans/Offers.ts). */
  const offers: ReadonlyArray<OfferedPlan> = catalogue.config.machines.flatMap((machine) => {
    const offer = subscribeOfferOf(machine)
    return (offer?.plans ?? []).map((plan) => ({
      machine_id: machine.id,
      machine_name: machine.name,
      plan_id: plan.id,
      name: plan.name,
      usd_per_period: plan.usd_per_period,
      period_days: offer!.period_days,
      models: plan.models
    }))
  })

  const render = (s: SignedIn, caller: Caller, extras: Extras = {}, status = 200) =>
    Effect.gen(function*() {
      const [subscriptions, rentals] = yield* Effect.all([plans.subscriptions(caller), plans.rentals(caller)])
      return page(plansPage(s.ctx, { email: s.live.person.email, plans: subscriptions.data, rentals: rentals.data, offers, ...extras }), status)
    })

  /** A subscription order for the person, then the page that sends them to pay it. */
  const buy = (s: SignedIn, caller: Caller, form: FormFields) =>
    Effect.gen(function*() {
      const body = { type: "subscription" as const, machine_id: form.get("machine_id") ?? "", plan_id: form.get("plan_id") ?? "" }
      const result = yield* withRequestBaseUrl(
        Effect.flatMap(orders.create(caller, body), (order) => orders.pay(caller, order.id, { method: "card" }))
      ).pipe(Effect.result)
      if (result._tag === "Failure") return yield* render(s, caller, { error: result.failure.error.message }, 400)
      const order = result.success
      return page(Pages.orderPage(s.ctx, { id: order.id, title: order.title, amount_usd: order.amount_usd, pay_url: order.pay_url, gift: false }))
    })

  const change = (cancel: boolean) => (s: SignedIn, caller: Caller, form: FormFields) =>
    Effect.gen(function*() {
      const result = yield* Effect.result((cancel ? plans.cancel : plans.resume)(caller, form.get("id") ?? ""))
      if (result._tag === "Failure") return yield* render(s, caller, { error: result.failure.error.message }, result.failure.error.code === "subscription_not_found" ? 404 : 400)
      return yield* render(s, caller, {
        notice: cancel ? "The plan ends at the end of its period; it will not renew." : "The plan renews again at the end of its period."
      })
    })

  /** A form post of this page (AccountPages.ts personFormPost): a refusal is shown on the page. */
  const post = (
    service: Service,
    then: (s: SignedIn, caller: Caller, form: FormFields) => Effect.Effect<Response, never, HttpServerRequest.HttpServerRequest>
  ) => personFormPost(service, (s, caller, error, status) => render(s, caller, { error }, status), then)

  return { render, buy, post, cancel: change(true), resume: change(false) }
})

/** The plans page's routes, under the account service's base path (none without AccountService). */
export const PlansPageRoutes = HttpRouter.use((router) =>
  Effect.gen(function*() {
    const service = yield* Effect.serviceOption(AccountService)
    if (Option.isNone(service)) return
    const pages = yield* makePages
    const accounts = yield* Effect.context<AccountStore>()
    const add = (
      method: "GET" | "POST",
      path: string,
      handler: Effect.Effect<Response, never, HttpServerRequest.HttpServerRequest | HttpRouter.RouteContext | AccountStore>
    ) => router.add(method, at(path), Effect.provide(handler, accounts))

    yield* add("GET", "/plans", guardPage(requireSession(service.value, (s) => withPersonCaller(s, (caller) => pages.render(s, caller)))))
    yield* add("POST", "/plans/buy", pages.post(service.value, pages.buy))
    yield* add("POST", "/plans/cancel", pages.post(service.value, pages.cancel))
    yield* add("POST", "/plans/resume", pages.post(service.value, pages.resume))
  })
)
