import { assert, describe, layer } from "@effect/vitest"
import { IdempotencyStore, RETENTION_MS } from "@model-platform/core/http"
import { toTimestamp } from "@model-platform/core/kernel"
import { allStoreContracts } from "@model-platform/contract-kit/StoreContract"
import { GetCommand } from "@aws-sdk/lib-dynamodb"
import { Effect, Layer } from "effect"
import { DynamoStores } from "../src/DynamoStores.ts"
import { DynamoConfig, ItemKeys, TTL_ATTRIBUTE } from "../src/DynamoTable.ts"
import { LocalTable } from "./dynamoLocal.ts"

allStoreContracts("DynamoDB stores on DynamoDB Local", DynamoStores.pipe(Layer.provide(LocalTable)))

describe("IdempotencyStoreDynamo", () => {
  layer(DynamoStores.pipe(Layer.provideMerge(LocalTable)), { excludeTestServices: true, timeout: "60 seconds" })((it) => {
    it.effect("a record carries its TTL, 24 hours after it was created, for DynamoDB to delete it", () =>
      Effect.gen(function*() {
        const { client, tableName } = yield* DynamoConfig
        const store = yield* IdempotencyStore
        const scope = `acct_${crypto.randomUUID()}`
        const ttlOf = () =>
          Effect.promise(() => client.send(new GetCommand({ TableName: tableName, Key: ItemKeys.idempotency(scope, "k") })))
            .pipe(Effect.map((read) => read.Item?.[TTL_ATTRIBUTE]))
        const t0 = Date.UTC(2026, 2, 1, 0, 0, 0, 1)
        yield* store.claim({ scope, key: "k", fingerprint: "fp", created_at: toTimestamp(t0) })
        yield* store.complete(scope, "k", { status: 200, body: "v1.sealed" })
        // Epoch seconds, rounded up: DynamoDB never deletes it before it has expired.
        assert.strictEqual(yield* ttlOf(), Math.ceil((t0 + RETENTION_MS) / 1000))
        // DynamoDB deletes it late (DynamoDB Local never): the claim at 24 hours replaces it.
        yield* store.claim({ scope, key: "k", fingerprint: "fp-2", created_at: toTimestamp(t0 + RETENTION_MS) })
        assert.strictEqual(yield* ttlOf(), Math.ceil((t0 + 2 * RETENTION_MS) / 1000))
      }))
  })
})
