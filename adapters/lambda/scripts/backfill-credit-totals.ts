/**
 * The one-off backfill of the ledger's credit total items
 * (adapters/dynamodb-stores/src/BackfillCreditTotals.ts, docs/lambda-ledger.md "Backfilling credit
 * totals"), for a table that held credit entries before the store kept those totals. Safe to run
 * while the service keeps posting credits, and again:
 *
 *   ./platform node adapters/lambda/scripts/backfill-credit-totals.ts \
 *     [--table <name>] [--endpoint <url>] [--account <id>] [--dry-run] [--concurrency 4]
 *
 * --table      the table; default: TABLE_NAME, the variable the functions read (src/ConfigNames.ts)
 * --endpoint   a DynamoDB endpoint (DynamoDB Local); default: the SDK's own resolution
 * --account    only this account; default: every account with a credit entry (one table Scan)
 * --dry-run    read and print what would change; write nothing
 *
 * Region and credentials come from the AWS SDK's default chain (AWS_REGION, AWS_PROFILE, ...),
 * exactly as the functions' client (DynamoTable.makeDocumentClient) gets them. Prints one line
 * per account and one line per total it changed (micro-credits), then a summary line. Exits 1
 * when an account was given up on (posts kept landing; run it again), 2 on a usage error.
 */
import { ConfigProvider, Config, Effect, Option } from "effect"
import { parseArgs } from "node:util"
import { type AccountReport, backfillCreditTotals } from "@model-platform/dynamodb-stores"
import { ENV } from "../src/ConfigNames.ts"
import { DynamoConfig } from "@model-platform/dynamodb-stores"

const usage = (problem: string): never => {
  process.stderr.write(
    `${problem}\nusage: backfill-credit-totals.ts [--table <name>] [--endpoint <url>] [--account <id>] ` +
      "[--dry-run] [--concurrency <n>]\n"
  )
  process.exit(2)
}

const parsed = (() => {
  try {
    return parseArgs({
      options: {
        table: { type: "string" },
        endpoint: { type: "string" },
        account: { type: "string" },
        "dry-run": { type: "boolean", default: false },
        concurrency: { type: "string", default: "4" }
      },
      strict: true,
      allowPositionals: false
    }).values
  } catch (error) {
    return usage(error instanceof Error ? error.message : String(error))
  }
})()

const concurrency = Number(parsed.concurrency)
if (!Number.isInteger(concurrency) || concurrency < 1) usage("--concurrency takes a positive integer")
if (parsed.account === "") usage("--account takes an account id")
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

const printAccount = (report: AccountReport) =>
  Effect.gen(function*() {
    const passes = report.passes === 1 ? "1 pass" : `${report.passes} passes`
    yield* line(`${report.account_id}: ${report.outcome.replace("_", " ")} (${report.totals.length} totals, ${passes})`)
    for (const c of report.changes) {
      const delta = c.after - c.before
      yield* line(`  ${c.month} ${c.type}: ${c.before} -> ${c.after} (${delta >= 0n ? "+" : ""}${delta})`)
    }
  })

const program = Effect.gen(function*() {
  yield* line(
    `Backfilling credit totals in ${tableName}${parsed.account === undefined ? "" : ` for ${parsed.account}`}` +
      `${dryRun ? " (dry run: nothing is written)" : ""}; amounts in micro-credits`
  )
  const summary = yield* backfillCreditTotals({
    account: parsed.account,
    dryRun,
    concurrency,
    onAccount: printAccount
  })
  const plural = (n: number, noun: string) => `${n} ${noun}${n === 1 ? "" : "s"}`
  yield* line(
    `${dryRun ? "dry run: " : ""}${plural(summary.accounts, "account")}: ${summary.unchanged} unchanged, ` +
      `${summary.changed} changed, ${summary.would_change} would change, ${summary.gave_up} given up; ` +
      `${plural(summary.writes, "total")} written`
  )
  return summary
}).pipe(
  Effect.provide(DynamoConfig.layerClient(tableName, parsed.endpoint === undefined ? {} : { endpoint: parsed.endpoint }))
)

const summary = await Effect.runPromise(program)
process.exitCode = summary.gave_up > 0 ? 1 : 0
