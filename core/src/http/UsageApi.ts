/**
 * The usage group of the management API (added to PlatformApi in http/Api.ts): GET /billing/usage
 * (a report grouped by day, service, model, key or agent) and GET /billing/usage.csv (the records,
 * or the groups, as CSV). The query's values are checked here (a bad date or group_by is a 400
 * naming the field); how they combine is the use-case's (billing/Usage.ts).
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import * as Errors from "./Errors.ts"
import { MAX_ID_LENGTH } from "../kernel/Limits.ts"
import { Text } from "../kernel/Text.ts"
import { Authentication, RequiredPermission } from "./Security.ts"
import { Usage, UsageGroupBy, UtcDate, UtcMonth } from "../billing/Schemas.ts"
import { MAX_USAGE_DAYS } from "../billing/Usage.ts"

const describe = <S extends Schema.Top>(schema: S, description: string) => schema.annotate({ description }) as S

const rangeQuery = {
  from: Schema.optionalKey(describe(UtcDate, "First day (UTC), included. Default: the first day of to's month.")),
  to: Schema.optionalKey(describe(UtcDate, "Last day (UTC), included. Default: today.")),
  month: Schema.optionalKey(describe(UtcMonth, "A calendar month (UTC) instead of from/to."))
}

/** The CSV file: text/csv, streamed. */
const UsageCsvFile = Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/csv" })).annotate({
  description: "time_utc,service,model,unit,quantity,key_id,agent_id,from_allowance,from_trial,list_credits,credits,ref " +
    "(one line per usage record, oldest first), or key,label,calls,list_credits,credits (one line per group) with group_by."
})

export class UsageApiGroup extends HttpApiGroup.make("usage")
  .add(
    HttpApiEndpoint.get("report", "/billing/usage", {
      query: {
        group_by: Schema.optionalKey(describe(UsageGroupBy, "What each row totals. Default: day.")),
        ...rangeQuery
      },
      success: Usage,
      error: Errors.BadRequest
    }).annotate(RequiredPermission, "read"),
    HttpApiEndpoint.get("csv", "/billing/usage.csv", {
      query: {
        group_by: Schema.optionalKey(describe(UsageGroupBy, "One line per group instead of one per record.")),
        ...rangeQuery,
        key: Schema.optionalKey(describe(Text(1, MAX_ID_LENGTH), "Only this key's usage (a key id).")),
        service: Schema.optionalKey(describe(Text(1, MAX_ID_LENGTH), "Only this service's usage."))
      },
      success: UsageCsvFile,
      error: Errors.BadRequest
    }).annotate(RequiredPermission, "read")
  )
  .middleware(Authentication)
  .annotateMerge(OpenApi.annotations({
    title: "Usage",
    description: `Usage reports over whole UTC days, at most ${MAX_USAGE_DAYS} of them, from per-day rollups; ` +
      "the CSV export streams every usage record."
  }))
{}
