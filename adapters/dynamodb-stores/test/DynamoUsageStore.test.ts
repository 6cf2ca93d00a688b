/**
 * The usage store on DynamoDB Local: the shared contract suite, then what only this store has:
 * its two items per record, amounts of 38 digits, and records tried again through transaction
 * conflicts (which DynamoDB Local never answers, so they are injected here).
 */
import { GetItemCommand, TransactionCanceledException, TransactWriteItemsCommand } from "@aws-sdk/client-dynamodb"
import { assert, layer } from "@effect/vitest"
import { generateId, toTimestamp } from "@model-platform/core/kernel"
import { type UsageRecord, UsageStore } from "@model-platform/core/billing"
import { usageStoreContract } from "@model-platform/contract-kit/UsageContract"
import { Effect, Layer } from "effect"
import { DynamoConfig } from "../src/DynamoTable.ts"
import { UsageKeys, UsageStoreDynamo } from "../src/DynamoUsageStore.ts"
import { useDynamoLocal } from "./dynamoLocal.ts"

const { freshTable } = useDynamoLocal("usage-test")

usageStoreContract("UsageStoreDynamo on DynamoDB Local", UsageStoreDynamo.pipe(Layer.provide(freshTable())))

const layerOptions = { excludeTestServices: true, timeout: "60 seconds" } as const
const at = (ms: number) => toTimestamp(Date.UTC(2026, 0, 15) + ms)

const newRecord = (accountId: string, fields: Partial<UsageRecord> = {}) =>
  Effect.map(generateId("usage"), (ref): UsageRecord => ({
    ref,
    account_id: accountId,
    at: at(0),
    key_id: "key_a",
    agent_id: "agent_1",
    machine_id: "m_1",
    service: "chat",
    model: "ref-chat",
    unit: "tokens",
    quantity: 10n,
    input_tokens: 6n,
    output_tokens: 4n,
    list_credits: 20n,
    credits: 20n,
    from_allowance: 0n,
    from_trial: 0n,
    ...fields
  }))

layer(UsageStoreDynamo.pipe(Layer.provideMerge(freshTable())), layerOptions)("UsageStoreDynamo items", (it) => {
  it.effect("a record is two items, its ref and its place in the account's list, and adds to its day's rollup", () =>
    Effect.gen(function*() {
      const store = yield* UsageStore
      const { client, tableName } = yield* DynamoConfig
      const record = yield* newRecord(yield* generateId("acct"))
      const get = (key: { pk: string; sk: string }) =>
        Effect.promise(() =>
          client.send(new GetItemCommand({ TableName: tableName, Key: { pk: { S: key.pk }, sk: { S: key.sk } }, ConsistentRead: true }))
        )
      assert.strictEqual(yield* store.record(record), "Recorded")
      for (const key of [UsageKeys.ref(record.ref), UsageKeys.listed(record.account_id, record.at, record.ref)]) {
        assert.strictEqual((yield* get(key)).Item?.["credits"]?.N, "20", key.pk)
      }
      const second = yield* newRecord(record.account_id, { at: at(1_000) })
      assert.strictEqual(yield* store.record(second), "Recorded")
      assert.strictEqual(yield* store.record(second), "Duplicate")
      const rollup = (yield* get(UsageKeys.rollup(record))).Item
      assert.deepStrictEqual([rollup?.["calls"]?.N, rollup?.["credits"]?.N, rollup?.["agent_id"]?.S], ["2", "40", "agent_1"])
    }))

  it.effect("amounts of 38 digits round-trip and sum exactly", () =>
    Effect.gen(function*() {
      const store = yield* UsageStore
      const account = yield* generateId("acct")
      const big = 10n ** 37n + 123_456_789n
      const a = yield* newRecord(account, { credits: big, list_credits: big, quantity: big })
      const b = yield* newRecord(account, { credits: big, at: at(1) })
      assert.strictEqual(yield* store.record(a), "Recorded")
      assert.strictEqual(yield* store.record(b), "Recorded")
      assert.deepStrictEqual(yield* store.byRef(a.ref), a)
      assert.strictEqual(yield* store.spent({ account_id: account, from: at(0), to: at(2) }), 2n * big)
    }))
})

let conflicts = 0
const conflictFor = (command: TransactWriteItemsCommand): Error | undefined => {
  if (Math.random() >= 0.5) return undefined
  conflicts++
  const items = command.input.TransactItems ?? []
  return new TransactionCanceledException({
    message: "Transaction cancelled, please refer cancellation reasons for specific reasons [TransactionConflict]",
    $metadata: {},
    CancellationReasons: items.map((_, i) => ({ Code: i === items.length - 1 ? "TransactionConflict" : "None" }))
  })
}

layer(UsageStoreDynamo.pipe(Layer.provide(freshTable(conflictFor))), layerOptions)(
  "UsageStoreDynamo under transaction conflicts",
  (it) => {
    it.effect("conflicting records are tried again until they go through, once per ref", () =>
      Effect.gen(function*() {
        const store = yield* UsageStore
        const account = yield* generateId("acct")
        const records = yield* Effect.all(Array.from({ length: 10 }, (_, i) => newRecord(account, { at: at(i) })))
        const results = yield* Effect.all(
          [...records, ...records].map(store.record),
          { concurrency: "unbounded" }
        )
        assert.strictEqual(results.filter((r) => r === "Recorded").length, 10)
        assert.deepStrictEqual(yield* store.list({ account_id: account, from: at(0), to: at(10) }), records)
        assert.isAbove(conflicts, 3)
      }))
  }
)
