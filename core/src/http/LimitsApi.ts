/**
 * The monthly limits' routes in the management contract (added to PlatformApi in http/Api.ts):
 * GET /billing/limits (read), POST /billing/limits and POST /billing/keys/{id}/limit (manage).
 * Their handlers are LimitsHandlers.ts; the rules and use-cases billing/Limits.ts.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import * as Errors from "./Errors.ts"
import { MAX_ID_LENGTH } from "../kernel/Limits.ts"
import { Text } from "../kernel/Text.ts"
import { Idempotency } from "./Idempotency.ts"
import { Authentication, RequiredPermission } from "./Security.ts"
import { KeyLimit, LimitsView, SetLimits } from "../billing/Schemas.ts"

export class LimitsGroup extends HttpApiGroup.make("limits")
  .add(
    HttpApiEndpoint.get("get", "/billing/limits", { success: LimitsView }).annotate(RequiredPermission, "read"),
    HttpApiEndpoint.post("set", "/billing/limits", {
      payload: SetLimits,
      success: LimitsView,
      error: Errors.BadRequest
    })
      .annotate(RequiredPermission, "manage")
      .middleware(Idempotency),
    HttpApiEndpoint.post("setKeyLimit", "/billing/keys/:id/limit", {
      params: { id: Text(1, MAX_ID_LENGTH) },
      payload: KeyLimit,
      success: LimitsView,
      error: [Errors.BadRequest, Errors.NotFound]
    })
      .annotate(RequiredPermission, "manage")
      .middleware(Idempotency)
  )
  .middleware(Authentication)
  .annotateMerge(OpenApi.annotations({
    title: "Limits",
    description: "Monthly spending limits of the account and of each key, and the alert points. Priced calls stop at a limit (402)."
  }))
{}
