/**
 * The management HTTP contract, defined once: paths, query and body schemas, responses and errors.
 * Handlers (Handlers.ts), the OpenAPI document and every adapter derive from it.
 */
import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Me } from "../keys/Account.ts"
import { AgentsApiGroup, AgentsGroup } from "./AgentsApi.ts"
import { AlertsGroup } from "./AlertsApi.ts"
import { DatasetsGroup } from "./DatasetsApi.ts"
import { FieldworkGroup } from "./FieldworkApi.ts"
import { LimitsGroup } from "./LimitsApi.ts"
import { PlansGroup } from "./PlansApi.ts"
import { StatementsGroup } from "./StatementsApi.ts"
import { BillingSummary } from "../billing/Schemas.ts"
import { Receipt, ReceiptList } from "../payments/Orders.ts"
import { UsageApiGroup } from "./UsageApi.ts"
import * as Catalogue from "../catalogue/Catalogue.ts"
import { ActivityList, CreditBalance, RedeemResponse, RedeemTicket, TicketList } from "../ledger/Credits.ts"
import * as Errors from "./Errors.ts"
import { ClaimLink, Identity } from "../accounts/Identity.ts"
import { MAX_ID_LENGTH, MAX_NAME_LENGTH, MAX_PERMISSIONS, MAX_SHORT_TEXT_LENGTH } from "../kernel/Limits.ts"
import { CreatedKey, Key } from "../keys/Keys.ts"
import { CreateOrder, Order, OrderList, PayOrder, Quote } from "../payments/Orders.ts"
import { ScopeRuleAnnotation } from "../keys/KeyScope.ts"
import { Permission } from "../keys/Permissions.ts"
import { Text } from "../kernel/Text.ts"
import { SchemaErrors } from "./ErrorShape.ts"
import { Idempotency } from "./Idempotency.ts"
import { Authentication, RequiredPermission } from "./Security.ts"

const list = <S extends Schema.Top>(item: S) => Schema.Struct({ data: Schema.Array(item) })

const BooleanFromString = Schema.Literals(["true", "false"])
const Id = Text(1, MAX_ID_LENGTH)
/** A free-form query filter (region, operator...): compared, never stored, but still client text. */
const Filter = Text(0, MAX_SHORT_TEXT_LENGTH)
/** A `limit` query: a number here; the use-case checks its range and says what it accepts. */
const Limit = Schema.optionalKey(Schema.FiniteFromString)

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
        region: Schema.optionalKey(Filter),
        gpu: Schema.optionalKey(BooleanFromString),
        operator: Schema.optionalKey(Filter),
        model: Schema.optionalKey(Filter)
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
      query: { model: Id, region: Schema.optionalKey(Filter) },
      success: Catalogue.RoutePreview,
      error: Errors.NotFound
    }),
    HttpApiEndpoint.get("packages", "/packages", { success: list(Catalogue.Package) }),
    HttpApiEndpoint.get("paymentMethods", "/payment-methods", { success: Catalogue.PaymentMethods }),
    HttpApiEndpoint.post("quote", "/quotes", {
      payload: CreateOrder,
      success: Quote,
      error: [Errors.BadRequest, Errors.NotFound]
    }),
    HttpApiEndpoint.get("prices", "/billing/prices", { success: Catalogue.PriceTable }),
    HttpApiEndpoint.get("tiers", "/billing/tiers", { success: list(Catalogue.Tier) })
  )
  .annotateMerge(OpenApi.annotations({ title: "Catalogue", description: "Public: no key needed." }))
{}

