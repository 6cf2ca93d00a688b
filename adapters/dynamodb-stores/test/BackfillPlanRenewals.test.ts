/**
 * The renewing index backfill (src/BackfillPlanRenewals.ts,
 * adapters/lambda/scripts/backfill-plan-renewals.ts) on DynamoDB Local. Plans of the previous
 * release are simulated by inserting them through the store and then deleting their index item and
 * removing their `version` with raw commands. Checked: `dueRenewals` finds exactly the renewing
 * plans after it (and only the indexed one before); a second run writes nothing; a dry run writes
 * nothing; a plan that stopped renewing gets no index item, neither before the backfill nor when it
 * stops (or moves its period, or is indexed by the live code) between the Scan and the write; the
 * command itself.
 */
import {
  DeleteItemCommand,
  GetItemCommand,
  QueryCommand,
  TransactWriteItemsCommand,
  UpdateItemCommand
} from "@aws-sdk/client-dynamodb"
import { assert, describe, it } from "@effect/vitest"
import { generateId, toTimestamp } from "@model-platform/core/kernel"
import { PlanStore, type SubscriptionRecord } from "@model-platform/core/plans"
import { Effect, Layer } from "effect"
import { execFile } from "node:child_process"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll } from "vitest"
import { backfillPlanRenewals, type PlanReport } from "../src/BackfillPlanRenewals.ts"
import { PlanKeys, PlanStoreDynamo } from "../src/DynamoPlanStore.ts"
import { createTable, DynamoConfig, type DynamoSettings, makeDocumentClient } from "../src/DynamoTable.ts"
import { type DynamoLocal, localClientConfig, startDynamoLocal } from "./dynamoLocal.ts"

// Started here rather than with useDynamoLocal: the command test needs the endpoint.
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

/** A fresh table per test (the Scan sees the whole table), and the plan store on it. */
const FreshTable = Layer.effect(
  DynamoConfig,
  Effect.gen(function*() {
    const settings = yield* Effect.acquireRelease(
      Effect.sync(() => ({
        tableName: `plan-backfill-${crypto.randomUUID()}`,
        client: makeDocumentClient(localClientConfig(endpoint()))
      })),
      (settings) => Effect.sync(() => settings.client.destroy())
    )
    yield* Effect.provideService(createTable, DynamoConfig, settings)
    return settings
  })
)
const StoreAndTable = PlanStoreDynamo.pipe(Layer.provideMerge(FreshTable))
const onFreshTable = <A, E>(effect: Effect.Effect<A, E, PlanStore | DynamoConfig>) => Effect.provide(effect, StoreAndTable)

const HOUR = 3_600_000
const at = (ms: number) => toTimestamp(Date.UTC(2026, 0, 15) + ms)
/** The renewal job's "now" in these tests: plans ending before it are due. */
const NOW = at(0)

const ACCOUNT = "acct_backfill"

/** A plan through the live store. */
const insertPlan = (endMs: number, auto_renews = true) =>
  Effect.gen(function*() {
    const plan: SubscriptionRecord = {
      id: yield* generateId("sub"),
      account_id: ACCOUNT,
      order_id: yield* generateId("ord"),
      machine_id: "m-1",
      plan_id: "builder",
      paid_with: "card",
      auto_renews,
      cancel_at_period_end: false,
      current_period_start: at(endMs - 720 * HOUR),
      current_period_end: at(endMs),
      created_at: at(endMs - 720 * HOUR),
      card_reference: "pm_1",
      renewal_error: null
    }
    return yield* (yield* PlanStore).insertSubscription(plan)
  })

/** A low-level command through the table's client. */
const send = <A>(command: object) =>
  Effect.gen(function*() {
    const { client } = yield* DynamoConfig
    return yield* Effect.promise(() => (client.send.bind(client) as (c: object) => Promise<A>)(command))
  })

const rawKey = (key: { readonly pk: string; readonly sk: string }) => ({ pk: { S: key.pk }, sk: { S: key.sk } })

/** As the previous release wrote it: no index item, no `version`. */
const makeLegacy = (plan: SubscriptionRecord) =>
  Effect.gen(function*() {
    const { tableName } = yield* DynamoConfig
    yield* send(
      new DeleteItemCommand({ TableName: tableName, Key: rawKey(PlanKeys.renewing(plan.current_period_end, plan.id)) })
    )
    yield* send(
      new UpdateItemCommand({
        TableName: tableName,
        Key: rawKey(PlanKeys.subscription(plan.id)),
        UpdateExpression: "REMOVE version"
      })
    )
  })

const legacyPlan = (endMs: number, auto_renews = true) =>
  Effect.tap(insertPlan(endMs, auto_renews), makeLegacy)

