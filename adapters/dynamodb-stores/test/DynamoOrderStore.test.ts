/**
 * The order store on DynamoDB Local: the shared contract suite (`orderStoreContract`, with its
 * concurrency tests) on a fresh table, then what only this store has: its index items (the
 * unfulfilled listing goes with the receipt, also when the receipt came first), amounts beyond
 * 2^53 kept exact, and a receipt item written before `counts_toward_tier` read by its kind. One DynamoDB Local serves the file; it is stopped after it (no Java process
 * outlives the file).
 */
import { GetItemCommand, QueryCommand, UpdateItemCommand } from "@aws-sdk/client-dynamodb"
import { assert, describe, layer } from "@effect/vitest"
import { generateId } from "@model-platform/core/kernel"
import { type OrderRecord, OrderStore } from "@model-platform/core/payments"
import { orderStoreContract } from "@model-platform/contract-kit/OrderContract"
import { makeOrder as contractOrder } from "@model-platform/contract-kit/OrderContractSupport"
import { at } from "@model-platform/contract-kit/SampleRecords"
import { Effect, Layer } from "effect"
import { OrderKeys, OrderStoreDynamo, UNFULFILLED_PK } from "../src/DynamoOrderStore.ts"
import { DynamoConfig } from "../src/DynamoTable.ts"
import { useDynamoLocal } from "./dynamoLocal.ts"

const { freshTable } = useDynamoLocal("orders-test")
const FreshTable = freshTable()

orderStoreContract("OrderStoreDynamo on DynamoDB Local", OrderStoreDynamo.pipe(Layer.provide(FreshTable)))

// ---------------------------------------------------------------------------------------------
// this store's own items

/** An order of a fresh account (the contract kit's, every field set). */
const makeOrder = (overrides: Partial<OrderRecord> = {}) =>
  Effect.flatMap(generateId("acct"), (accountId) => contractOrder(accountId, overrides))

const StoreAndTable = OrderStoreDynamo.pipe(Layer.provideMerge(FreshTable))

