/**
 * The usage store port (core/src/billing/UsageStore.ts) on the one DynamoDB table of DynamoTable.ts.
 *
 * Items (every one carries the whole record as attributes):
 * - `USAGEREF#<ref>` / `USAGEREF`: holds the ref, so that a ref is recorded once (across accounts,
 *   as refs are), and answers `byRef` with one strongly consistent GetItem.
 * - `USAGE#<account>` / `<at>#<ref>`: the record in its account's list. ISO timestamps of one
 *   format sort as strings, so a Query of the partition with `sk BETWEEN :from AND :to` is the
 *   account's records in [from, to), oldest first, equal times by ref (no sort key equals a bare
 *   timestamp, so `to` itself is excluded and `from` included). key_id and service are filters.
 *
 * - `USAGEDAY#<account>` / `<day>#<json [service, model, key, agent]>`: the per-day rollup (calls
 *   and the sums of the amounts, with its dimensions as attributes). A Query of the partition with
 *   `sk BETWEEN <from> AND <to>$` is the rollups of the days [from, to] ('#' < '$').
 *
 * `record` is ONE TransactWriteItems: the ref item, conditioned on `attribute_not_exists(pk)`,
 * the list item, and an `ADD` to the rollup. A ConditionalCheckFailed on the ref item is
 * "Duplicate" (nothing written, the rollup included); a TransactionConflict (a concurrent record
 * of the same ref, or of the same rollup) is tried again with backoff. Reads are strongly
 * consistent (no index is involved).
 *
 * `report` reads the rollups of the days and groups them here; `stream` queries the list a page at
 * a time from the last key read (ExclusiveStartKey), following DynamoDB's pages until a page holds
 * `pageSize` records that pass the key and service filters.
 *
 * Money never passes through a JS number: the low-level API, amounts written as `{ N: string }`
 * and decoded with Schema.BigIntFromString, as DynamoLedgerStore.ts does.
 *
 * Scale: one partition per account holds its list; `spent` (monthly limits) reads the month's
 * items of the account (projected to the few attributes it needs). A caller that needs it often
 * for a very busy account should keep a running total beside it. A rollup item takes every call of
 * its key, model and agent in a day: its transactions conflict under a burst and are retried,
 * as the balance items' are. A sum past 38 digits (DynamoDB's numbers) fails the record.
 */
import { GetItemCommand, QueryCommand, TransactWriteItemsCommand } from "@aws-sdk/client-dynamodb"
import { groupRollups, NO_AGENT, pagedUsageStream, type UsageCursor, type UsageDays, type UsageDimension, type UsageQuery, type UsageRecord, usageRecordProblem, UsageStore } from "@model-platform/core/billing"
import { dayOf } from "@model-platform/core/kernel"
import { Effect, Layer, Schema } from "effect"
import { BigIntAttr, decode, type Item, keyOf, num, str, StringAttr, TimestampAttr } from "./DynamoAttributes.ts"
import { allPages, call, failedConditions, makeQueryItems, retryConflicts, startingAt } from "./DynamoErrors.ts"
import { DynamoConfig, type ItemKey } from "./DynamoTable.ts"

/** The key of every usage item. */
export const UsageKeys = {
  /** Holds a ref (one record per call) and the record itself. */
  ref: (ref: string): ItemKey => ({ pk: `USAGEREF#${ref}`, sk: "USAGEREF" }),
  /** The record in its account's list, by time then ref. */
  listed: (accountId: string, at: string, ref: string): ItemKey => ({ pk: usagePk(accountId), sk: `${at}#${ref}` }),
  /** The day's rollup of a service, model, key and agent (the JSON array keeps any text apart). */
  rollup: (r: UsageRecord): ItemKey => ({
    pk: rollupPk(r.account_id),
    sk: `${dayOf(r.at)}#${JSON.stringify([r.service, r.model, r.key_id, r.agent_id ?? NO_AGENT])}`
  })
} as const

const rollupPk = (accountId: string) => `USAGEDAY#${accountId}`

const usagePk = (accountId: string) => `USAGE#${accountId}`

const UsageItem = Schema.Struct({
  ref: StringAttr,
  account_id: StringAttr,
  at: TimestampAttr,
  key_id: StringAttr,
  agent_id: Schema.optionalKey(StringAttr),
  machine_id: StringAttr,
  service: StringAttr,
  model: StringAttr,
  unit: StringAttr,
  quantity: BigIntAttr,
  input_tokens: BigIntAttr,
  output_tokens: BigIntAttr,
  list_credits: BigIntAttr,
  credits: BigIntAttr,
  from_allowance: BigIntAttr,
  from_trial: BigIntAttr
})