/** The sort keys of every index item, in order. */
const indexKeys = Effect.gen(function*() {
  const { tableName } = yield* DynamoConfig
  const output = yield* send<{ readonly Items?: ReadonlyArray<Record<string, { S?: string }>> }>(
    new QueryCommand({
      TableName: tableName,
      KeyConditionExpression: "pk = :pk",
      ExpressionAttributeValues: { ":pk": { S: PlanKeys.renewing("", "").pk } },
      ConsistentRead: true
    })
  )
  return (output.Items ?? []).map((item) => item.sk?.S)
})

const indexKey = (plan: SubscriptionRecord) => PlanKeys.renewing(plan.current_period_end, plan.id).sk

const planItem = (plan: SubscriptionRecord) =>
  Effect.gen(function*() {
    const { tableName } = yield* DynamoConfig
    const output = yield* send<{ readonly Item?: Record<string, unknown> }>(
      new GetItemCommand({ TableName: tableName, Key: rawKey(PlanKeys.subscription(plan.id)), ConsistentRead: true })
    )
    return output.Item
  })

/** The ids `dueRenewals` answers (what the renewal job would renew), in its order. */
const dueIds = (before = NOW) =>
  Effect.gen(function*() {
    return (yield* (yield* PlanStore).dueRenewals(before, 100)).map((p) => p.id)
  })

/**
 * Two legacy renewing plans that are due and one that is not yet, a legacy plan that stopped
 * renewing before the backfill, and one renewing plan of this release (indexed).
 */
const oldData = Effect.gen(function*() {
  const current = yield* insertPlan(-3 * HOUR)
  const a = yield* legacyPlan(-2 * HOUR)
  const b = yield* legacyPlan(-HOUR)
  const later = yield* legacyPlan(500 * HOUR)
  const stopped = yield* legacyPlan(-HOUR)
  yield* (yield* PlanStore).setRenewal(ACCOUNT, stopped.id, { auto_renews: false, cancel_at_period_end: true })
  const neverRenewed = yield* legacyPlan(-HOUR, false)
  return { current, a, b, later, stopped, neverRenewed }
})

describe("BackfillPlanRenewals on DynamoDB Local", () => {
  it.live("indexes the legacy renewing plans, so dueRenewals finds exactly the renewing ones; a second run writes nothing", () =>
    onFreshTable(Effect.gen(function*() {
      const { a, b, current, later, neverRenewed, stopped } = yield* oldData
      assert.isUndefined((yield* planItem(a))?.["version"])
      assert.deepStrictEqual(yield* dueIds(), [current.id]) // the legacy plans are invisible to the job

      const reports: Array<PlanReport> = []
      const summary = yield* backfillPlanRenewals({ onPlan: (r) => Effect.sync(() => void reports.push(r)) })
      assert.deepStrictEqual(summary, { scanned: 4, indexed: 1, missing: 3, written: 3, skipped: 0 })
      assert.sameDeepMembers(reports, [a, b, later].map((p) => ({ id: p.id, current_period_end: p.current_period_end, outcome: "written" })))

      assert.deepStrictEqual(yield* dueIds(), [current.id, a.id, b.id]) // earliest end first
      assert.deepStrictEqual(yield* dueIds(at(1000 * HOUR)), [current.id, a.id, b.id, later.id])
      const keys = yield* indexKeys
      assert.sameMembers(keys, [current, a, b, later].map(indexKey))
      for (const plan of [stopped, neverRenewed]) assert.notInclude(keys.join(" "), plan.id)
      // The plan items are not written: still no version.
      assert.isUndefined((yield* planItem(a))?.["version"])

      const again = yield* backfillPlanRenewals()
      assert.deepStrictEqual(again, { scanned: 4, indexed: 4, missing: 0, written: 0, skipped: 0 })
      assert.deepStrictEqual(yield* indexKeys, keys)

      // The live code takes over: a legacy plan stopping now leaves the index.
      yield* (yield* PlanStore).setRenewal(ACCOUNT, a.id, { auto_renews: false, cancel_at_period_end: true })
      assert.deepStrictEqual(yield* dueIds(), [current.id, b.id])
    })))

  it.live("a dry run writes nothing", () =>
    onFreshTable(Effect.gen(function*() {
      const { a, b, current, later } = yield* oldData
      const before = yield* indexKeys
      const reports: Array<PlanReport> = []
      const summary = yield* backfillPlanRenewals({ dryRun: true, onPlan: (r) => Effect.sync(() => void reports.push(r)) })
      assert.deepStrictEqual(summary, { scanned: 4, indexed: 1, missing: 3, written: 0, skipped: 0 })
      assert.sameMembers(reports.map((r) => `${r.id} ${r.outcome}`), [a, b, later].map((p) => `${p.id} would_write`))
      assert.deepStrictEqual(yield* indexKeys, before)
      assert.deepStrictEqual(yield* dueIds(), [current.id])
    })))

  /**
   * The backfill with its own client, which runs `landing` once just before its first write
   * reaches the table: live writes between the Scan and the backfill's transactions.
   */
  const interceptedBackfill = (landing: () => Promise<unknown>) =>
    Effect.gen(function*() {
      const settings = yield* DynamoConfig
      let landed = false
      const client = Object.create(settings.client, {
        send: {
          value: async (command: unknown, options?: unknown) => {
            if (!landed && command instanceof TransactWriteItemsCommand) {
              landed = true
              await landing()
            }
            return (settings.client.send as (c: unknown, o?: unknown) => Promise<unknown>)(command, options)
          }
        }
      }) as DynamoSettings["client"]
      return yield* Effect.provideService(backfillPlanRenewals(), DynamoConfig, { ...settings, client })
    })

  it.live("plans that stop renewing, renew or are indexed by the live code after the Scan are skipped, never resurrected", () =>
    onFreshTable(Effect.gen(function*() {
      const store = yield* PlanStore
      const stops = yield* legacyPlan(-3 * HOUR)
      const renews = yield* legacyPlan(-2 * HOUR)
      const toggles = yield* legacyPlan(-HOUR)
      const untouched = yield* legacyPlan(-HOUR)
      const renewedEnd = at(700 * HOUR)
      const landing = () =>
        Effect.runPromise(Effect.gen(function*() {
          yield* store.setRenewal(ACCOUNT, stops.id, { auto_renews: false, cancel_at_period_end: true })
          assert.strictEqual(
            yield* store.renew({
              subscription_id: renews.id,
              order_id: yield* generateId("ord"),
              after_period_end: renews.current_period_end,
              current_period_start: renews.current_period_end,
              current_period_end: renewedEnd
            }),
            "renewed"
          )
          // Off and on again: the live code writes its index item (it was renewing when turned on).
          yield* store.setRenewal(ACCOUNT, toggles.id, { auto_renews: false, cancel_at_period_end: true })
          yield* store.setRenewal(ACCOUNT, toggles.id, { auto_renews: true, cancel_at_period_end: false })
        }))
      const summary = yield* interceptedBackfill(landing)
      assert.deepStrictEqual(summary, { scanned: 4, indexed: 0, missing: 4, written: 1, skipped: 3 })
      assert.sameMembers(yield* indexKeys, [
        PlanKeys.renewing(renewedEnd, renews.id).sk, // moved by renew, not put back at the old end
        indexKey(toggles),
        indexKey(untouched)
      ])
      assert.deepStrictEqual(yield* dueIds(), [toggles.id, untouched.id].sort())
      assert.deepStrictEqual((yield* backfillPlanRenewals()).written, 0)
    })))
})

