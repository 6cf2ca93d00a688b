/** The handlers of the alerts routes (AlertsApi.ts): each calls a use-case (billing/Alerts.ts, AutoReload.ts). */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { PlatformApi } from "./Api.ts"
import { CurrentCaller } from "./Security.ts"
import { Alerts } from "../billing/Alerts.ts"
import { AutoReload } from "../billing/AutoReload.ts"
import { answered } from "./Refusals.ts"

export const AlertsHandlers = HttpApiBuilder.group(PlatformApi, "alerts", Effect.fnUntraced(function*(handlers) {
  const alerts = answered(yield* Alerts)
  const autoReload = answered(yield* AutoReload)
  return handlers
    .handle("list", ({ query }) => Effect.flatMap(CurrentCaller, (caller) => alerts.list(caller, query.limit)))
    .handle("autoReload", () => Effect.flatMap(CurrentCaller, (caller) => autoReload.view(caller.account.id)))
    .handle("setAutoReload", ({ payload }) => Effect.flatMap(CurrentCaller, (caller) => autoReload.set(caller, payload)))
}))
