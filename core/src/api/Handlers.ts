/** The handlers of the management API: each one calls a use-case and returns its result. */
import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { ApiKeys } from "../ApiKeys.ts"
import { Catalogue } from "../Catalogue.ts"
import { toKey } from "../Keys.ts"
import { PlatformApi } from "./Api.ts"
import { CurrentCaller } from "./Security.ts"

export const CatalogueHandlers = HttpApiBuilder.group(PlatformApi, "catalogue", Effect.fnUntraced(function*(handlers) {
  const catalogue = yield* Catalogue
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
    .handle("prices", () => Effect.succeed(catalogue.prices))
    .handle("tiers", () => Effect.succeed(data(catalogue.tiers)))
}))

export const AccountHandlers = HttpApiBuilder.group(PlatformApi, "account", Effect.fnUntraced(function*(handlers) {
  const apiKeys = yield* ApiKeys
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

export const PlatformHandlers = Layer.mergeAll(CatalogueHandlers, AccountHandlers)