// ---------------------------------------------------------------------------------------------
// the command

const here = Path.dirname(fileURLToPath(import.meta.url))
// The command is the Lambda shell's (it reads the functions' TABLE_NAME through
// adapters/lambda/src/Config.ts); it runs here, beside the library it wraps, on the same fixtures.
const SCRIPT = Path.join(here, "..", "..", "lambda", "scripts", "backfill-plan-renewals.ts")

const runCommand = (args: ReadonlyArray<string>) =>
  Effect.promise(() =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(process.execPath, [SCRIPT, ...args], {
        env: { ...process.env, AWS_REGION: "local", AWS_ACCESS_KEY_ID: "local", AWS_SECRET_ACCESS_KEY: "local", TABLE_NAME: "" },
        timeout: 60_000
      }, (error, stdout, stderr) => resolve({ code: error === null ? 0 : Number(error.code ?? 1), stdout, stderr }))
    })
  )

describe("scripts/backfill-plan-renewals.ts", () => {
  it.live("dry run, then the table, then again; a usage error", () =>
    onFreshTable(Effect.gen(function*() {
      const { a, b, current } = yield* oldData
      const { tableName } = yield* DynamoConfig
      const table = ["--table", tableName, "--endpoint", endpoint()]
      const dry = yield* runCommand([...table, "--dry-run"])
      assert.strictEqual(dry.code, 0, dry.stderr)
      assert.include(dry.stdout, `${a.id}: would write (period ends ${a.current_period_end})\n`)
      assert.match(dry.stdout, /dry run: 4 renewing plans scanned: 1 already indexed, 3 missing; 0 written, 0 skipped\n$/)
      const run = yield* runCommand(table)
      assert.strictEqual(run.code, 0, run.stderr)
      assert.include(run.stdout, `${b.id}: written (period ends ${b.current_period_end})\n`)
      assert.match(run.stdout, /\n4 renewing plans scanned: 1 already indexed, 3 missing; 3 written, 0 skipped\n$/)
      const again = yield* runCommand(table)
      assert.strictEqual(again.code, 0, again.stderr)
      assert.match(again.stdout, /\n4 renewing plans scanned: 4 already indexed, 0 missing; 0 written, 0 skipped\n$/)
      assert.deepStrictEqual(yield* dueIds(), [current.id, a.id, b.id])
      const bad = yield* runCommand(["--tabel", "x"])
      assert.strictEqual(bad.code, 2)
      assert.include(bad.stderr, "usage:")
    })), { timeout: 120_000 })
})
