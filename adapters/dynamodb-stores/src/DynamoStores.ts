/**
 * DynamoDB implementations of the account, key and idempotency store ports, in the one table of
 * DynamoTable.ts. Each rule a port states is kept by DynamoDB itself, never by a read followed by
 * a write: uniqueness by conditional puts in one TransactWriteItems (an account with its email, a
 * key with its hash), "revoke once" and "touch only forward" by conditional updates, "claim once"
 * by a conditional put (which also replaces a record expired by the claim's time; DynamoDB's TTL
 * removes the others, from the `ttl` attribute each record carries). Reads are strongly
 * consistent, so a key works (or stops working) at once. Store failures are defects, as the ports
 * say; so are duplicates, as a constraint violation is in SQL.
 */
import {
  BatchGetCommand,
  DeleteCommand,
  GetCommand,
  PutCommand,
  QueryCommand,
  ScanCommand,
  TransactWriteCommand,
  type TransactWriteCommandInput,
  UpdateCommand
} from "@aws-sdk/lib-dynamodb"
import type { AccountRecord, KeyRecord } from "@model-platform/core/keys"
import { AccountStore, KeyStore, Permission } from "@model-platform/core/keys"
import {
  type ClaimResult,
  expiredBy,
  type IdempotencyRecord,
  IdempotencyStore,
  RETENTION_MS,
  type StoredResponse
} from "@model-platform/core/http"
import { Timestamp } from "@model-platform/core/kernel"
import { Clock, Effect, Layer, Schema } from "effect"
import { decode } from "./DynamoAttributes.ts"
import { allPages, call, failedConditionsAllowingNone, isConditionFailed, retryConflictsBriefly, startingAt } from "./DynamoErrors.ts"
import { ACCOUNT_KEY_PREFIX, DynamoConfig, type DynamoSettings, type ItemKey, ItemKeys, TTL_ATTRIBUTE } from "./DynamoTable.ts"

// ---------------------------------------------------------------------------------------------
// calling DynamoDB

type Client = DynamoSettings["client"]

const NOT_EXISTS = "attribute_not_exists(pk)"

/** A Put in a transaction that only creates the item. */
const create = (tableName: string, key: ItemKey, attributes: Record<string, unknown>) => ({
  Put: { TableName: tableName, Item: { ...attributes, ...key }, ConditionExpression: NOT_EXISTS }
})

const transact = (client: Client, items: NonNullable<TransactWriteCommandInput["TransactItems"]>) =>
  call((signal) => client.send(new TransactWriteCommand({ TransactItems: items }), { abortSignal: signal }))

/**
 * An all-or-nothing insert, tried again briefly while it conflicts; a failed uniqueness
 * condition is a defect, named from the indexes of the conditions that failed.
 */
const insertUnique = <A>(write: Effect.Effect<A, unknown>, duplicate: (failed: ReadonlyArray<number>) => string) =>
  write.pipe(
    retryConflictsBriefly,
    Effect.catchIf(
      (error) => failedConditionsAllowingNone(error) !== undefined,
      (error) => Effect.die(new Error(duplicate(failedConditionsAllowingNone(error) ?? [])))
    ),
    Effect.orDie
  )

const getItem = (client: Client, tableName: string, key: ItemKey) =>
  call((signal) =>
    client.send(new GetCommand({ TableName: tableName, Key: { ...key }, ConsistentRead: true }), { abortSignal: signal })
  ).pipe(Effect.map((output) => output.Item))

/** Items by key, strongly consistent, in at most 100 keys a request, retrying unprocessed keys. */
const getItems = Effect.fnUntraced(function*(client: Client, tableName: string, keys: ReadonlyArray<ItemKey>) {
  const found: Array<Record<string, unknown>> = []
  for (let start = 0; start < keys.length; start += 100) {
    let pending: ReadonlyArray<Record<string, unknown>> = keys.slice(start, start + 100).map((key) => ({ ...key }))
    for (let attempt = 0; pending.length > 0; attempt++) {
      if (attempt > 0) yield* Effect.sleep(Math.min(1_000, 20 * 2 ** attempt))
      if (attempt > 20) return yield* Effect.die(new Error("BatchGetItem kept leaving keys unprocessed"))
      const batch = pending
      const output = yield* call((signal) =>
        client.send(
          new BatchGetCommand({ RequestItems: { [tableName]: { Keys: [...batch], ConsistentRead: true } } }),
          { abortSignal: signal }
        )
      )
      found.push(...(output.Responses?.[tableName] ?? []))
      pending = output.UnprocessedKeys?.[tableName]?.Keys ?? []
    }
  }
  return found
})

