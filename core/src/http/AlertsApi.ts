/**
 * The alerts and automatic top-up routes in the management contract (added to PlatformApi in
 * http/Api.ts): GET /billing/alerts and GET /billing/auto-reload (read), POST /billing/auto-reload
 * (manage). Their handlers are AlertsHandlers.ts; the use-cases billing/Alerts.ts and
 * billing/AutoReload.ts.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import * as Errors from "./Errors.ts"
import { Idempotency } from "./Idempotency.ts"
import { Authentication, RequiredPermission } from "./Security.ts"
import { AlertList, AutoReloadView, SetAutoReload } from "../billing/Schemas.ts"

export class AlertsGroup extends HttpApiGroup.make("alerts")
  .add(
    HttpApiEndpoint.get("list", "/billing/alerts", {
      // A number here; the use-case checks its range (1 to 200) and says what it accepts.
      query: { limit: Schema.optionalKey(Schema.FiniteFromString) },
      success: AlertList,
      error: Errors.BadRequest
    }).annotate(RequiredPermission, "read"),
    HttpApiEndpoint.get("autoReload", "/billing/auto-reload", { success: AutoReloadView }).annotate(RequiredPermission, "read"),
    HttpApiEndpoint.post("setAutoReload", "/billing/auto-reload", {
      payload: SetAutoReload,
      success: AutoReloadView,
      error: Errors.BadRequest
    })
      .annotate(RequiredPermission, "manage")
      .middleware(Idempotency)
  )
  .middleware(Authentication)
  .annotateMerge(OpenApi.annotations({
    title: "Alerts and automatic top-ups",
    description: "Billing alerts (spend passing alert points, limits reached, low balance, automatic top-ups paid or failed), " +
      "newest first, and the automatic top-up of the saved card when the balance falls below a threshold."
  }))
{}
