/**
 * The one DynamoDB table of the Lambda shell: its key schema, the key of every item type (the
 * "Key design" section of docs/lambda.md explains each one and the access pattern it serves), the
 * DynamoConfig service that names the table and holds the client, and `createTable` for tests
 * and local runs (the deployed table comes from the CDK app and must match `tableDefinition`).
 */
import {
  type CreateTableCommandInput,
  CreateTableCommand,
  DescribeTableCommand,
  DynamoDBClient,
  type DynamoDBClientConfig,
  UpdateTimeToLiveCommand
} from "@aws-sdk/client-dynamodb"
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb"
import { Context, Effect, Layer, Schedule } from "effect"

/** The table's partition and sort key attributes; both are strings. */
export const PK = "pk"
export const SK = "sk"

export interface ItemKey {
  readonly pk: string
  readonly sk: string
}

/**
 * The key of every item type. Ids are whole key values, never parsed back out of a key: each item
 * also carries its fields as attributes.
 */
export const ItemKeys = {
  /** The account itself. */
  account: (accountId: string): ItemKey => ({ pk: `ACCOUNT#${accountId}`, sk: "ACCOUNT" }),
  /** Holds an email, so that two accounts cannot share one. */
  accountEmail: (email: string): ItemKey => ({ pk: `EMAIL#${email}`, sk: "EMAIL" }),
  /** Points at the earliest created account (the owner made at first start). */
  firstAccount: { pk: "ACCOUNTS", sk: "FIRST" } as ItemKey,
  /** The key record (every field but the secret, which is never stored). */
  key: (keyId: string): ItemKey => ({ pk: `KEY#${keyId}`, sk: "KEY" }),
  /** Finds a key by the hash of its secret, and keeps hashes unique. */
  keyHash: (secretHash: string): ItemKey => ({ pk: `KEYHASH#${secretHash}`, sk: "KEYHASH" }),
  /** Lists an account's keys oldest first: the sort key orders them by creation. */
  accountKey: (accountId: string, createdAt: string, stamp: string, keyId: string): ItemKey => ({
    pk: `ACCOUNT#${accountId}`,
    sk: `${ACCOUNT_KEY_PREFIX}${createdAt}#${stamp}#${keyId}`
  }),
  /** An Idempotency-Key record, per scope (the account). */
  idempotency: (scope: string, key: string): ItemKey => ({ pk: `IDEM#${scope}`, sk: `IDEM#${key}` })
} as const

/** Sort key prefix of the account's key entries, for `begins_with`. */
export const ACCOUNT_KEY_PREFIX = "KEY#"

/**
 * The table's time-to-live attribute (epoch seconds, a number): DynamoDB deletes an item some time
 * after it. Only items that must vanish carry it (rate-limit counters, DynamoRateLimitStore.ts).
 * CreateTable cannot set it: `createTable` enables it after, and the CDK stack declares it.
 */
export const TTL_ATTRIBUTE = "ttl"

/** The table as CreateTable wants it: string pk/sk, on demand, no index needed. */
export const tableDefinition = (tableName: string): CreateTableCommandInput => ({
  TableName: tableName,
  BillingMode: "PAY_PER_REQUEST",
  KeySchema: [{ AttributeName: PK, KeyType: "HASH" }, { AttributeName: SK, KeyType: "RANGE" }],
  AttributeDefinitions: [{ AttributeName: PK, AttributeType: "S" }, { AttributeName: SK, AttributeType: "S" }]
})

export interface DynamoSettings {
  readonly tableName: string
  readonly client: DynamoDBDocumentClient
}

/** A document client: plain JS values in and out, absent attributes for undefined. */
export const makeDocumentClient = (config: DynamoDBClientConfig = {}): DynamoDBDocumentClient =>
  DynamoDBDocumentClient.from(new DynamoDBClient(config), { marshallOptions: { removeUndefinedValues: true } })

/** Which table the stores use and the client they reach it with. */
export class DynamoConfig extends Context.Service<DynamoConfig, DynamoSettings>()(
  "@model-platform/lambda/DynamoConfig"
) {
  /** A client the caller made (and destroys). */
  static readonly layer = (settings: DynamoSettings): Layer.Layer<DynamoConfig> => Layer.succeed(DynamoConfig, settings)

  /** Makes the client from SDK options (region, endpoint, credentials) and destroys it with the layer. */
  static readonly layerClient = (tableName: string, config: DynamoDBClientConfig = {}): Layer.Layer<DynamoConfig> =>
    Layer.effect(
      DynamoConfig,
      Effect.acquireRelease(
        Effect.sync(() => DynamoConfig.of({ tableName, client: makeDocumentClient(config) })),
        (settings) => Effect.sync(() => settings.client.destroy())
      )
    )
}

/**
 * Creates the table (tests, local runs) and waits until it is ACTIVE. Failures are defects, as
 * every store failure is.
 */
export const createTable: Effect.Effect<void, never, DynamoConfig> = Effect.gen(function*() {
  const { client, tableName } = yield* DynamoConfig
  yield* Effect.tryPromise((signal) => client.send(new CreateTableCommand(tableDefinition(tableName)), { abortSignal: signal }))
  yield* Effect.tryPromise((signal) =>
    client.send(new DescribeTableCommand({ TableName: tableName }), { abortSignal: signal })
  ).pipe(
    Effect.flatMap((described) =>
      described.Table?.TableStatus === "ACTIVE" ? Effect.void : Effect.fail(new Error(`table ${tableName} is not active yet`))
    ),
    Effect.retry({ schedule: Schedule.spaced("200 millis"), times: 150 })
  )
  yield* Effect.tryPromise((signal) =>
    client.send(
      new UpdateTimeToLiveCommand({
        TableName: tableName,
        TimeToLiveSpecification: { AttributeName: TTL_ATTRIBUTE, Enabled: true }
      }),
      { abortSignal: signal }
    )
  )
}).pipe(Effect.orDie, Effect.withSpan("DynamoTable.createTable"))
