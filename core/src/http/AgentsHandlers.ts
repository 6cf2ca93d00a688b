/**
 * The handlers of the agents' routes (AgentsApi.ts), at /agents and again at /api/agents: each
 * calls a use-case of agents/Agents.ts. The addresses a use-case hands out or names (an approval's
 * return_to, an identity's manage_url) come from the request when nothing is configured.
 */
import { Effect, Layer, Option } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { AccountsConfig } from "../accounts/AccountsConfig.ts"
import { PlatformApi } from "./Api.ts"
import { withRequestBaseUrl } from "./PublicUrl.ts"
import { RequestBaseUrl } from "../kernel/RequestBaseUrl.ts"
import { CurrentCaller } from "./Security.ts"
import { Agents } from "../agents/Agents.ts"
import { answered } from "./Refusals.ts"

const makeHandlers = Effect.gen(function*() {
  const agents = answered(yield* Agents)
  // Taken here, not per request: a handler's own requirements would have to come with each request.
  const config = yield* Effect.serviceOption(AccountsConfig)
  /** The account service's base address: configured, else this platform's /accounts. */
  const accountsUrl = Option.match(config, {
    onSome: (c) => Effect.succeed(c.accountsUrl),
    onNone: () => Effect.map(RequestBaseUrl, (base) => `${base ?? ""}/accounts`)
  })
  const withCaller = <A, E>(f: (caller: CurrentCaller["Service"], accounts: string) => Effect.Effect<A, E>) =>
    withRequestBaseUrl(Effect.flatMap(CurrentCaller, (caller) => Effect.flatMap(accountsUrl, (url) => f(caller, url))))
  return {
    list: () => Effect.flatMap(CurrentCaller, agents.list),
    get: (id: string) => Effect.flatMap(CurrentCaller, (caller) => agents.get(caller, id)),
    propose: (payload: Parameters<typeof agents.propose>[1]) =>
      withCaller((caller, url) => agents.propose(caller, payload, url)),
    settings: (id: string, payload: Parameters<typeof agents.changeSettings>[2]) =>
      withCaller((caller, url) => agents.changeSettings(caller, id, payload, url)),
    keys: (id: string, payload: Parameters<typeof agents.createKey>[2]) =>
      Effect.flatMap(CurrentCaller, (caller) => agents.createKey(caller, id, payload)),
    revoke: (id: string) => withCaller((caller, url) => agents.revoke(caller, id, url))
  }
})

const AgentsRootHandlers = HttpApiBuilder.group(PlatformApi, "agents", Effect.fnUntraced(function*(handlers) {
  const h = yield* makeHandlers
  return handlers
    .handle("list", h.list)
    .handle("propose", ({ payload }) => h.propose(payload))
    .handle("get", ({ params }) => h.get(params.id))
    .handle("settings", ({ params, payload }) => h.settings(params.id, payload))
    .handle("keys", ({ params, payload }) => h.keys(params.id, payload))
    .handle("revoke", ({ params }) => h.revoke(params.id))
}))

const AgentsApiHandlers = HttpApiBuilder.group(PlatformApi, "agentsApi", Effect.fnUntraced(function*(handlers) {
  const h = yield* makeHandlers
  return handlers
    .handle("list", h.list)
    .handle("propose", ({ payload }) => h.propose(payload))
    .handle("get", ({ params }) => h.get(params.id))
    .handle("settings", ({ params, payload }) => h.settings(params.id, payload))
    .handle("keys", ({ params, payload }) => h.keys(params.id, payload))
    .handle("revoke", ({ params }) => h.revoke(params.id))
}))

export const AgentsHandlers = Layer.mergeAll(AgentsRootHandlers, AgentsApiHandlers)
