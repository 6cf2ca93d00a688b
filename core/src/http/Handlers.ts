/** The handlers of the management API: each one calls a use-case and returns its result. */
import { Effect, Layer, Option } from "effect"
import { AccountService } from "../accounts/AccountService.ts"
import { AccountsConfig } from "../accounts/AccountsConfig.ts"
import { storedIdentity } from "../accounts/Identities.ts"
import { claimLinkFor } from "../accounts/Owner.ts"
import { HttpApiBuilder } from "effect/http-api"
import { AgentsHandlers } from "./AgentsHandlers.ts"
import { ApiKeys } from "../keys/ApiKeys.ts"
import { AlertsHandlers } from "./AlertsHandlers.ts"
import { DatasetsHandlers } from "./DatasetsHandlers.ts"
import { FieldworkHandlers } from "./FieldworkHandlers.ts"
import { LimitsHandlers } from "./LimitsHandlers.ts"
import { PlansHandlers } from "./PlansHandlers.ts"
import { StatementsHandlers } from "./StatementsHandlers.ts"
import { makeBillingSummary } from "../billing/Summary.ts"
import { UsageHandlers } from "./UsageHandlers.ts"
import { Catalogue } from "../catalogue/Catalogue.ts"
import { toKey } from "../keys/Keys.ts"
import { Ledger } from "../ledger/Ledger.ts"
import { Orders } from "../payments/OrderService.ts"
import { Tickets } from "../payments/Tickets.ts"
import { AccountStore } from "../keys/AccountStore.ts"
import { PeopleStore } from "../accounts/PeopleStore.ts"
import { PlatformApi } from "./Api.ts"
import { withRequestBaseUrl } from "./PublicUrl.ts"
import { RequestBaseUrl } from "../kernel/RequestBaseUrl.ts"
import { answer, answered } from "./Refusals.ts"
import { CurrentCaller } from "./Security.ts"

export const CatalogueHandlers = HttpApiBuilder.group(PlatformApi, "catalogue", Effect.fnUntraced(function*(handlers) {
  const catalogue = answered(yield* Catalogue)
  const orders = answered(yield* Orders)
  const data = <A>(items: ReadonlyArray<A>) => ({ data: items })
  return handlers
    .handle("models", () => Effect.map(catalogue.models, data))
    .handle("model", ({ params }) => catalogue.model(params.id))
    .handle("machines", ({ query }) =>
      Effect.map(
        catalogue.machines({ ...query, gpu: query.gpu === undefined ? undefined : query.gpu === "true" }),
        data
      ))
    .handle("machine", ({ params }) => catalogue.machine(params.id))
    .handle("operators", () => Effect.map(catalogue.operators, data))
    .handle("operator", ({ params }) => catalogue.operator(params.id))
    .handle("route", ({ query }) =>
      Effect.map(catalogue.routes(query.model, query.region), (routes) => ({ model: query.model, routes })))
    .handle("packages", () => Effect.succeed(data(catalogue.packages)))
    .handle("paymentMethods", () => Effect.succeed(catalogue.paymentMethods))
    .handle("quote", ({ payload }) => orders.quote(payload))
    .handle("prices", () => Effect.succeed(catalogue.prices))
    .handle("tiers", () => Effect.succeed(data(catalogue.tiers)))
}))

export const AccountHandlers = HttpApiBuilder.group(PlatformApi, "account", Effect.fnUntraced(function*(handlers) {
  const apiKeys = answered(yield* ApiKeys)
  return handlers
    .handle("me", () =>
      Effect.map(CurrentCaller, ({ account, key }) => ({
        id: account.id,
        email: account.email,
        created_at: account.created_at,
        key: toKey(key)
      })))
    .handle("listKeys", () =>
      Effect.flatMap(CurrentCaller, (caller) => Effect.map(apiKeys.list(caller), (data) => ({ data }))))
    .handle("createKey", ({ payload }) => Effect.flatMap(CurrentCaller, (caller) => apiKeys.create(caller, payload)))
    .handle("revokeKey", ({ params }) => Effect.flatMap(CurrentCaller, (caller) => apiKeys.revoke(caller, params.id)))
}))