/** Optional fields are stored as absent attributes, not as NULL, so conditions can test them. */
const withoutNulls = (record: Record<string, unknown>): Record<string, unknown> =>
  Object.fromEntries(Object.entries(record).filter(([, value]) => value !== null))

// ---------------------------------------------------------------------------------------------
// accounts

const AccountItem = Schema.Struct({ id: Schema.String, email: Schema.String, created_at: Timestamp })
const AccountPointer = Schema.Struct({ account_id: Schema.String, created_at: Timestamp })
const EmailPointer = Schema.Struct({ account_id: Schema.String })

export const AccountStoreDynamo: Layer.Layer<AccountStore, never, DynamoConfig> = Layer.effect(
  AccountStore,
  Effect.gen(function*() {
    const { client, tableName } = yield* DynamoConfig
    const decodeAccount = decode(AccountItem)
    const decodePointer = decode(AccountPointer)
    const decodeEmailPointer = decode(EmailPointer)

    // The account, its email, and (when it is the earliest so far) the FIRST pointer, all or
    // nothing. The pointer is read first so that the usual insert (not the first) is one
    // transaction; its condition still decides races: that condition alone failing means an
    // earlier account took the pointer meanwhile, and the account is written without it.
    const insert = Effect.fn("AccountStore.insert")(function*(account: AccountRecord) {
      const current = yield* Effect.orDie(getItem(client, tableName, ItemKeys.firstAccount))
      const pointer = current === undefined ? undefined : yield* decodePointer(current)
      const earliest = pointer === undefined || account.created_at < pointer.created_at
      const fields = { id: account.id, email: account.email, created_at: account.created_at }
      const items = (withPointer: boolean) => [
        create(tableName, ItemKeys.account(account.id), fields),
        create(tableName, ItemKeys.accountEmail(account.email), { account_id: account.id }),
        ...(withPointer
          ? [{
            Put: {
              TableName: tableName,
              Item: { ...ItemKeys.firstAccount, account_id: account.id, created_at: account.created_at },
              ConditionExpression: `${NOT_EXISTS} OR created_at > :created_at`,
              ExpressionAttributeValues: { ":created_at": account.created_at }
            }
          }]
          : [])
      ]
      const onlyPointerFailed = (error: unknown) => {
        const failed = failedConditionsAllowingNone(error)
        return failed !== undefined && failed.length === 1 && failed[0] === 2
      }
      yield* insertUnique(
        transact(client, items(earliest)).pipe(Effect.catchIf(onlyPointerFailed, () => transact(client, items(false)))),
        (failed) =>
          failed.includes(0)
            ? `AccountStore.insert: duplicate account id ${account.id}`
            : `AccountStore.insert: duplicate email ${account.email}`
      )
    })

    const get = (id: string) =>
      getItem(client, tableName, ItemKeys.account(id)).pipe(
        Effect.orDie,
        Effect.flatMap((item) => (item === undefined ? Effect.undefined : decodeAccount(item)))
      )

    const first = getItem(client, tableName, ItemKeys.firstAccount).pipe(
      Effect.orDie,
      Effect.flatMap((item) =>
        item === undefined ? Effect.undefined : Effect.flatMap(decodePointer(item), (pointer) => get(pointer.account_id))
      ),
      Effect.withSpan("AccountStore.first")
    )

    // The email's item names the account (it keeps emails unique).
    const findByEmail = Effect.fn("AccountStore.findByEmail")(function*(email: string) {
      const pointer = yield* Effect.orDie(getItem(client, tableName, ItemKeys.accountEmail(email)))
      if (pointer === undefined) return undefined
      return yield* get((yield* decodeEmailPointer(pointer)).account_id)
    })

    return AccountStore.of({ insert, get: (id) => get(id).pipe(Effect.withSpan("AccountStore.get")), findByEmail, first })
  })
)

