/**
 * The statements group of the management contract (added to PlatformApi in http/Api.ts):
 * GET /billing/statements and GET /billing/statements/{month} (read), POST /billing/invoicing
 * (manage). Handlers: StatementsHandlers.ts; use-cases: billing/Statements.ts.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import * as Errors from "./Errors.ts"
import { Idempotency } from "./Idempotency.ts"
import { Authentication, RequiredPermission } from "./Security.ts"
import { InvoicingRequest, InvoicingResponse, Statement, StatementMonthList, UtcMonth } from "../billing/Schemas.ts"

export const StatementFormat = Schema.Literals(["json", "csv"])

export class StatementsGroup extends HttpApiGroup.make("statements")
  .add(
    HttpApiEndpoint.get("list", "/billing/statements", { success: StatementMonthList }).annotate(RequiredPermission, "read"),
    HttpApiEndpoint.get("statement", "/billing/statements/:month", {
      params: { month: UtcMonth },
      query: {
        format: Schema.optionalKey(StatementFormat.annotate({
          description: "json (default), or csv: line,key,label,calls,list_credits,credits,usd, one line per figure."
        }))
      },
      success: Statement,
      error: [Errors.BadRequest, Errors.NotFound]
    }).annotate(RequiredPermission, "read"),
    HttpApiEndpoint.post("invoicing", "/billing/invoicing", {
      payload: InvoicingRequest,
      success: InvoicingResponse,
      error: Errors.BadRequest
    })
      .annotate(RequiredPermission, "manage")
      .middleware(Idempotency)
  )
  .middleware(Authentication)
  .annotateMerge(OpenApi.annotations({
    title: "Statements and invoicing",
    description: "Monthly statements (opening, credits added, usage by service, closing, payments), newest month first, " +
      "and the request for monthly invoiced billing, which a person reviews."
  }))
{}
