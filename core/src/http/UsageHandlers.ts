/**
 * The handlers of the usage group (http/UsageApi.ts): the JSON report as the use-case answers
 * it, and the CSV as a streamed raw response (text/csv; charset=utf-8, an attachment with its file
 * name), written a page of records at a time. Once the first bytes are out a failure can only cut
 * the body short: a client sees a truncated file, never a wrong one.
 */
import { Effect, Stream } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { PlatformApi } from "./Api.ts"
import { CurrentCaller } from "./Security.ts"
import { makeUsageReports } from "../billing/Usage.ts"
import { answered } from "./Refusals.ts"

const CSV_HEADERS = {
  "cache-control": "no-store",
  "x-content-type-options": "nosniff"
}

export const UsageHandlers = HttpApiBuilder.group(PlatformApi, "usage", Effect.fnUntraced(function*(handlers) {
  const reports = answered(yield* makeUsageReports)
  return handlers
    .handle("report", ({ query }) => Effect.flatMap(CurrentCaller, (caller) => reports.report(caller, query)))
    .handle("csv", ({ query }) =>
      Effect.flatMap(CurrentCaller, (caller) =>
        Effect.map(reports.csv(caller, query), ({ filename, body }) =>
          HttpServerResponse.stream(Stream.encodeText(body), {
            contentType: "text/csv; charset=utf-8",
            headers: { ...CSV_HEADERS, "content-disposition": `attachment; filename="${filename}"` }
          }))))
}))
