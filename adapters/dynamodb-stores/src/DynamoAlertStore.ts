/**
 * The alert store port (core/src/billing/AlertStore.ts) on the one DynamoDB table of DynamoTable.ts,
 * through the document client. Items:
 *
 *   ALERTS#<account>   ALERT#<created_at>#<id>                 the alert (newest first: a backward query)
 *   ALERTS#<account>   IDENT#<kind>#<period>#<point>#<target>  id: keeps the alert's identity once
 *   ALERTS#<account>   ID#<id>                                 alert_sk: finds an alert by id (markSeen)
 *   BILLING#<account>  TOPUP                                   the automatic top-up state, with its version
 *
 * A raise is one TransactWriteItems of three conditional puts: when the identity item exists the
 * whole transaction is cancelled and nothing is written ("exists"). The top-up state's
 * compare-and-set is one put conditioned on the version read (or on no item). Reads are strongly
 * consistent; ids are never parsed back out of a key.
 */
import { GetCommand, PutCommand, QueryCommand, TransactWriteCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb"
import {
  type AlertKind,
  alertProblem,
  type AlertRecord,
  AlertStore,
  topUpProblem,
  type TopUpState
} from "@model-platform/core/billing"
import { Effect, Layer } from "effect"
import { allPages, call, failedConditionsAllowingNone, isConditionFailed, retryConflicts, startingAt } from "./DynamoErrors.ts"
import { DynamoConfig, type ItemKey } from "./DynamoTable.ts"

const ALERT_PREFIX = "ALERT#"

export const AlertKeys = {
  alert: (accountId: string, createdAt: string, id: string): ItemKey => ({
    pk: `ALERTS#${accountId}`,
    sk: `${ALERT_PREFIX}${createdAt}#${id}`
  }),
  identity: (alert: Pick<AlertRecord, "account_id" | "kind" | "period" | "point" | "target">): ItemKey => ({
    pk: `ALERTS#${alert.account_id}`,
    sk: `IDENT#${alert.kind}#${alert.period}#${String(alert.point).padStart(3, "0")}#${alert.target}`
  }),
  byId: (accountId: string, id: string): ItemKey => ({ pk: `ALERTS#${accountId}`, sk: `ID#${id}` }),
  topUp: (accountId: string): ItemKey => ({ pk: `BILLING#${accountId}`, sk: "TOPUP" })
} as const

type Item = Record<string, unknown>

const NOT_EXISTS = "attribute_not_exists(pk)"

const toAlert = (item: Item): AlertRecord => ({
  id: String(item["id"]),
  account_id: String(item["account_id"]),
  kind: String(item["kind"]) as AlertKind,
  target: String(item["target"]),
  period: String(item["period"]),
  point: Number(item["point"]),
  message: String(item["message"]),
  seen: item["seen"] === true,
  created_at: String(item["created_at"])
})

const toTopUp = (item: Item): TopUpState => ({
  version: Number(item["version"]),
  phase: String(item["phase"]) as TopUpState["phase"],
  order_id: typeof item["order_id"] === "string" ? item["order_id"] : null,
  day: String(item["day"] ?? ""),
  charges_on_day: Number(item["charges_on_day"]),
  last_error: typeof item["last_error"] === "string" ? item["last_error"] : null,
  updated_at: String(item["updated_at"])
})

export const AlertStoreDynamo: Layer.Layer<AlertStore, never, DynamoConfig> = Layer.effect(
  AlertStore,
  Effect.gen(function*() {
    const { client, tableName } = yield* DynamoConfig

    const getItem = (key: ItemKey) =>
      call((signal) =>
        client.send(new GetCommand({ TableName: tableName, Key: { ...key }, ConsistentRead: true }), { abortSignal: signal })
      ).pipe(Effect.map((output): Item | undefined => output.Item), Effect.orDie)

    const raise = Effect.fn("AlertStore.raise")(function*(alert: AlertRecord) {
      const problem = alertProblem(alert)
      if (problem !== undefined) return yield* Effect.die(new Error(`AlertStore.raise: ${problem}`))
      const alertKey = AlertKeys.alert(alert.account_id, alert.created_at, alert.id)
      const create = (key: ItemKey, item: Item) => ({
        Put: { TableName: tableName, Item: { ...item, ...key }, ConditionExpression: NOT_EXISTS }
      })
      const failed = yield* call((signal) =>
        client.send(
          new TransactWriteCommand({
            TransactItems: [
              create(alertKey, { ...alert }),
              create(AlertKeys.identity(alert), { id: alert.id }),
              create(AlertKeys.byId(alert.account_id, alert.id), { alert_sk: alertKey.sk })
            ]
          }),
          { abortSignal: signal }
        )
      ).pipe(
        retryConflicts,
        Effect.as([] as ReadonlyArray<number>),
        Effect.catchIf(
          (error) => failedConditionsAllowingNone(error) !== undefined,
          (error) => Effect.succeed(failedConditionsAllowingNone(error) ?? [])
        ),
        Effect.orDie
      )
      if (failed.includes(1)) return "exists" as const
      if (failed.length > 0) return yield* Effect.die(new Error(`AlertStore.raise: duplicate id ${alert.id}`))
      return "raised" as const
    })

    const list = Effect.fn("AlertStore.list")(function*(accountId: string, limit: number) {
      const items = yield* allPages((startKey: Item | undefined, taken) =>
        call((signal) =>
          client.send(
            new QueryCommand({
              TableName: tableName,
              KeyConditionExpression: "pk = :pk AND begins_with(sk, :prefix)",
              ExpressionAttributeValues: { ":pk": `ALERTS#${accountId}`, ":prefix": ALERT_PREFIX },
              ScanIndexForward: false,
              ConsistentRead: true,
              Limit: limit - taken,
              ...startingAt(startKey)
            }),
            { abortSignal: signal }
          )
        ), { limit })
      return items.map(toAlert)
    })

    /** Marks one alert seen when it is the account's and not seen yet; whether it changed. */
    const markOne = (accountId: string, id: string) =>
      Effect.flatMap(getItem(AlertKeys.byId(accountId, id)), (pointer) =>
        pointer === undefined
          ? Effect.succeed(false)
          : call((signal) =>
            client.send(
              new UpdateCommand({
                TableName: tableName,
                Key: { pk: `ALERTS#${accountId}`, sk: String(pointer["alert_sk"]) },
                UpdateExpression: "SET seen = :true",
                ConditionExpression: "seen = :false",
                ExpressionAttributeValues: { ":true": true, ":false": false }
              }),
              { abortSignal: signal }
            )
          ).pipe(
            retryConflicts,
            Effect.as(true),
            Effect.catchIf(isConditionFailed, () => Effect.succeed(false)),
            Effect.orDie
          ))

    const markSeen = (accountId: string, ids: ReadonlyArray<string>) =>
      Effect.forEach([...new Set(ids)], (id) => markOne(accountId, id), { concurrency: 8 }).pipe(
        Effect.map((changed) => changed.filter(Boolean).length),
        Effect.withSpan("AlertStore.markSeen")
      )

    const topUp = (accountId: string) =>
      getItem(AlertKeys.topUp(accountId)).pipe(
        Effect.map((item) => (item === undefined ? undefined : toTopUp(item))),
        Effect.withSpan("AlertStore.topUp")
      )

    const swapTopUp = (accountId: string, expected: number | undefined, next: TopUpState) => {
      const problem = topUpProblem(expected, next)
      if (problem !== undefined) return Effect.die(new Error(`AlertStore.swapTopUp: ${problem}`))
      // Null fields are absent attributes, as in the other stores of this table.
      const fields = Object.fromEntries(Object.entries({ account_id: accountId, ...next }).filter(([, v]) => v !== null))
      return call((signal) =>
        client.send(
          new PutCommand({
            TableName: tableName,
            Item: { ...fields, ...AlertKeys.topUp(accountId) },
            ...(expected === undefined
              ? { ConditionExpression: NOT_EXISTS }
              : { ConditionExpression: "version = :expected", ExpressionAttributeValues: { ":expected": expected } })
          }),
          { abortSignal: signal }
        )
      ).pipe(
        retryConflicts,
        Effect.as(true),
        Effect.catchIf(isConditionFailed, () => Effect.succeed(false)),
        Effect.orDie,
        Effect.withSpan("AlertStore.swapTopUp")
      )
    }

    return AlertStore.of({ raise, list, markSeen, topUp, swapTopUp })
  })
)
