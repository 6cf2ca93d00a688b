/**
 * The upgrade of idempotency records of the release before sealing (src/BackfillIdempotencyRecords.ts,
 * adapters/lambda/scripts/backfill-idempotency-records.ts) on DynamoDB Local. Records of that
 * release are written with raw puts: no `ttl`, the answer in clear. Checked: after it, no record
 * holds the secret, each has its `ttl`; a record the live store wrote (sealed, with its `ttl`),
 * before the Scan or between the Scan and its update, is untouched; a second run writes nothing; a
 * dry run writes nothing; the command itself.
 */
import { GetCommand, PutCommand, ScanCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb"
import { assert, describe, it } from "@effect/vitest"
import { IdempotencyStore } from "@model-platform/core/http"
import { toTimestamp } from "@model-platform/core/kernel"
import { Effect, Layer } from "effect"
import { execFile } from "node:child_process"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll } from "vitest"
import { backfillIdempotencyRecords } from "../src/BackfillIdempotencyRecords.ts"
import { idempotencyTtl, IdempotencyStoreDynamo } from "../src/DynamoStores.ts"
import { createTable, DynamoConfig, type DynamoSettings, ItemKeys, makeDocumentClient, TTL_ATTRIBUTE } from "../src/DynamoTable.ts"
import { type DynamoLocal, localClientConfig, startDynamoLocal } from "./dynamoLocal.ts"

let local: DynamoLocal | undefined
beforeAll(async () => {
  local = await startDynamoLocal()
}, 60_000)
afterAll(async () => {
  await local?.stop()
})

const endpoint = () => {
  if (local === undefined) throw new Error("DynamoDB Local is not running")
  return local.endpoint
}

/** A fresh table per test (the Scan sees the whole table), and the idempotency store on it. */
const FreshTable = Layer.effect(
  DynamoConfig,
  Effect.gen(function*() {
    const settings = yield* Effect.acquireRelease(
      Effect.sync(() => ({ tableName: `idem-backfill-${crypto.randomUUID()}`, client: makeDocumentClient(localClientConfig(endpoint())) })),
      (settings) => Effect.sync(() => settings.client.destroy())
    )
    yield* Effect.provideService(createTable, DynamoConfig, settings)
    return settings
  })
)
const onFreshTable = <A, E>(effect: Effect.Effect<A, E, IdempotencyStore | DynamoConfig>) =>
  Effect.provide(effect, IdempotencyStoreDynamo.pipe(Layer.provideMerge(FreshTable)))

const SECRET = "mpk_3q2-pSecretOfTheReleaseBeforeSealingXXXXXXXXXX"
// An hour ago (whole seconds): the records' TTLs lie ahead, so DynamoDB Local's expiry, which
// deletes items whose TTL has passed at a moment of its own, cannot take one during a test.
const BASE = Math.floor(Date.now() / 1000) * 1000 - 3_600_000
const at = (ms: number) => toTimestamp(BASE + ms)

/** The table as the release before sealing left it, and one record the live store wrote. */
const oldData = Effect.gen(function*() {
  const { client, tableName } = yield* DynamoConfig
  const legacy = (scope: string, key: string, answer?: string) =>
    Effect.promise(() =>
      client.send(
        new PutCommand({
          TableName: tableName,
          Item: {
            ...ItemKeys.idempotency(scope, key),
            scope,
            key,
            fingerprint: "old-form",
            created_at: at(0),
            ...(answer === undefined ? {} : { response_status: 200, response_body: answer })
          }
        })
      )
    )
  yield* legacy("acct_a", "made-a-key", JSON.stringify({ id: "key_1", secret: SECRET }))
  yield* legacy("acct_a", "still-running")
  const store = yield* IdempotencyStore
  yield* store.claim({ scope: "acct_b", key: "sealed", fingerprint: "fp", created_at: at(1) })
  yield* store.complete("acct_b", "sealed", { status: 200, body: "v1.sealed" })
})

const items = Effect.gen(function*() {
  const { client, tableName } = yield* DynamoConfig
  const page = yield* Effect.promise(() => client.send(new ScanCommand({ TableName: tableName })))
  return new Map((page.Items ?? []).map((item) => [String(item["key"]), item]))
})

