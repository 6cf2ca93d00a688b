/**
 * The one-off upgrade of idempotency records written before they were sealed and kept 24 hours
 * (adapters/dynamodb-stores/src/BackfillIdempotencyRecords.ts, docs/lambda.md "Upgrading
 * idempotency records"): gives each its `ttl` and erases the answers kept in clear. Run once, after
 * the release that seals records is deployed to every function. Safe to run while the service runs,
 * and again:
 *
 *   ./platform node adapters/lambda/scripts/backfill-idempotency-records.ts \
 *     [--table <name>] [--endpoint <url>] [--dry-run]
 *
 * --table      the table; default: TABLE_NAME, the variable the functions read (src/ConfigNames.ts)
 * --endpoint   a DynamoDB endpoint (DynamoDB Local); default: the SDK's own resolution
 * --dry-run    scan and count the records to upgrade; write nothing
 *
 * Region and credentials come from the AWS SDK's default chain, as for the functions' client.
 * Prints a summary line. Exits 2 on a usage error.
 */
import { Config, ConfigProvider, Effect, Option } from "effect"
import { parseArgs } from "node:util"
import { backfillIdempotencyRecords } from "@model-platform/dynamodb-stores"
import { ENV } from "../src/ConfigNames.ts"
import { DynamoConfig } from "@model-platform/dynamodb-stores"

const usage = (problem: string): never => {
  process.stderr.write(`${problem}\nusage: backfill-idempotency-records.ts [--table <name>] [--endpoint <url>] [--dry-run]\n`)
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

const program = Effect.gen(function*() {
  const s = yield* backfillIdempotencyRecords({ dryRun })
  yield* Effect.sync(() =>
    process.stdout.write(
      `${dryRun ? "dry run: " : ""}${tableName}: ${s.found} idempotency records without ttl (${s.answers} holding an answer); ` +
        `${s.written} upgraded, ${s.skipped} claimed anew meanwhile\n`
    )
  )
}).pipe(
  Effect.provide(DynamoConfig.layerClient(tableName, parsed.endpoint === undefined ? {} : { endpoint: parsed.endpoint }))
)

await Effect.runPromise(program)
