/**
 * The plan store on DynamoDB Local: the shared contract suite (`planStoreContract`, with its
 * concurrency tests) on a fresh table, then what only this store has: its items (listed under the
 * account's partition without an index, the order's item holding its one plan or rental, integers
 * kept as DynamoDB numbers, the renewing index holding exactly the renewing plans). One DynamoDB Local serves the file; it is stopped after it.
 */
import { GetItemCommand, QueryCommand } from "@aws-sdk/client-dynamodb"
import { assert, layer } from "@effect/vitest"
import { generateId, toTimestamp } from "@model-platform/core/kernel"
import { PlanStore, type RentalRecord, type SubscriptionRecord } from "@model-platform/core/plans"
import { planStoreContract } from "@model-platform/contract-kit/PlanContract"
import { Effect, Layer } from "effect"
import { PLAN_ACCOUNT_PREFIX, PlanKeys, PlanStoreDynamo } from "../src/DynamoPlanStore.ts"
import { DynamoConfig, type ItemKey } from "../src/DynamoTable.ts"
import { useDynamoLocal } from "./dynamoLocal.ts"

const { freshTable } = useDynamoLocal("plans-test")
const FreshTable = freshTable()

planStoreContract("PlanStoreDynamo on DynamoDB Local", PlanStoreDynamo.pipe(Layer.provide(FreshTable)))

// ---------------------------------------------------------------------------------------------
// this store's own items

const at = (ms: number) => toTimestamp(Date.UTC(2026, 0, 15) + ms)
const HOUR = 3_600_000

const StoreAndTable = PlanStoreDynamo.pipe(Layer.provideMerge(FreshTable))

