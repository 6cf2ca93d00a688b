/** The handlers of the limits routes (LimitsApi.ts): each calls a use-case of billing/Limits.ts. */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { PlatformApi } from "./Api.ts"
import { CurrentCaller } from "./Security.ts"
import { makeLimits } from "../billing/Limits.ts"
import { answered } from "./Refusals.ts"

export const LimitsHandlers = HttpApiBuilder.group(PlatformApi, "limits", Effect.fnUntraced(function*(handlers) {
  const limits = answered(yield* makeLimits)
  return handlers
    .handle("get", () => Effect.flatMap(CurrentCaller, limits.view))
    .handle("set", ({ payload }) => Effect.flatMap(CurrentCaller, (caller) => limits.set(caller, payload)))
    .handle("setKeyLimit", ({ params, payload }) =>
      Effect.flatMap(CurrentCaller, (caller) => limits.setKeyLimit(caller, params.id, payload)))
}))
