/**
 * The one-off backfill of the plan store's renewing index
 * (adapters/dynamodb-stores/src/BackfillPlanRenewals.ts, docs/lambda-ledger.md "Backfilling the
 * renewing plans index"), for a table holding plans written before the store kept that index. Run
 * once, after the release with plan renewals is deployed to every function. Safe to run while the
 * service runs, and again:
 *
 *   ./platform node adapters/lambda/scripts/backfill-plan-renewals.ts \
 *     [--table <name>] [--endpoint <url>] [--dry-run]
 *
 * --table      the table; default: TABLE_NAME, the variable the functions read (src/ConfigNames.ts)
 * --endpoint   a DynamoDB endpoint (DynamoDB Local); default: the SDK's own resolution
 * --dry-run    scan and print the plans missing their index item; write nothing
 *
 * Region and credentials come from the AWS SDK's default chain (AWS_REGION, AWS_PROFILE, ...),
 * as for the functions' client. Prints one line per plan that had no index item, then a summary
 * line. Exits 2 on a usage error.
 */
import { Config, ConfigProvider, Effect, Option } from "effect"
import { parseArgs } from "node:util"
import { backfillPlanRenewals, type PlanReport } from "@model-platform/dynamodb-stores"
import { ENV } from "../src/ConfigNames.ts"
import { DynamoConfig } from "@model-platform/dynamodb-stores"

const usage = (problem: string): never => {
  process.stderr.write(`${problem}\nusage: backfill-plan-renewals.ts [--table <name>] [--endpoint <url>] [--dry-run]\n`)
  process.exit(2)
}

const parsed = (() => {
  try {
    return parseArgs({
      options: {
        table: { type: "string" },
        endpoint: { type: "string" },
        "dry-run": { type: "boolean", default: false }
      },
      strict: true,
      allowPositionals: false
    }).values
  } catch (error) {
    return usage(error instanceof Error ? error.message : String(error))
  }
})()
const dryRun = parsed["dry-run"]

/** The table: --table, else the functions' own variable. */
const tableFromEnv = Effect.runSync(
  Effect.provideService(
    Effect.gen(function*() {
      return yield* Config.String(ENV.table).pipe(Config.option)
    }),
    ConfigProvider.ConfigProvider,
    ConfigProvider.fromEnv()
  ).pipe(Effect.orElseSucceed(() => Option.none<string>()))
)
const tableName = parsed.table ?? Option.getOrUndefined(tableFromEnv) ?? usage(`no table: pass --table or set ${ENV.table}`)

const line = (text: string) => Effect.sync(() => process.stdout.write(`${text}\n`))

const printPlan = (report: PlanReport) =>
  line(`${report.id}: ${report.outcome.replace("_", " ")} (period ends ${report.current_period_end})`)

const program = Effect.gen(function*() {
  yield* line(`Backfilling the renewing plans index in ${tableName}${dryRun ? " (dry run: nothing is written)" : ""}`)
  const s = yield* backfillPlanRenewals({ dryRun, onPlan: printPlan })
  yield* line(
    `${dryRun ? "dry run: " : ""}${s.scanned} renewing plans scanned: ${s.indexed} already indexed, ` +
      `${s.missing} missing; ${s.written} written, ${s.skipped} skipped`
  )
}).pipe(
  Effect.provide(DynamoConfig.layerClient(tableName, parsed.endpoint === undefined ? {} : { endpoint: parsed.endpoint }))
)

await Effect.runPromise(program)