layer(StoreAndTable, { excludeTestServices: true, timeout: "60 seconds" })("OrderStoreDynamo items", (it) => {
  /** The order ids listed as unfulfilled. */
  const listedUnfulfilled = Effect.gen(function*() {
    const { client, tableName } = yield* DynamoConfig
    const output = yield* Effect.promise(() =>
      client.send(
        new QueryCommand({
          TableName: tableName,
          KeyConditionExpression: "pk = :pk",
          ExpressionAttributeValues: { ":pk": { S: UNFULFILLED_PK } },
          ConsistentRead: true
        })
      )
    )
    return (output.Items ?? []).map((item) => item.order_id?.S)
  })

  describe("the unfulfilled listing", () => {
    it.effect("is written by markPaid and deleted with the receipt", () =>
      Effect.gen(function*() {
        const store = yield* OrderStore
        const order = yield* makeOrder()
        yield* store.insertOrder(order)
        assert.notInclude(yield* listedUnfulfilled, order.id)
        assert.isTrue(yield* store.markPaid(order.id, "card", at(10)))
        assert.include(yield* listedUnfulfilled, order.id)
        const receiptId = yield* generateId("rcpt")
        assert.strictEqual(
          yield* store.insertReceipt({
            id: receiptId,
            account_id: order.account_id,
            order_id: order.id,
            kind: "credits",
            title: order.title,
            paid_at: at(10),
            amount_cents: order.amount_cents,
            currency: order.currency,
            credits: order.credits,
            paid_with: "card",
            auto_reload: false,
            counts_toward_tier: true
          }),
          "inserted"
        )
        assert.notInclude(yield* listedUnfulfilled, order.id)
        assert.notInclude((yield* store.unfulfilled(10_000)).map((o) => o.id), order.id)
      }))

    it.effect("is not written when the receipt came first", () =>
      Effect.gen(function*() {
        const store = yield* OrderStore
        const order = yield* makeOrder()
        yield* store.insertOrder(order)
        yield* store.insertReceipt({
          id: yield* generateId("rcpt"),
          account_id: order.account_id,
          order_id: order.id,
          kind: "credits",
          title: order.title,
          paid_at: at(10),
          amount_cents: order.amount_cents,
          currency: order.currency,
          credits: order.credits,
          paid_with: "card",
          auto_reload: false,
          counts_toward_tier: true
        })
        assert.isTrue(yield* store.markPaid(order.id, "card", at(10)))
        assert.isFalse(yield* store.markPaid(order.id, "card", at(11)))
        assert.strictEqual((yield* store.findOrder(order.id))?.status, "paid")
        assert.notInclude(yield* listedUnfulfilled, order.id)
      }))
  })

  it.effect("amounts beyond 2^53 are stored as exact decimal numbers", () =>
    Effect.gen(function*() {
      const store = yield* OrderStore
      const { client, tableName } = yield* DynamoConfig
      const huge = 10n ** 37n + 123_456_789n
      const order = yield* makeOrder({
        credits: huge,
        deposit: {
          address: `0x${crypto.randomUUID()}`,
          memo: "m",
          chain: "base",
          token: "USDC",
          decimals: 6,
          amount: huge + 1n
        }
      })
      yield* store.insertOrder(order)
      assert.deepStrictEqual(yield* store.findOrder(order.id), order)
      assert.deepStrictEqual(yield* store.findByDepositAddress(order.deposit!.address), order)
      const key = OrderKeys.order(order.id)
      const output = yield* Effect.promise(() =>
        client.send(
          new QueryCommand({
            TableName: tableName,
            KeyConditionExpression: "pk = :pk AND sk = :sk",
            ExpressionAttributeValues: { ":pk": { S: key.pk }, ":sk": { S: key.sk } },
            ConsistentRead: true
          })
        )
      )
      const item = output.Items?.[0]
      assert.strictEqual(item?.credits?.N, huge.toString())
      assert.strictEqual(item?.deposit?.M?.amount?.N, (huge + 1n).toString())
    }))

  it.effect("details are a map of exact numbers, and an order item without them (written before) reads as null", () =>
    Effect.gen(function*() {
      const store = yield* OrderStore
      const { client, tableName } = yield* DynamoConfig
      const order = yield* makeOrder({
        type: "rental",
        credits: 0n,
        machine_id: "m-1",
        details: { kind: "rental", cpu_cores: 4, memory_gb: 16, gpu: 1, storage_gb: 0, hours: 720 }
      })
      yield* store.insertOrder(order)
      const key = OrderKeys.order(order.id)
      const output = yield* Effect.promise(() =>
        client.send(
          new GetItemCommand({ TableName: tableName, Key: { pk: { S: key.pk }, sk: { S: key.sk } }, ConsistentRead: true })
        )
      )
      assert.deepStrictEqual(output.Item?.details, {
        M: {
          kind: { S: "rental" },
          cpu_cores: { N: "4" },
          memory_gb: { N: "16" },
          gpu: { N: "1" },
          storage_gb: { N: "0" },
          hours: { N: "720" }
        }
      })
      yield* Effect.promise(() =>
        client.send(
          new UpdateItemCommand({
            TableName: tableName,
            Key: { pk: { S: key.pk }, sk: { S: key.sk } },
            UpdateExpression: "REMOVE details"
          })
        )
      )
      assert.deepStrictEqual(yield* store.findOrder(order.id), { ...order, details: null })
      assert.deepStrictEqual((yield* store.listOrders(order.account_id, 10)).map((o) => o.details), [null])
    }))

  it.effect("a receipt item without counts_toward_tier (written before it) reads by its kind, as it was counted", () =>
    Effect.gen(function*() {
      const store = yield* OrderStore
      const { client, tableName } = yield* DynamoConfig
      const accountId = yield* generateId("acct")
      const receipt = Effect.fnUntraced(function*(kind: "credits" | "subscription", counts: boolean) {
        return {
          id: yield* generateId("rcpt"), account_id: accountId, order_id: yield* generateId("ord"), kind, title: kind,
          paid_at: at(10), amount_cents: 100n, currency: "USD", credits: 1_000n, paid_with: "card" as const,
          auto_reload: false, counts_toward_tier: counts
        }
      })
      // Flags against their kinds, so what reads back after the attribute is gone is the kind's rule.
      const credits = yield* receipt("credits", false)
      const plan = yield* receipt("subscription", true)
      for (const r of [credits, plan]) yield* store.insertReceipt(r)
      const listed = yield* Effect.promise(() =>
        client.send(
          new QueryCommand({
            TableName: tableName,
            KeyConditionExpression: "pk = :pk AND begins_with(sk, :receipts)",
            ExpressionAttributeValues: { ":pk": { S: `ORDERACCOUNT#${accountId}` }, ":receipts": { S: "RECEIPT#" } },
            ConsistentRead: true
          })
        )
      )
      const keys = [OrderKeys.receipt(credits.id), OrderKeys.receipt(plan.id), ...(listed.Items ?? []).map((i) => ({ pk: i.pk!.S!, sk: i.sk!.S! }))]
      assert.strictEqual(keys.length, 4)
      for (const key of keys) {
        yield* Effect.promise(() =>
          client.send(
            new UpdateItemCommand({
              TableName: tableName,
              Key: { pk: { S: key.pk }, sk: { S: key.sk } },
              UpdateExpression: "REMOVE counts_toward_tier"
            })
          )
        )
      }
      assert.strictEqual((yield* store.getReceipt(accountId, credits.id))?.counts_toward_tier, true)
      assert.strictEqual((yield* store.getReceipt(accountId, plan.id))?.counts_toward_tier, false)
      assert.deepStrictEqual(
        (yield* store.listReceipts(accountId)).map((r) => [r.kind, r.counts_toward_tier]).sort(),
        [["credits", true], ["subscription", false]]
      )
    }))

  it.effect("a deposit address of another order is a defect, and changes nothing", () =>
    Effect.gen(function*() {
      const store = yield* OrderStore
      const first = yield* makeOrder()
      const second = yield* makeOrder()
      yield* store.insertOrder(first)
      yield* store.insertOrder(second)
      const deposit = {
        address: `0x${crypto.randomUUID()}`,
        memo: null,
        chain: "base",
        token: "USDC",
        decimals: 6,
        amount: 25_000_000n
      }
      assert.isDefined(yield* store.startPayment(first.id, { method: "stablecoin", deposit }, at(2_000_000), at(5)))
      const exit = yield* Effect.exit(store.startPayment(second.id, { method: "stablecoin", deposit }, at(2_000_000), at(5)))
      assert.isTrue(exit._tag === "Failure")
      assert.deepStrictEqual(yield* store.findOrder(second.id), second)
      assert.strictEqual((yield* store.findByDepositAddress(deposit.address))?.id, first.id)
    }))
})
