/** The handlers of the owner's Fieldwork routes (FieldworkApi.ts): each calls a use-case of Projects.ts. */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { PlatformApi } from "./Api.ts"
import { CurrentCaller } from "./Security.ts"
import { answered } from "./Refusals.ts"
import { Projects } from "../fieldwork/Projects.ts"

export const FieldworkHandlers = HttpApiBuilder.group(PlatformApi, "fieldwork", Effect.fnUntraced(function*(handlers) {
  const projects = answered(yield* Projects)
  return handlers
    .handle("list", () => Effect.flatMap(CurrentCaller, projects.list))
    .handle("create", ({ payload }) => Effect.flatMap(CurrentCaller, (caller) => projects.create(caller, payload)))
    .handle("get", ({ params }) => Effect.flatMap(CurrentCaller, (caller) => projects.get(caller, params.id)))
    .handle("consent", ({ params, payload }) =>
      Effect.flatMap(CurrentCaller, (caller) => projects.setConsent(caller, params.id, payload)))
    .handle("keys", ({ params }) => Effect.flatMap(CurrentCaller, (caller) => projects.listKeys(caller, params.id)))
    .handle("createKey", ({ params, payload }) =>
      Effect.flatMap(CurrentCaller, (caller) => projects.createKey(caller, params.id, payload)))
    .handle("revokeKey", ({ params }) =>
      Effect.flatMap(CurrentCaller, (caller) => projects.revokeKey(caller, params.id, params.key_id)))
}))