// ---------------------------------------------------------------------------------------------
// keys

const KeyItem = Schema.Struct({
  id: Schema.String,
  account_id: Schema.String,
  name: Schema.String,
  prefix: Schema.String,
  secret_hash: Schema.String,
  permissions: Schema.Array(Permission),
  machine_id: Schema.optionalKey(Schema.String),
  subscription_id: Schema.optionalKey(Schema.String),
  rental_id: Schema.optionalKey(Schema.String),
  agent_id: Schema.optionalKey(Schema.String),
  created_at: Timestamp,
  last_used_at: Schema.optionalKey(Timestamp),
  revoked_at: Schema.optionalKey(Timestamp)
})
const KeyPointer = Schema.Struct({ key_id: Schema.String })

const toKeyRecord = (item: typeof KeyItem.Type): KeyRecord => ({
  id: item.id,
  account_id: item.account_id,
  name: item.name,
  prefix: item.prefix,
  secret_hash: item.secret_hash,
  permissions: item.permissions,
  machine_id: item.machine_id ?? null,
  subscription_id: item.subscription_id ?? null,
  rental_id: item.rental_id ?? null,
  agent_id: item.agent_id ?? null,
  created_at: item.created_at,
  last_used_at: item.last_used_at ?? null,
  revoked_at: item.revoked_at ?? null
})

/** Microseconds since the epoch, fixed width: orders keys created in the same millisecond. */
const writeStamp = Effect.map(Clock.currentTimeNanos, (nanos) => (nanos / 1000n).toString().padStart(17, "0"))

