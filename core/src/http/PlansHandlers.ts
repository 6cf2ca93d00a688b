/** The handlers of the plans' routes (PlansApi.ts): each calls a use-case of plans/Plans.ts. */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { PlatformApi } from "./Api.ts"
import { CurrentCaller } from "./Security.ts"
import { makePlans } from "../plans/Plans.ts"
import { answered } from "./Refusals.ts"

export const PlansHandlers = HttpApiBuilder.group(PlatformApi, "plans", Effect.fnUntraced(function*(handlers) {
  const plans = answered(yield* makePlans)
  return handlers
    .handle("subscriptions", () => Effect.flatMap(CurrentCaller, plans.subscriptions))
    .handle("cancel", ({ params }) => Effect.flatMap(CurrentCaller, (caller) => plans.cancel(caller, params.id)))
    .handle("resume", ({ params }) => Effect.flatMap(CurrentCaller, (caller) => plans.resume(caller, params.id)))
    .handle("rentals", () => Effect.flatMap(CurrentCaller, plans.rentals))
}))