export const CreateKeyBody = Schema.Struct({
  name: Text(1, MAX_NAME_LENGTH),
  permissions: Schema.optionalKey(Schema.Array(Permission).check(Schema.isMaxLength(MAX_PERMISSIONS))),
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
      .annotate(ScopeRuleAnnotation, { within: "key" })
      .middleware(Idempotency),
    HttpApiEndpoint.delete("revokeKey", "/keys/:id", {
      params: { id: Id },
      success: Schema.Struct({ id: Schema.String, revoked: Schema.Literal(true) }),
      error: [Errors.NotFound, Errors.Forbidden]
    })
      .annotate(RequiredPermission, "manage")
      .annotate(ScopeRuleAnnotation, { within: "key" })
  )
  .middleware(Authentication)
  .annotateMerge(OpenApi.annotations({ title: "Account", description: "Account and API keys." }))
{}

export class CreditsGroup extends HttpApiGroup.make("credits")
  .add(
    HttpApiEndpoint.get("balance", "/credits", { success: CreditBalance }).annotate(RequiredPermission, "read"),
    HttpApiEndpoint.get("activity", "/credits/activity", {
      query: { limit: Limit },
      success: ActivityList,
      error: Errors.BadRequest
    }).annotate(RequiredPermission, "read"),
    HttpApiEndpoint.post("redeem", "/credits/redeem", {
      payload: RedeemTicket,
      success: RedeemResponse,
      error: [Errors.NotFound, Errors.Conflict]
    })
      .annotate(RequiredPermission, "manage")
      .middleware(Idempotency),
    HttpApiEndpoint.get("tickets", "/tickets", { success: TicketList }).annotate(RequiredPermission, "read")
  )
  .middleware(Authentication)
  .annotateMerge(OpenApi.annotations({ title: "Credits", description: "Credit balance, activity and gift tickets." }))
{}

export class OrdersGroup extends HttpApiGroup.make("orders")
  .add(
    HttpApiEndpoint.post("create", "/orders", {
      payload: CreateOrder,
      success: Order,
      error: [Errors.BadRequest, Errors.NotFound, Errors.Forbidden]
    })
      .annotate(RequiredPermission, "manage")
      .annotate(ScopeRuleAnnotation, { within: "order" })
      .middleware(Idempotency),
    HttpApiEndpoint.get("list", "/orders", {
      query: { limit: Limit },
      success: OrderList,
      error: Errors.BadRequest
    }).annotate(RequiredPermission, "read"),
    HttpApiEndpoint.get("get", "/orders/:id", {
      params: { id: Id },
      success: Order,
      error: Errors.NotFound
    }).annotate(RequiredPermission, "read"),
    HttpApiEndpoint.post("pay", "/orders/:id/pay", {
      params: { id: Id },
      payload: PayOrder,
      success: Order,
      error: [Errors.BadRequest, Errors.NotFound, Errors.Conflict, Errors.Forbidden]
    })
      .annotate(RequiredPermission, "manage")
      .annotate(ScopeRuleAnnotation, { within: "order" })
      .middleware(Idempotency)
  )
  .middleware(Authentication)
  .annotateMerge(OpenApi.annotations({
    title: "Orders",
    description: "Buy credits and packages: create an order, pay it by card (pay_url) or stablecoin (payment.deposit)."
  }))
{}

export class BillingGroup extends HttpApiGroup.make("billing")
  .add(
    HttpApiEndpoint.get("summary", "/billing", { success: BillingSummary }).annotate(RequiredPermission, "read"),
    HttpApiEndpoint.get("receipts", "/billing/receipts", { success: ReceiptList }).annotate(RequiredPermission, "read"),
    HttpApiEndpoint.get("receipt", "/billing/receipts/:id", {
      params: { id: Id },
      success: Receipt,
      error: Errors.NotFound
    }).annotate(RequiredPermission, "read")
  )
  .middleware(Authentication)
  .annotateMerge(OpenApi.annotations({ title: "Billing", description: "Balance, tier, charging state and receipts." }))
{}

export class IdentityGroup extends HttpApiGroup.make("identity")
  .add(HttpApiEndpoint.get("identity", "/identity", { success: Identity, error: [Errors.BadRequest] }).annotate(RequiredPermission, "read"))
  // The guide's address for the same (the spec's "Identity and agents": {platform_url}/api/...).
  .add(HttpApiEndpoint.get("identityApi", "/api/identity", { success: Identity, error: [Errors.BadRequest] }).annotate(RequiredPermission, "read"))
  // A one-time link where the owner account's holder attaches a passkey (docs/accounts.md "The owner").
  // No Idempotency-Key: the answer holds a secret, never stored (a retry makes a new link, voiding the first).
  .add(
    HttpApiEndpoint.post("claimLink", "/identity/claim-link", {
      success: ClaimLink,
      error: [Errors.BadRequest, Errors.Forbidden, Errors.Conflict]
    }).annotate(RequiredPermission, "manage")
  )
  .middleware(Authentication)
  .annotateMerge(OpenApi.annotations({
    title: "Identity",
    description:
      "The account's human identity on the network: its DID, passkey-controlled wallet and where to manage it; a claim link that attaches a passkey to the owner account."
  }))
{}

export class PlatformApi extends HttpApi.make("platform")
  .add(CatalogueGroup)
  .add(AccountGroup)
  .add(CreditsGroup)
  .add(OrdersGroup)
  .add(BillingGroup)
  .add(UsageApiGroup)
  .add(LimitsGroup)
  .add(PlansGroup)
  .add(AlertsGroup)
  .add(StatementsGroup)
  .add(IdentityGroup)
  .add(AgentsGroup)
  .add(AgentsApiGroup)
  .add(DatasetsGroup)
  .add(FieldworkGroup)
  // Applies to the groups added above: keep it after the last `.add`.
  .middleware(SchemaErrors)
  .annotateMerge(OpenApi.annotations({
    title: "Model Platform API",
    version: "1.0.0",
    description: "Catalogue, account, credits, billing, keys, agents, datasets and fieldwork. Inference lives under /v1."
  }))
{}