export const KeyStoreDynamo: Layer.Layer<KeyStore, never, DynamoConfig> = Layer.effect(
  KeyStore,
  Effect.gen(function*() {
    const { client, tableName } = yield* DynamoConfig
    const decodeKeyItem = decode(KeyItem)
    const decodeKey = (item: unknown) => Effect.map(decodeKeyItem(item), toKeyRecord)
    const decodePointer = decode(KeyPointer)

    const byId = (keyId: string) =>
      getItem(client, tableName, ItemKeys.key(keyId)).pipe(
        Effect.orDie,
        Effect.flatMap((item) => (item === undefined ? Effect.undefined : decodeKey(item)))
      )

    // The key, its hash and its entry in the account's list, all or nothing; the first two
    // conditions keep ids and hashes unique.
    const insert = Effect.fn("KeyStore.insert")(function*(key: KeyRecord) {
      const stamp = yield* writeStamp
      const fields = withoutNulls({ ...key, permissions: [...key.permissions] })
      yield* insertUnique(
        transact(client, [
          create(tableName, ItemKeys.key(key.id), fields),
          create(tableName, ItemKeys.keyHash(key.secret_hash), { key_id: key.id, account_id: key.account_id }),
          create(tableName, ItemKeys.accountKey(key.account_id, key.created_at, stamp, key.id), { key_id: key.id })
        ]),
        (failed) => failed.includes(0) ? `KeyStore.insert: duplicate key id ${key.id}` : "KeyStore.insert: duplicate secret hash"
      )
    })

    const findByHash = Effect.fn("KeyStore.findByHash")(function*(secretHash: string) {
      const pointer = yield* Effect.orDie(getItem(client, tableName, ItemKeys.keyHash(secretHash)))
      if (pointer === undefined) return undefined
      return yield* byId((yield* decodePointer(pointer)).key_id)
    })

    const get = Effect.fn("KeyStore.get")(function*(accountId: string, keyId: string) {
      const key = yield* byId(keyId)
      return key?.account_id === accountId ? key : undefined
    })

    const list = Effect.fn("KeyStore.list")(function*(accountId: string) {
      const pointers = yield* allPages((startKey: Record<string, unknown> | undefined) =>
        call((signal) =>
          client.send(
            new QueryCommand({
              TableName: tableName,
              KeyConditionExpression: "pk = :pk AND begins_with(sk, :prefix)",
              ExpressionAttributeValues: { ":pk": ItemKeys.account(accountId).pk, ":prefix": ACCOUNT_KEY_PREFIX },
              ConsistentRead: true,
              ...startingAt(startKey)
            }),
            { abortSignal: signal }
          )
        )
      )
      const ids: Array<string> = []
      for (const item of pointers) ids.push((yield* decodePointer(item)).key_id)
      const items = yield* Effect.orDie(getItems(client, tableName, ids.map(ItemKeys.key)))
      const keys = new Map<string, KeyRecord>()
      for (const item of items) {
        const key = yield* decodeKey(item)
        keys.set(key.id, key)
      }
      // The entries are in creation order; BatchGetItem answers in any order.
      return ids.flatMap((id) => {
        const key = keys.get(id)
        return key === undefined ? [] : [key]
      })
    })

    // Sets revoked_at only while it is absent; when that condition fails, the key is read as it
    // is (revoked earlier, or not this account's, or unknown).
    const revoke = Effect.fn("KeyStore.revoke")(function*(accountId: string, keyId: string, at: Timestamp) {
      const updated = yield* call((signal) =>
        client.send(
          new UpdateCommand({
            TableName: tableName,
            Key: { ...ItemKeys.key(keyId) },
            UpdateExpression: "SET revoked_at = :at",
            ConditionExpression: "attribute_exists(pk) AND account_id = :account AND attribute_not_exists(revoked_at)",
            ExpressionAttributeValues: { ":at": at, ":account": accountId },
            ReturnValues: "ALL_NEW"
          }),
          { abortSignal: signal }
        )
      ).pipe(
        retryConflictsBriefly,
        Effect.map((output) => output.Attributes),
        Effect.catchIf(isConditionFailed, () => Effect.undefined),
        Effect.orDie
      )
      return updated === undefined ? yield* get(accountId, keyId) : yield* decodeKey(updated)
    })

    const touch = (keyId: string, at: Timestamp) =>
      call((signal) =>
        client.send(
          new UpdateCommand({
            TableName: tableName,
            Key: { ...ItemKeys.key(keyId) },
            UpdateExpression: "SET last_used_at = :at",
            ConditionExpression: "attribute_exists(pk) AND (attribute_not_exists(last_used_at) OR last_used_at < :at)",
            ExpressionAttributeValues: { ":at": at }
          }),
          { abortSignal: signal }
        )
      ).pipe(
        retryConflictsBriefly,
        Effect.asVoid,
        // Unknown key, or a later use already recorded: nothing to do.
        Effect.catchIf(isConditionFailed, () => Effect.void),
        Effect.orDie,
        Effect.withSpan("KeyStore.touch")
      )

    // No index by prefix: a scan of the key items (an operator's lookup, never a request's).
    const findByPrefix = Effect.fn("KeyStore.findByPrefix")(function*(prefix: string) {
      const items = yield* allPages((startKey: Record<string, unknown> | undefined) =>
        call((signal) =>
          client.send(
            new ScanCommand({
              TableName: tableName,
              FilterExpression: "sk = :sk AND prefix = :prefix",
              ExpressionAttributeValues: { ":sk": ItemKeys.key("").sk, ":prefix": prefix },
              ConsistentRead: true,
              ...startingAt(startKey)
            }),
            { abortSignal: signal }
          )
        )
      )
      const found: Array<KeyRecord> = []
      for (const item of items) found.push(yield* decodeKey(item))
      return found.sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id))
    })

    return KeyStore.of({ insert, findByHash, findByPrefix, get, list, revoke, touch })
  })
)

// ---------------------------------------------------------------------------------------------
// idempotency records

const IdempotencyItem = Schema.Struct({
  scope: Schema.String,
  key: Schema.String,
  fingerprint: Schema.String,
  created_at: Timestamp,
  response_status: Schema.optionalKey(Schema.Number),
  response_body: Schema.optionalKey(Schema.String)
})

const toIdempotencyRecord = (item: typeof IdempotencyItem.Type): IdempotencyRecord => ({
  scope: item.scope,
  key: item.key,
  fingerprint: item.fingerprint,
  created_at: item.created_at,
  response: item.response_status === undefined
    ? undefined
    : { status: item.response_status, body: item.response_body ?? "" }
})

/** A claim can lose its race to a record that is released before it is read; then it tries again. */
const MAX_CLAIM_ATTEMPTS = 10