const SpentItem = Schema.Struct({ credits: BigIntAttr })

const RollupItem = Schema.Struct({
  account_id: StringAttr,
  day: StringAttr,
  service: StringAttr,
  model: StringAttr,
  key_id: StringAttr,
  agent_id: StringAttr,
  calls: BigIntAttr,
  list_credits: BigIntAttr,
  credits: BigIntAttr,
  from_allowance: BigIntAttr,
  from_trial: BigIntAttr
})

/** The rollup's part of `record`: set its dimensions, add the record's amounts. */
const rollupUpdate = (r: UsageRecord) => ({
  UpdateExpression: "SET #account_id = :account_id, #day = :day, #service = :service, #model = :model, " +
    "#key_id = :key_id, #agent_id = :agent_id " +
    "ADD #calls :one, #list_credits :list_credits, #credits :credits, #from_allowance :from_allowance, #from_trial :from_trial",
  ExpressionAttributeNames: Object.fromEntries(
    ["account_id", "day", "service", "model", "key_id", "agent_id", "calls", "list_credits", "credits", "from_allowance", "from_trial"]
      .map((name) => [`#${name}`, name])
  ),
  ExpressionAttributeValues: {
    ":account_id": str(r.account_id),
    ":day": str(dayOf(r.at)),
    ":service": str(r.service),
    ":model": str(r.model),
    ":key_id": str(r.key_id),
    ":agent_id": str(r.agent_id ?? NO_AGENT),
    ":one": num(1n),
    ":list_credits": num(r.list_credits),
    ":credits": num(r.credits),
    ":from_allowance": num(r.from_allowance),
    ":from_trial": num(r.from_trial)
  }
})

const attributes = (r: UsageRecord): Item => ({
  ref: str(r.ref),
  account_id: str(r.account_id),
  at: str(r.at),
  key_id: str(r.key_id),
  ...(r.agent_id === null ? {} : { agent_id: str(r.agent_id) }),
  machine_id: str(r.machine_id),
  service: str(r.service),
  model: str(r.model),
  unit: str(r.unit),
  quantity: num(r.quantity),
  input_tokens: num(r.input_tokens),
  output_tokens: num(r.output_tokens),
  list_credits: num(r.list_credits),
  credits: num(r.credits),
  from_allowance: num(r.from_allowance),
  from_trial: num(r.from_trial)
})

const toRecord = (item: typeof UsageItem.Type): UsageRecord => ({ ...item, agent_id: item.agent_id ?? null })

