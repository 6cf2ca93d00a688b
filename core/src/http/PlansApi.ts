/**
 * The plans' and rentals' routes in the management contract (added to PlatformApi in http/Api.ts):
 * GET /subscriptions and GET /rentals (read), POST /subscriptions/{id}/cancel and /resume
 * (manage). Their handlers are PlansHandlers.ts; the rules and use-cases plans/Plans.ts.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import * as Errors from "./Errors.ts"
import { ScopeRuleAnnotation } from "../keys/KeyScope.ts"
import { MAX_ID_LENGTH } from "../kernel/Limits.ts"
import { Text } from "../kernel/Text.ts"
import { Idempotency } from "./Idempotency.ts"
import { Authentication, RequiredPermission } from "./Security.ts"
import { PlanChange, RentalList, SubscriptionList } from "../plans/Schemas.ts"

const change = (name: "cancel" | "resume") =>
  HttpApiEndpoint.post(name, `/subscriptions/:id/${name}`, {
    params: { id: Text(1, MAX_ID_LENGTH) },
    success: PlanChange,
    error: [Errors.BadRequest, Errors.NotFound, Errors.Forbidden]
  })
    .annotate(RequiredPermission, "manage")
    .annotate(ScopeRuleAnnotation, { within: "subscription" })
    .middleware(Idempotency)

export class PlansGroup extends HttpApiGroup.make("plans")
  .add(
    HttpApiEndpoint.get("subscriptions", "/subscriptions", { success: SubscriptionList }).annotate(RequiredPermission, "read"),
    change("cancel"),
    change("resume"),
    HttpApiEndpoint.get("rentals", "/rentals", { success: RentalList }).annotate(RequiredPermission, "read")
  )
  .middleware(Authentication)
  .annotateMerge(OpenApi.annotations({
    title: "Plans and rentals",
    description: "The account's plans (subscriptions to a machine) and rentals of a machine; a card plan can be cancelled at its period's end and resumed."
  }))
{}
