/**
 * The rate-limit store on DynamoDB Local: the shared contract suite (N concurrent UpdateItem ADDs
 * of one item answer 1..N), then the item itself: its count and its TTL attribute.
 */
import { DescribeTimeToLiveCommand, GetItemCommand } from "@aws-sdk/client-dynamodb"
import { assert, layer } from "@effect/vitest"
import { generateId, RateLimitStore, windowStartOf } from "@model-platform/core/kernel"
import { rateLimitStoreContract } from "@model-platform/contract-kit/RateLimitContract"
import { Effect, Layer } from "effect"
import { expiresAt, RateLimitKeys, RateLimitStoreDynamo, RETAIN_MS } from "../src/DynamoRateLimitStore.ts"
import { DynamoConfig, TTL_ATTRIBUTE } from "../src/DynamoTable.ts"
import { useDynamoLocal } from "./dynamoLocal.ts"

const { freshTable } = useDynamoLocal("ratelimit-test")
const FreshTable = freshTable()

rateLimitStoreContract("RateLimitStoreDynamo on DynamoDB Local", RateLimitStoreDynamo.pipe(Layer.provide(FreshTable)))

layer(RateLimitStoreDynamo.pipe(Layer.provideMerge(FreshTable)), { excludeTestServices: true, timeout: "60 seconds" })(
  "RateLimitStoreDynamo items",
  (it) => {
    it.effect("one item per window holds the count and a TTL RETAIN_MS after the window ends; the table has TTL on", () =>
      Effect.gen(function*() {
        const store = yield* RateLimitStore
        const { client, tableName } = yield* DynamoConfig
        const bucket = yield* generateId("key")
        const window = windowStartOf(Date.now(), 60_000)
        yield* store.hit(bucket, window, 60_000)
        assert.strictEqual(yield* store.hit(bucket, window, 60_000), 2)
        const key = RateLimitKeys.window(bucket, window)
        const output = yield* Effect.promise(() =>
          client.send(new GetItemCommand({ TableName: tableName, Key: { pk: { S: key.pk }, sk: { S: key.sk } }, ConsistentRead: true }))
        )
        assert.strictEqual(output.Item?.["count"]?.N, "2")
        assert.strictEqual(output.Item?.[TTL_ATTRIBUTE]?.N, String(expiresAt(window, 60_000)))
        assert.strictEqual(expiresAt(window, 60_000), (window + 60_000 + RETAIN_MS) / 1000)
        const ttl = yield* Effect.promise(() => client.send(new DescribeTimeToLiveCommand({ TableName: tableName })))
        assert.strictEqual(ttl.TimeToLiveDescription?.AttributeName, TTL_ATTRIBUTE)
        assert.strictEqual(ttl.TimeToLiveDescription?.TimeToLiveStatus, "ENABLED")
      }))
  }
)