describe("backfillIdempotencyRecords", () => {
  it.live("gives each record of the earlier release its ttl and erases its answer; leaves sealed records alone", () =>
    onFreshTable(Effect.gen(function*() {
      yield* oldData
      const before = yield* items
      assert.include(JSON.stringify([...before.values()]), SECRET)
      assert.deepStrictEqual(yield* backfillIdempotencyRecords(), { found: 2, answers: 1, written: 2, skipped: 0 })
      const after = yield* items
      assert.notInclude(JSON.stringify([...after.values()]), SECRET.slice(8, 20))
      assert.strictEqual(after.get("made-a-key")?.["response_body"], "erased")
      assert.strictEqual(after.get("made-a-key")?.[TTL_ATTRIBUTE], idempotencyTtl(at(0)))
      assert.strictEqual(after.get("still-running")?.[TTL_ATTRIBUTE], idempotencyTtl(at(0)))
      assert.isUndefined(after.get("still-running")?.["response_body"])
      assert.deepStrictEqual(after.get("sealed"), before.get("sealed"))
      assert.deepStrictEqual(yield* backfillIdempotencyRecords(), { found: 0, answers: 0, written: 0, skipped: 0 })
    })))

  it.live("a dry run counts and writes nothing", () =>
    onFreshTable(Effect.gen(function*() {
      yield* oldData
      const before = yield* items
      assert.deepStrictEqual(yield* backfillIdempotencyRecords({ dryRun: true }), { found: 2, answers: 1, written: 0, skipped: 0 })
      assert.deepStrictEqual(yield* items, before)
    })))

  it.live("a record claimed anew between the Scan and its update is left as the live code wrote it", () =>
    onFreshTable(Effect.gen(function*() {
      const settings = yield* DynamoConfig
      const store = yield* IdempotencyStore
      yield* oldData
      const read = () =>
        Effect.promise(() =>
          settings.client.send(new GetCommand({ TableName: settings.tableName, Key: ItemKeys.idempotency("acct_a", "made-a-key") }))
        )
      // The live store replaces the expired record just before the backfill's first update lands.
      let landed = false
      const client = Object.create(settings.client, {
        send: {
          value: async (command: unknown, options?: unknown) => {
            if (!landed && command instanceof UpdateCommand) {
              landed = true
              await Effect.runPromise(store.claim({ scope: "acct_a", key: "made-a-key", fingerprint: "new", created_at: at(24 * 3_600_000) }))
            }
            return (settings.client.send as (c: unknown, o?: unknown) => Promise<unknown>)(command, options)
          }
        }
      }) as DynamoSettings["client"]
      const summary = yield* Effect.provideService(backfillIdempotencyRecords(), DynamoConfig, { ...settings, client })
      assert.deepStrictEqual(summary, { found: 2, answers: 1, written: 1, skipped: 1 })
      const item = (yield* read()).Item
      assert.strictEqual(item?.["fingerprint"], "new")
      assert.strictEqual(item?.[TTL_ATTRIBUTE], idempotencyTtl(at(24 * 3_600_000)))
      assert.isUndefined(item?.["response_body"])
    })))
})

const here = Path.dirname(fileURLToPath(import.meta.url))
// The command is the Lambda shell's (it reads the functions' TABLE_NAME through
// adapters/lambda/src/Config.ts); it runs here, beside the library it wraps, on the same fixtures.
const SCRIPT = Path.join(here, "..", "..", "lambda", "scripts", "backfill-idempotency-records.ts")

const runCommand = (args: ReadonlyArray<string>) =>
  Effect.promise(() =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(process.execPath, [SCRIPT, ...args], {
        env: { ...process.env, AWS_REGION: "local", AWS_ACCESS_KEY_ID: "local", AWS_SECRET_ACCESS_KEY: "local", TABLE_NAME: "" },
        timeout: 60_000
      }, (error, stdout, stderr) => resolve({ code: error === null ? 0 : Number(error.code ?? 1), stdout, stderr }))
    })
  )

describe("scripts/backfill-idempotency-records.ts", () => {
  it.live("dry run, then the table, then again; a usage error", () =>
    onFreshTable(Effect.gen(function*() {
      yield* oldData
      const { tableName } = yield* DynamoConfig
      const table = ["--table", tableName, "--endpoint", endpoint()]
      const dry = yield* runCommand([...table, "--dry-run"])
      assert.strictEqual(dry.code, 0, dry.stderr)
      assert.strictEqual(dry.stdout, `dry run: ${tableName}: 2 idempotency records without ttl (1 holding an answer); 0 upgraded, 0 claimed anew meanwhile\n`)
      const run = yield* runCommand(table)
      assert.strictEqual(run.code, 0, run.stderr)
      assert.strictEqual(run.stdout, `${tableName}: 2 idempotency records without ttl (1 holding an answer); 2 upgraded, 0 claimed anew meanwhile\n`)
      const again = yield* runCommand(table)
      assert.include(again.stdout, ": 0 idempotency records without ttl")
      const bad = yield* runCommand(["--nope"])
      assert.strictEqual(bad.code, 2)
      assert.include(bad.stderr, "usage: backfill-idempotency-records.ts")
    })), 120_000)
})
