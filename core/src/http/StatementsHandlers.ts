/**
 * The handlers of the statements group (StatementsApi.ts): the JSON statement as the use-case
 * answers it, or (format=csv) the same figures as a CSV attachment, statement-YYYY-MM.csv.
 */
import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { PlatformApi } from "./Api.ts"
import { CurrentCaller } from "./Security.ts"
import { makeStatements, statementCsv, statementJson } from "../billing/Statements.ts"
import { answered } from "./Refusals.ts"

export const StatementsHandlers = HttpApiBuilder.group(PlatformApi, "statements", Effect.fnUntraced(function*(handlers) {
  const statements = answered(yield* makeStatements)
  return handlers
    .handle("list", () => Effect.flatMap(CurrentCaller, statements.list))
    .handle("statement", ({ params, query }) =>
      Effect.flatMap(CurrentCaller, (caller) =>
        Effect.map(statements.statement(caller, params.month), (s) =>
          query.format === "csv"
            ? HttpServerResponse.text(statementCsv(s), {
              contentType: "text/csv; charset=utf-8",
              headers: {
                "cache-control": "no-store",
                "x-content-type-options": "nosniff",
                "content-disposition": `attachment; filename="statement-${s.month}.csv"`
              }
            })
            : statementJson(s))))
    .handle("invoicing", ({ payload }) =>
      Effect.flatMap(CurrentCaller, (caller) => statements.requestInvoicing(caller, payload)))
}))
