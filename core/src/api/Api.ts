/**
 * The management HTTP contract, defined once: paths, query and body schemas, responses and errors.
 * Handlers (Handlers.ts), the OpenAPI document and every adapter derive from it.
 */
import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Me } from "../Account.ts"
import * as Catalogue from "../Catalogue.ts"
import * as Errors from "../Errors.ts"
import { CreatedKey, Key } from "../Keys.ts"
import { Permission } from "../Permissions.ts"
import { SchemaErrors } from "./ErrorShape.ts"
import { Idempotency } from "./Idempotency.ts"
import { Authentication, RequiredPermission } from "./Security.ts"

const list = <S extends Schema.Top>(item: S) => Schema.Struct({ data: Schema.Array(item) })

const BooleanFromString = Schema.Literals(["true", "false"])
const Id = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(128))

export class CatalogueGroup extends HttpApiGroup.make("catalogue")
  .add(
    HttpApiEndpoint.get("models", "/models", { success: list(Catalogue.Model) }),
    HttpApiEndpoint.get("model", "/models/:id", {
      params: { id: Id },
      success: Catalogue.ModelWithRoutes,
      error: Errors.NotFound
    }),
    HttpApiEndpoint.get("machines", "/machines", {
      query: {
        service: Schema.optionalKey(Schema.Literals(["serverless", "rent", "subscribe"])),
        region: Schema.optionalKey(Schema.String),
        gpu: Schema.optionalKey(BooleanFromString),
        operator: Schema.optionalKey(Schema.String),
        model: Schema.optionalKey(Schema.String)
      },
      success: list(Catalogue.Machine)
    }),
    HttpApiEndpoint.get("machine", "/machines/:id", {
      params: { id: Id },
      success: Catalogue.Machine,
      error: Errors.NotFound
    }),
    HttpApiEndpoint.get("operators", "/operators", { success: list(Catalogue.OperatorListItem) }),
    HttpApiEndpoint.get("operator", "/operators/:id", {
      params: { id: Id },
      success: Catalogue.Operator,
      error: Errors.NotFound
    }),
    HttpApiEndpoint.get("route", "/route", {
      query: { model: Id, region: Schema.optionalKey(Schema.String) },
      success: Catalogue.RoutePreview,
      error: Errors.NotFound
    }),
    HttpApiEndpoint.get("packages", "/packages", { success: list(Catalogue.Package) }),
    HttpApiEndpoint.get("paymentMethods", "/payment-methods", { success: Catalogue.PaymentMethods }),
    HttpApiEndpoint.get("prices", "/billing/prices", { success: Catalogue.PriceTable }),
    HttpApiEndpoint.get("tiers", "/billing/tiers", { success: list(Catalogue.Tier) })
  )
  .annotateMerge(OpenApi.annotations({ title: "Catalogue", description: "Public: no key needed." }))
{}

export const CreateKeyBody = Schema.Struct({
  name: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(128)),
  permissions: Schema.optionalKey(Schema.Array(Permission)),
  machine_id: Schema.optional(Schema.NullOr(Id)),
  subscription_id: Schema.optional(Schema.NullOr(Id)),
  rental_id: Schema.optional(Schema.NullOr(Id))
})

export class AccountGroup extends HttpApiGroup.make("account")
  .add(
    HttpApiEndpoint.get("me", "/me", { success: Me }).annotate(RequiredPermission, "read"),
    HttpApiEndpoint.get("listKeys", "/keys", { success: list(Key) }).annotate(RequiredPermission, "read"),
    HttpApiEndpoint.post("createKey", "/keys", {
      payload: CreateKeyBody,
      success: CreatedKey,
      error: [Errors.BadRequest, Errors.Forbidden, Errors.NotFound]
    })
      .annotate(RequiredPermission, "manage")
      .middleware(Idempotency),
    HttpApiEndpoint.delete("revokeKey", "/keys/:id", {
      params: { id: Id },
      success: Schema.Struct({ id: Schema.String, revoked: Schema.Literal(true) }),
      error: Errors.NotFound
    }).annotate(RequiredPermission, "manage")
  )
  .middleware(Authentication)
  .annotateMerge(OpenApi.annotations({ title: "Account", description: "Account and API keys." }))
{}

export class PlatformApi extends HttpApi.make("platform")
  .add(CatalogueGroup)
  .add(AccountGroup)
  // Applies to the groups added above: keep it after the last `.add`.
  .middleware(SchemaErrors)
  .annotateMerge(OpenApi.annotations({
    title: "Model Platform API",
    version: "1.0.0",
    description: "Catalogue, account, credits, billing, keys and agents. Inference lives under /v1."
  }))
{}