layer(StoreAndTable, { excludeTestServices: true, timeout: "60 seconds" })("PlanStoreDynamo items", (it) => {
  const rawItem = (key: ItemKey) =>
    Effect.gen(function*() {
      const { client, tableName } = yield* DynamoConfig
      const output = yield* Effect.promise(() =>
        client.send(
          new GetItemCommand({ TableName: tableName, Key: { pk: { S: key.pk }, sk: { S: key.sk } }, ConsistentRead: true })
        )
      )
      return output.Item
    })

  const accountSortKeys = (accountId: string) =>
    Effect.gen(function*() {
      const { client, tableName } = yield* DynamoConfig
      const output = yield* Effect.promise(() =>
        client.send(
          new QueryCommand({
            TableName: tableName,
            KeyConditionExpression: "pk = :pk",
            ExpressionAttributeValues: { ":pk": { S: PlanKeys.accountRental(accountId, "", "").pk } },
            ConsistentRead: true
          })
        )
      )
      return (output.Items ?? []).map((item) => item.sk?.S)
    })

  it.effect("a plan and a rental: one item each by id, the order's item, and the account's list items", () =>
    Effect.gen(function*() {
      const store = yield* PlanStore
      const account = yield* generateId("acct")
      const plan: SubscriptionRecord = {
        id: yield* generateId("sub"),
        account_id: account,
        order_id: yield* generateId("ord"),
        machine_id: "m-1",
        plan_id: "builder",
        paid_with: "stablecoin",
        auto_renews: false,
        cancel_at_period_end: false,
        current_period_start: at(0),
        current_period_end: at(720 * HOUR),
        created_at: at(0),
        card_reference: null,
        renewal_error: null
      }
      const rental: RentalRecord = {
        id: yield* generateId("rent"),
        account_id: account,
        order_id: yield* generateId("ord"),
        machine_id: "m-1",
        cpu_cores: 64,
        memory_gb: 512,
        gpu: 8,
        storage_gb: 0,
        hours: 720,
        starts_at: at(0),
        ends_at: at(720 * HOUR),
        created_at: at(1)
      }
      yield* store.insertSubscription(plan)
      yield* store.insertRental(rental)
      assert.strictEqual((yield* rawItem(PlanKeys.subscriptionOrder(plan.order_id)))?.subscription_id?.S, plan.id)
      assert.strictEqual((yield* rawItem(PlanKeys.rentalOrder(rental.order_id)))?.rental_id?.S, rental.id)
      const stored = yield* rawItem(PlanKeys.rental(rental.id))
      assert.deepStrictEqual(
        [stored?.cpu_cores, stored?.memory_gb, stored?.gpu, stored?.storage_gb, stored?.hours],
        [{ N: "64" }, { N: "512" }, { N: "8" }, { N: "0" }, { N: "720" }]
      )
      assert.sameMembers(yield* accountSortKeys(account), [
        `${PLAN_ACCOUNT_PREFIX.subscription}${plan.created_at}#${plan.id}`,
        `${PLAN_ACCOUNT_PREFIX.rental}${rental.created_at}#${rental.id}`
      ])
      // The listing follows a plan's changes (its list item points at the plan).
      yield* store.setRenewal(account, plan.id, { auto_renews: false, cancel_at_period_end: true })
      assert.deepStrictEqual(yield* store.subscriptions(account), [{ ...plan, cancel_at_period_end: true }])
      assert.deepStrictEqual(yield* store.rentals(account), [rental])
    }))

  it.effect("the renewing index holds a plan's item exactly while it renews, keyed by its period end", () =>
    Effect.gen(function*() {
      const store = yield* PlanStore
      const account = yield* generateId("acct")
      const plan: SubscriptionRecord = {
        id: yield* generateId("sub"),
        account_id: account,
        order_id: yield* generateId("ord"),
        machine_id: "m-1",
        plan_id: "builder",
        paid_with: "card",
        auto_renews: true,
        cancel_at_period_end: false,
        current_period_start: at(0),
        current_period_end: at(720 * HOUR),
        created_at: at(0),
        card_reference: "pm_1",
        renewal_error: null
      }
      const indexed = (end: string) => Effect.map(rawItem(PlanKeys.renewing(end, plan.id)), (item) => item?.subscription_id?.S)
      yield* store.insertSubscription(plan)
      assert.strictEqual(yield* indexed(plan.current_period_end), plan.id)
      yield* store.setRenewal(account, plan.id, { auto_renews: false, cancel_at_period_end: true })
      assert.isUndefined(yield* indexed(plan.current_period_end))
      yield* store.setRenewal(account, plan.id, { auto_renews: true, cancel_at_period_end: false })
      assert.strictEqual(yield* indexed(plan.current_period_end), plan.id)
      const order = yield* generateId("ord")
      const next = at(1440 * HOUR)
      assert.strictEqual(
        yield* store.renew({
          subscription_id: plan.id,
          order_id: order,
          after_period_end: plan.current_period_end,
          current_period_start: plan.current_period_end,
          current_period_end: next
        }),
        "renewed"
      )
      assert.strictEqual((yield* rawItem(PlanKeys.renewalOrder(order)))?.subscription_id?.S, plan.id)
      assert.isUndefined(yield* indexed(plan.current_period_end))
      assert.strictEqual(yield* indexed(next), plan.id)
      assert.isTrue(yield* store.failRenewal(plan.id, next, "declined"))
      assert.isUndefined(yield* indexed(next))
    }))

  it.effect("a rental replayed for its order with a new id writes no item of that id", () =>
    Effect.gen(function*() {
      const store = yield* PlanStore
      const account = yield* generateId("acct")
      const rental: RentalRecord = {
        id: yield* generateId("rent"),
        account_id: account,
        order_id: yield* generateId("ord"),
        machine_id: "m-1",
        cpu_cores: 2,
        memory_gb: 4,
        gpu: 0,
        storage_gb: 10,
        hours: 1,
        starts_at: at(0),
        ends_at: at(HOUR),
        created_at: at(0)
      }
      yield* store.insertRental(rental)
      const replay = { ...rental, id: yield* generateId("rent") }
      assert.deepStrictEqual(yield* store.insertRental(replay), rental)
      assert.isUndefined(yield* rawItem(PlanKeys.rental(replay.id)))
      assert.lengthOf(yield* accountSortKeys(account), 1)
    }))
})
