/**
 * The rate-limit store port on the one DynamoDB table of DynamoTable.ts. One item per bucket and
 * window, `RATELIMIT#<bucket>` / `WINDOW#<windowStart>`; a hit is ONE UpdateItem,
 * `SET ttl = :ttl ADD count :one` with ReturnValues UPDATED_NEW. DynamoDB applies updates of one
 * item one at a time, so N concurrent hits (from any number of Lambdas) answer 1..N. The item's
 * `ttl` (DynamoTable.ts TTL_ATTRIBUTE, epoch seconds) is RETAIN_MS after the window ends:
 * DynamoDB's TTL deletes it some time after that, at no write cost.
 */
import { UpdateItemCommand } from "@aws-sdk/client-dynamodb"
import { hitProblem, RateLimitStore } from "@model-platform/core/kernel"
import { Effect, Layer } from "effect"
import { call } from "./DynamoErrors.ts"
import { DynamoConfig, type ItemKey, TTL_ATTRIBUTE } from "./DynamoTable.ts"

/** How long a counter is kept after its window ends. */
export const RETAIN_MS = 5 * 60_000

export const RateLimitKeys = {
  window: (bucket: string, windowStart: number): ItemKey => ({ pk: `RATELIMIT#${bucket}`, sk: `WINDOW#${windowStart}` })
} as const

/** The item's TTL: epoch seconds, RETAIN_MS after the window ends. */
export const expiresAt = (windowStart: number, windowMs: number): number =>
  Math.ceil((windowStart + windowMs + RETAIN_MS) / 1000)

export const RateLimitStoreDynamo: Layer.Layer<RateLimitStore, never, DynamoConfig> = Layer.effect(
  RateLimitStore,
  Effect.gen(function*() {
    const { client, tableName } = yield* DynamoConfig

    const hit = (bucket: string, windowStart: number, windowMs: number) => {
      const problem = hitProblem(bucket, windowStart, windowMs)
      if (problem !== undefined) return Effect.die(new Error(`RateLimitStore.hit: ${problem}`))
      const key = RateLimitKeys.window(bucket, windowStart)
      return call((signal) =>
        client.send(
          new UpdateItemCommand({
            TableName: tableName,
            Key: { pk: { S: key.pk }, sk: { S: key.sk } },
            UpdateExpression: "SET #ttl = :ttl ADD #count :one",
            ExpressionAttributeNames: { "#ttl": TTL_ATTRIBUTE, "#count": "count" },
            ExpressionAttributeValues: {
              ":ttl": { N: String(expiresAt(windowStart, windowMs)) },
              ":one": { N: "1" }
            },
            ReturnValues: "UPDATED_NEW"
          }),
          { abortSignal: signal }
        )
      ).pipe(
        Effect.orDie,
        Effect.flatMap((output) => {
          const count = Number(output.Attributes?.["count"]?.N)
          return Number.isSafeInteger(count) && count > 0
            ? Effect.succeed(count)
            : Effect.die(new Error(`RateLimitStore.hit: DynamoDB answered no count for ${key.pk} ${key.sk}`))
        }),
        Effect.withSpan("RateLimitStore.hit")
      )
    }

    return RateLimitStore.of({ hit })
  })
)
