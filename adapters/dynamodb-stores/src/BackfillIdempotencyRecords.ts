/**
 * The one-off upgrade of idempotency records written before they were sealed and kept 24 hours
 * (docs/lambda.md "Upgrading idempotency records"). Such an item has no `ttl`, so DynamoDB never
 * deletes it, and its `response_body` is the answer in clear: a new key's secret, for `POST /keys`.
 *
 * 1. One paginated Scan keeps the `IDEM#` items without `ttl` (`scope`, `key`, `created_at`).
 * 2. For each, one UpdateItem sets `ttl` (24 hours after its `created_at`, as the store writes it:
 *    an item older than that is deleted by DynamoDB soon) and, when it holds an answer, replaces
 *    `response_body` with ERASED_RESPONSE_BODY; conditioned on `attribute_not_exists(ttl)`, so a
 *    record the live code claimed anew since the Scan (sealed, with its `ttl`) is left alone.
 *
 * An erased record keeps its fingerprint of the earlier form, which no request matches now: its
 * replay is a 409 until it expires, never the write a second time. Running it again writes
 * nothing. Assumes the release that seals records is deployed to every function first.
 */
import { ScanCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb"
import { ERASED_RESPONSE_BODY } from "@model-platform/core/http"
import { Timestamp } from "@model-platform/core/kernel"
import { Effect, Schema } from "effect"
import { decode } from "./DynamoAttributes.ts"
import { allPages, call, isConditionFailed, startingAt } from "./DynamoErrors.ts"
import { idempotencyTtl } from "./DynamoStores.ts"
import { DynamoConfig, ItemKeys, TTL_ATTRIBUTE } from "./DynamoTable.ts"

export interface BackfillIdempotencySummary {
  /** `IDEM#` items the Scan found without `ttl`. */
  readonly found: number
  /** Of those, the ones holding an answer (erased in a real run). */
  readonly answers: number
  /** Items updated. */
  readonly written: number
  /** Claimed anew by the live code since the Scan. */
  readonly skipped: number
}

const LegacyItem = Schema.Struct({
  scope: Schema.String,
  key: Schema.String,
  created_at: Timestamp,
  response_body: Schema.optionalKey(Schema.String)
})

// Derived from the store's own keys, so the filter matches exactly its items.
const IDEM_PREFIX = ItemKeys.idempotency("", "").pk

export const backfillIdempotencyRecords = Effect.fn("BackfillIdempotencyRecords")(function*(
  options: { readonly dryRun?: boolean | undefined } = {}
) {
  const { client, tableName } = yield* DynamoConfig
  const decodeItem = decode(LegacyItem)

  const items = yield* allPages((startKey: Record<string, unknown> | undefined) =>
    call((signal) =>
      client.send(
        new ScanCommand({
          TableName: tableName,
          FilterExpression: "begins_with(pk, :idem) AND attribute_not_exists(#ttl)",
          ProjectionExpression: "#scope, #key, created_at, response_body",
          ExpressionAttributeNames: { "#ttl": TTL_ATTRIBUTE, "#scope": "scope", "#key": "key" },
          ExpressionAttributeValues: { ":idem": IDEM_PREFIX },
          ...startingAt(startKey)
        }),
        { abortSignal: signal }
      )
    )
  )
  const legacy: Array<typeof LegacyItem.Type> = []
  for (const item of items) legacy.push(yield* Effect.orDie(decodeItem(item)))

  let written = 0
  if (options.dryRun !== true) {
    for (const item of legacy) {
      const erase = item.response_body !== undefined
      const updated = yield* call((signal) =>
        client.send(
          new UpdateCommand({
            TableName: tableName,
            Key: { ...ItemKeys.idempotency(item.scope, item.key) },
            UpdateExpression: erase ? "SET #ttl = :ttl, response_body = :erased" : "SET #ttl = :ttl",
            ConditionExpression: "attribute_exists(pk) AND attribute_not_exists(#ttl)",
            ExpressionAttributeNames: { "#ttl": TTL_ATTRIBUTE },
            ExpressionAttributeValues: {
              ":ttl": idempotencyTtl(item.created_at),
              ...(erase ? { ":erased": ERASED_RESPONSE_BODY } : {})
            }
          }),
          { abortSignal: signal }
        )
      ).pipe(Effect.as(true), Effect.catchIf(isConditionFailed, () => Effect.succeed(false)), Effect.orDie)
      if (updated) written++
    }
  }
  const answers = legacy.filter((item) => item.response_body !== undefined).length
  return {
    found: legacy.length,
    answers,
    written,
    skipped: options.dryRun === true ? 0 : legacy.length - written
  } satisfies BackfillIdempotencySummary
})