export const UsageStoreDynamo: Layer.Layer<UsageStore, never, DynamoConfig> = Layer.effect(
  UsageStore,
  Effect.gen(function*() {
    const { client, tableName } = yield* DynamoConfig
    const queryItems = makeQueryItems(client, tableName)
    const decodeUsage = decode(UsageItem)
    const decodeSpent = decode(SpentItem)
    const decodeRollup = decode(RollupItem)

    const record = (r: UsageRecord) => {
      const problem = usageRecordProblem(r)
      if (problem !== undefined) return Effect.die(new Error(`UsageStore.record: ${problem}`))
      const item = attributes(r)
      return call((signal) =>
        client.send(
          new TransactWriteItemsCommand({
            TransactItems: [
              {
                Put: {
                  TableName: tableName,
                  Item: { ...item, ...keyOf(UsageKeys.ref(r.ref)) },
                  ConditionExpression: "attribute_not_exists(pk)"
                }
              },
              { Put: { TableName: tableName, Item: { ...item, ...keyOf(UsageKeys.listed(r.account_id, r.at, r.ref)) } } },
              { Update: { TableName: tableName, Key: keyOf(UsageKeys.rollup(r)), ...rollupUpdate(r) } }
            ]
          }),
          { abortSignal: signal }
        )
      ).pipe(
        retryConflicts,
        Effect.as("Recorded" as const),
        Effect.catchIf(
          (error) => {
            const failed = failedConditions(error)
            return failed !== undefined && failed.length === 1 && failed[0] === 0
          },
          () => Effect.succeed("Duplicate" as const)
        ),
        Effect.orDie,
        Effect.withSpan("UsageStore.record")
      )
    }

    const byRef = (ref: string) =>
      call((signal) =>
        client.send(
          new GetItemCommand({ TableName: tableName, Key: keyOf(UsageKeys.ref(ref)), ConsistentRead: true }),
          { abortSignal: signal }
        )
      ).pipe(
        Effect.orDie,
        Effect.flatMap((output) =>
          output.Item === undefined ? Effect.succeed(undefined) : Effect.map(decodeUsage(output.Item), toRecord)
        )
      )

    /** The account's items in [from, to), filtered by key and service, oldest first. */
    const query = (q: UsageQuery, projection?: string) => {
      if (q.from >= q.to) return Effect.succeed([])
      const filters = [
        ...(q.key_id === undefined ? [] : ["#key_id = :key_id"]),
        ...(q.service === undefined ? [] : ["#service = :service"])
      ]
      return queryItems({
        KeyConditionExpression: "pk = :pk AND sk BETWEEN :from AND :to",
        ...(filters.length === 0 ? {} : { FilterExpression: filters.join(" AND ") }),
        ...(projection === undefined ? {} : { ProjectionExpression: projection }),
        ...(filters.length === 0 && projection === undefined
          ? {}
          : {
            ExpressionAttributeNames: {
              ...(q.key_id === undefined ? {} : { "#key_id": "key_id" }),
              ...(q.service === undefined ? {} : { "#service": "service" }),
              ...(projection === undefined ? {} : { "#credits": "credits" })
            }
          }),
        ExpressionAttributeValues: {
          ":pk": str(usagePk(q.account_id)),
          ":from": str(q.from),
          ":to": str(q.to),
          ...(q.key_id === undefined ? {} : { ":key_id": str(q.key_id) }),
          ...(q.service === undefined ? {} : { ":service": str(q.service) })
        }
      })
    }

    const list = (q: UsageQuery) =>
      query(q).pipe(
        Effect.flatMap((items) => Effect.forEach(items, (item) => Effect.map(decodeUsage(item), toRecord))),
        Effect.withSpan("UsageStore.list")
      )

    const spent = (q: UsageQuery) =>
      query(q, "#credits").pipe(
        Effect.flatMap((items) => Effect.forEach(items, decodeSpent)),
        Effect.map((items) => items.reduce((sum, item) => sum + item.credits, 0n)),
        Effect.withSpan("UsageStore.spent")
      )

    const report = (q: UsageDays, groupBy: UsageDimension) =>
      (q.from > q.to ? Effect.succeed([]) : queryItems({
        KeyConditionExpression: "pk = :pk AND sk BETWEEN :from AND :to",
        ExpressionAttributeValues: { ":pk": str(rollupPk(q.account_id)), ":from": str(q.from), ":to": str(`${q.to}$`) }
      })).pipe(
        Effect.flatMap((items) => Effect.forEach(items, decodeRollup)),
        Effect.map((rollups) => groupRollups(rollups, q, groupBy)),
        Effect.withSpan("UsageStore.report")
      )

    /** Up to `limit` records after the cursor that pass the filters (DynamoDB's Limit counts before them). */
    const page = (q: UsageQuery) => (after: UsageCursor | undefined, limit: number) =>
      Effect.gen(function*() {
        if (q.from >= q.to) return []
        const filters = [
          ...(q.key_id === undefined ? [] : ["#key_id = :key_id"]),
          ...(q.service === undefined ? [] : ["#service = :service"])
        ]
        const items = yield* allPages((startKey: Item | undefined, taken) =>
          call((signal) =>
            client.send(
              new QueryCommand({
                TableName: tableName,
                ConsistentRead: true,
                KeyConditionExpression: "pk = :pk AND sk BETWEEN :from AND :to",
                ...(filters.length === 0 ? {} : {
                  FilterExpression: filters.join(" AND "),
                  ExpressionAttributeNames: {
                    ...(q.key_id === undefined ? {} : { "#key_id": "key_id" }),
                    ...(q.service === undefined ? {} : { "#service": "service" })
                  }
                }),
                ExpressionAttributeValues: {
                  ":pk": str(usagePk(q.account_id)),
                  ":from": str(q.from),
                  ":to": str(q.to),
                  ...(q.key_id === undefined ? {} : { ":key_id": str(q.key_id) }),
                  ...(q.service === undefined ? {} : { ":service": str(q.service) })
                },
                Limit: limit - taken,
                ...startingAt(startKey)
              }),
              { abortSignal: signal }
            )
          ), { limit, from: after === undefined ? undefined : keyOf(UsageKeys.listed(q.account_id, after.at, after.ref)) })
        const records: Array<UsageRecord> = []
        for (const item of items) records.push(toRecord(yield* decodeUsage(item)))
        return records
      }).pipe(Effect.withSpan("UsageStore.page"))

    const stream = (q: UsageQuery, options?: { readonly pageSize?: number | undefined }) =>
      pagedUsageStream(page(q), options?.pageSize)

    return UsageStore.of({ record, byRef, list, spent, report, stream })
  })
)