export const CreditsHandlers = HttpApiBuilder.group(PlatformApi, "credits", Effect.fnUntraced(function*(handlers) {
  const ledger = answered(yield* Ledger)
  const tickets = answered(yield* Tickets)
  return handlers
    .handle("balance", () => Effect.flatMap(CurrentCaller, ({ account }) => ledger.balance(account.id)))
    .handle("activity", ({ query }) => Effect.flatMap(CurrentCaller, ({ account }) => ledger.activity(account.id, query.limit)))
    .handle("redeem", ({ payload }) => Effect.flatMap(CurrentCaller, (caller) => tickets.redeem(caller, payload.code)))
    .handle("tickets", () => Effect.flatMap(CurrentCaller, (caller) => tickets.list(caller)))
}))

export const OrdersHandlers = HttpApiBuilder.group(PlatformApi, "orders", Effect.fnUntraced(function*(handlers) {
  const orders = answered(yield* Orders)
  return handlers
    .handle("create", ({ payload }) => Effect.flatMap(CurrentCaller, (caller) => orders.create(caller, payload)))
    .handle("list", ({ query }) => Effect.flatMap(CurrentCaller, (caller) => orders.list(caller, query.limit)))
    .handle("get", ({ params }) => Effect.flatMap(CurrentCaller, (caller) => orders.get(caller, params.id)))
    // A card checkout's pay_url is made under the platform's public address (PublicUrl.ts).
    .handle("pay", ({ params, payload }) =>
      Effect.flatMap(CurrentCaller, (caller) => withRequestBaseUrl(orders.pay(caller, params.id, payload))))
}))

export const BillingHandlers = HttpApiBuilder.group(PlatformApi, "billing", Effect.fnUntraced(function*(handlers) {
  const orders = answered(yield* Orders)
  const summary = yield* makeBillingSummary
  return handlers
    .handle("summary", () => Effect.flatMap(CurrentCaller, summary))
    .handle("receipts", () => Effect.flatMap(CurrentCaller, (caller) => orders.receipts(caller)))
    .handle("receipt", ({ params }) => Effect.flatMap(CurrentCaller, (caller) => orders.receipt(caller, params.id)))
}))

/**
 * GET /identity: the account service answers (and asks the network again for an identity still
 * provisioning); a shell without it answers from the store as it is (docs/api-decisions.md).
 * POST /identity/claim-link: a claim link for the owner account (accounts/Owner.ts).
 */
export const IdentityHandlers = HttpApiBuilder.group(PlatformApi, "identity", Effect.fnUntraced(function*(handlers) {
  const service = yield* Effect.serviceOption(AccountService)
  const config = yield* Effect.serviceOption(AccountsConfig)
  // Taken here, not per request: a handler's own requirements would have to come with each request.
  const people = yield* PeopleStore
  const accountStore = yield* AccountStore
  /** The account service's address: ACCOUNTS_URL, else this server's /accounts. */
  const accountsUrl = Effect.map(RequestBaseUrl, (base) =>
    Option.match(config, {
      onSome: (c) => c.accountsUrl.replace(/\/+$/, ""),
      onNone: () => `${base ?? ""}/accounts`
    }))
  const identity = () =>
    Effect.flatMap(CurrentCaller, (caller) =>
      Option.match(service, {
        onSome: (accounts) => accounts.identityOf(caller.account.id),
        onNone: () => withRequestBaseUrl(Effect.flatMap(accountsUrl, (url) => storedIdentity(people, caller.account.id, url)))
      }))
  // Made from the stores alone (no AccountService needed): the link names the account service's page.
  const claimLink = () =>
    Effect.flatMap(CurrentCaller, (caller) => withRequestBaseUrl(Effect.flatMap(accountsUrl, (url) => claimLinkFor(caller, url)))).pipe(
      answer,
      Effect.provideService(AccountStore, accountStore),
      Effect.provideService(PeopleStore, people)
    )
  return handlers.handle("identity", identity).handle("identityApi", identity).handle("claimLink", claimLink)
}))

export const PlatformHandlers = Layer.mergeAll(
  CatalogueHandlers,
  AccountHandlers,
  CreditsHandlers,
  OrdersHandlers,
  BillingHandlers,
  UsageHandlers,
  LimitsHandlers,
  AlertsHandlers,
  StatementsHandlers,
  PlansHandlers,
  IdentityHandlers,
  AgentsHandlers,
  DatasetsHandlers,
  FieldworkHandlers
)