/** A record's TTL (epoch seconds): when it expires, after which DynamoDB deletes it in its own time. */
export const idempotencyTtl = (createdAt: string): number => Math.ceil((Date.parse(createdAt) + RETENTION_MS) / 1000)

export const IdempotencyStoreDynamo: Layer.Layer<IdempotencyStore, never, DynamoConfig> = Layer.effect(
  IdempotencyStore,
  Effect.gen(function*() {
    const { client, tableName } = yield* DynamoConfig
    const decodeRecord = decode(IdempotencyItem)

    const claimOnce = (record: Omit<IdempotencyRecord, "response">, attempt: number): Effect.Effect<ClaimResult> => {
      // DynamoDB's TTL deletes late (and DynamoDB Local never): an expired record is replaced here.
      const expired = expiredBy(record.created_at)
      return call((signal) =>
        client.send(
          new PutCommand({
            TableName: tableName,
            Item: {
              ...ItemKeys.idempotency(record.scope, record.key),
              scope: record.scope,
              key: record.key,
              fingerprint: record.fingerprint,
              created_at: record.created_at,
              [TTL_ATTRIBUTE]: idempotencyTtl(record.created_at)
            },
            ConditionExpression: `${NOT_EXISTS} OR created_at <= :expired`,
            ExpressionAttributeValues: { ":expired": expired }
          }),
          { abortSignal: signal }
        )
      ).pipe(
        retryConflictsBriefly,
        Effect.as<ClaimResult>({ _tag: "Claimed" }),
        Effect.catchIf(isConditionFailed, () =>
          getItem(client, tableName, ItemKeys.idempotency(record.scope, record.key)).pipe(
            Effect.flatMap(Effect.fnUntraced(function*(item): Effect.fn.Return<ClaimResult, unknown> {
              const existing = item === undefined ? undefined : yield* decodeRecord(item)
              // Absent, or expired: released or replaced since the put; try again.
              if (existing !== undefined && existing.created_at > expired) {
                return { _tag: "Exists", record: toIdempotencyRecord(existing) }
              }
              return yield* attempt < MAX_CLAIM_ATTEMPTS
                ? claimOnce(record, attempt + 1)
                : Effect.die(new Error("IdempotencyStore.claim: the record kept disappearing"))
            }))
          )),
        Effect.orDie
      )
    }

    const claim = (record: Omit<IdempotencyRecord, "response">) =>
      claimOnce(record, 1).pipe(Effect.withSpan("IdempotencyStore.claim"))

    const complete = (scope: string, key: string, response: StoredResponse) =>
      call((signal) =>
        client.send(
          new UpdateCommand({
            TableName: tableName,
            Key: { ...ItemKeys.idempotency(scope, key) },
            UpdateExpression: "SET response_status = :status, response_body = :body",
            ConditionExpression: "attribute_exists(pk)",
            ExpressionAttributeValues: { ":status": response.status, ":body": response.body }
          }),
          { abortSignal: signal }
        )
      ).pipe(
        retryConflictsBriefly,
        Effect.asVoid,
        Effect.catchIf(isConditionFailed, () => Effect.void),
        Effect.orDie,
        Effect.withSpan("IdempotencyStore.complete")
      )

    // Only an unfinished claim is released: a late release must not erase a stored response.
    const release = (scope: string, key: string) =>
      call((signal) =>
        client.send(
          new DeleteCommand({
            TableName: tableName,
            Key: { ...ItemKeys.idempotency(scope, key) },
            ConditionExpression: "attribute_exists(pk) AND attribute_not_exists(response_status)"
          }),
          { abortSignal: signal }
        )
      ).pipe(
        retryConflictsBriefly,
        Effect.asVoid,
        Effect.catchIf(isConditionFailed, () => Effect.void),
        Effect.orDie,
        Effect.withSpan("IdempotencyStore.release")
      )

    return IdempotencyStore.of({ claim, complete, release })
  })
)

/** The three stores on the table named by DynamoConfig. */
export const DynamoStores: Layer.Layer<AccountStore | KeyStore | IdempotencyStore, never, DynamoConfig> = Layer
  .mergeAll(AccountStoreDynamo, KeyStoreDynamo, IdempotencyStoreDynamo)
