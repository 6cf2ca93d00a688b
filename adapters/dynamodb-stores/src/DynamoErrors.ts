/**
 * Calling DynamoDB and reading its failures, shared by the DynamoDB stores (DynamoStores.ts,
 * DynamoLedgerStore.ts, DynamoOrderStore.ts, DynamoPlanStore.ts): the one way an SDK call becomes an Effect, how a
 * failed condition, a cancelled transaction (its CancellationReasons) and a conflict are
 * recognised, the backoff with which a conflicting write is tried again, and the item reads and
 * transactions of the stores that write items by hand (`makeItemTable`).
 */
import {
  type AttributeValue,
  BatchGetItemCommand,
  GetItemCommand,
  QueryCommand,
  type QueryCommandInput,
  ScanCommand,
  type ScanCommandInput,
  TransactWriteItemsCommand,
  type TransactWriteItem
} from "@aws-sdk/client-dynamodb"
import { Duration, Effect, Predicate, Random, Schedule } from "effect"
import { keyOf } from "./DynamoAttributes.ts"
import type { DynamoSettings, ItemKey } from "./DynamoTable.ts"

/** One SDK call; its rejection stays in the error channel so that callers can look at it. */
export const call = <A>(f: (signal: AbortSignal) => Promise<A>): Effect.Effect<A, unknown> =>
  Effect.tryPromise({ try: f, catch: (error) => error })

export const errorName = (error: unknown): string | undefined =>
  Predicate.hasProperty(error, "name") && Predicate.isString(error.name) ? error.name : undefined

/** A single conditional write whose condition did not hold. */
export const isConditionFailed = (error: unknown): boolean => errorName(error) === "ConditionalCheckFailedException"

/** Per item of a cancelled transaction: "None", "ConditionalCheckFailed", "TransactionConflict"... */
export const cancellationCodes = (error: unknown): ReadonlyArray<string> | undefined => {
  if (errorName(error) !== "TransactionCanceledException") return undefined
  const reasons = Predicate.hasProperty(error, "CancellationReasons") ? error.CancellationReasons : undefined
  if (!Array.isArray(reasons)) return undefined
  return reasons.map((reason: unknown) =>
    Predicate.hasProperty(reason, "Code") && Predicate.isString(reason.Code) ? reason.Code : "None"
  )
}

/** Another transaction held one of the items: nothing was written, worth trying again. */
export const isConflict = (error: unknown): boolean =>
  errorName(error) === "TransactionConflictException" ||
  (cancellationCodes(error)?.includes("TransactionConflict") ?? false)

/**
 * The indexes of the items whose condition failed, or undefined when it is another failure,
 * including a cancellation in which no condition failed.
 */
export const failedConditions = (error: unknown): ReadonlyArray<number> | undefined => {
  const codes = cancellationCodes(error)
  if (codes === undefined || !codes.includes("ConditionalCheckFailed")) return undefined
  return failedConditionsAllowingNone(error)
}

/**
 * As failedConditions, except that a cancellation whose every code is "None" answers [] (no
 * condition failed) rather than undefined.
 */
export const failedConditionsAllowingNone = (error: unknown): ReadonlyArray<number> | undefined => {
  const codes = cancellationCodes(error)
  if (codes === undefined || codes.some((code) => code !== "None" && code !== "ConditionalCheckFailed")) return undefined
  return codes.flatMap((code, i) => (code === "ConditionalCheckFailed" ? [i] : []))
}

/**
 * Backoff for conflicts: exponential from 10 ms, capped at 500 ms, with full jitter (a uniform
 * delay below the cap) so that many writers of one item spread out. Under contention on one item
 * transactions take turns; 30 concurrent writers of one ledger scope need a few rounds.
 */
export const CONFLICT_RETRIES = 40
export const conflictSchedule = Schedule.exponential("10 millis").pipe(
  Schedule.modifyDelay(({ duration }) =>
    Effect.map(Random.next, (r) => Duration.millis(Math.max(1, r * Math.min(500, Duration.toMillis(duration)))))
  )
)

/** Tries an effect again while it fails with a conflict, with conflictSchedule, CONFLICT_RETRIES times. */
export const retryConflicts = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.retry(effect, { schedule: conflictSchedule, times: CONFLICT_RETRIES, while: isConflict })

/**
 * The shorter retry of the account, key and idempotency stores, whose items see little
 * contention: exponential from 10 ms with the default jitter, at most 10 times.
 */
export const retryConflictsBriefly = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.retry(effect, {
    schedule: Schedule.exponential("10 millis").pipe(Schedule.jittered),
    times: 10,
    while: isConflict
  })

type Item = Record<string, AttributeValue>

/** One page of a Query or a Scan, through either client: its items and where the next one starts. */
interface Page<I, K> {
  readonly Items?: ReadonlyArray<I> | undefined
  readonly LastEvaluatedKey?: K | undefined
}

/**
 * The items of a Query or a Scan across its pages, through either client (the low-level one or the
 * document client): `read(startKey, taken)` sends one request from `startKey` (undefined: the
 * start, or `from`), `taken` being the items in hand (for a Limit of what is left). Follows
 * LastEvaluatedKey until no page follows, or until `limit` items are in hand. Failures are defects.
 */
export const allPages = <I, K>(
  read: (startKey: K | undefined, taken: number) => Effect.Effect<Page<I, K>, unknown>,
  options: { readonly limit?: number | undefined; readonly from?: K | undefined } = {}
): Effect.Effect<Array<I>> =>
  Effect.gen(function*() {
    const items: Array<I> = []
    let startKey = options.from
    do {
      const page = yield* Effect.orDie(read(startKey, items.length))
      items.push(...(page.Items ?? []))
      startKey = page.LastEvaluatedKey
    } while (startKey !== undefined && (options.limit === undefined || items.length < options.limit))
    return items
  })

/** A request's ExclusiveStartKey: none for the first page. */
export const startingAt = <K>(startKey: K | undefined): { readonly ExclusiveStartKey?: K } =>
  startKey === undefined ? {} : { ExclusiveStartKey: startKey }

/**
 * Every item a query on `tableName` finds (or the first `limit`), strongly consistent, across its
 * pages. Failures are defects.
 */
export const makeQueryItems = (client: DynamoSettings["client"], tableName: string) =>
  (
    input: Omit<QueryCommandInput, "TableName" | "ConsistentRead" | "ExclusiveStartKey" | "Limit">,
    limit?: number
  ): Effect.Effect<Array<Item>> =>
    allPages((startKey: Item | undefined, taken) =>
      call((signal) =>
        client.send(
          new QueryCommand({
            ...input,
            TableName: tableName,
            ConsistentRead: true,
            ...(limit === undefined ? {} : { Limit: limit - taken }),
            ...startingAt(startKey)
          }),
          { abortSignal: signal }
        )
      ), { limit })

/**
 * Every item a Scan of `tableName` keeps (eventually consistent, as Scans are here: the backfills),
 * across its pages. Failures are defects.
 */
export const makeScanItems = (client: DynamoSettings["client"], tableName: string) =>
  (input: Omit<ScanCommandInput, "TableName" | "ExclusiveStartKey">): Effect.Effect<Array<Item>> =>
    allPages((startKey: Item | undefined) =>
      call((signal) =>
        client.send(new ScanCommand({ ...input, TableName: tableName, ...startingAt(startKey) }), { abortSignal: signal })
      )
    )

/** At most 100 items per TransactWriteItems. */
const MAX_TRANSACTION_ITEMS = 100

export type TransactResult =
  | { readonly committed: true }
  | { readonly committed: false; readonly failed: ReadonlyArray<number> }

const COMMITTED: TransactResult = { committed: true }

/**
 * The item reads and transactional writes of the stores that write items by hand (ledger,
 * orders, plans) on one table; `store` names the store in defects ("LedgerStore").
 */
export const makeItemTable = (client: DynamoSettings["client"], tableName: string, store: string) => ({
  /** A Put in a transaction that only creates the item. */
  createItem: (key: ItemKey, attributes: Item): TransactWriteItem => ({
    Put: { TableName: tableName, Item: { ...attributes, ...keyOf(key) }, ConditionExpression: "attribute_not_exists(pk)" }
  }),
  deleteItem: (key: ItemKey): TransactWriteItem => ({ Delete: { TableName: tableName, Key: keyOf(key) } }),
  /** One item, strongly consistent. */
  getItem: (key: ItemKey) =>
    call((signal) =>
      client.send(new GetItemCommand({ TableName: tableName, Key: keyOf(key), ConsistentRead: true }), {
        abortSignal: signal
      })
    ).pipe(Effect.map((output) => output.Item), Effect.orDie),
  /** Items by key in the keys' order (missing ones left out), 100 keys a request, retrying unprocessed keys. */
  getItems: Effect.fnUntraced(function*(keys: ReadonlyArray<ItemKey>) {
    const found = new Map<string, Item>()
    const id = (pk: string, sk: string) => JSON.stringify([pk, sk])
    for (let start = 0; start < keys.length; start += 100) {
      let pending: ReadonlyArray<Item> = keys.slice(start, start + 100).map(keyOf)
      for (let attempt = 0; pending.length > 0; attempt++) {
        if (attempt > 20) return yield* Effect.die(new Error("BatchGetItem kept leaving keys unprocessed"))
        if (attempt > 0) yield* Effect.sleep(Math.min(1_000, 20 * 2 ** attempt))
        const batch = pending
        const output = yield* Effect.orDie(call((signal) =>
          client.send(
            new BatchGetItemCommand({ RequestItems: { [tableName]: { Keys: [...batch], ConsistentRead: true } } }),
            { abortSignal: signal }
          )
        ))
        for (const item of output.Responses?.[tableName] ?? []) found.set(id(item.pk?.S ?? "", item.sk?.S ?? ""), item)
        pending = output.UnprocessedKeys?.[tableName]?.Keys ?? []
      }
    }
    return keys.flatMap((key) => {
      const item = found.get(id(key.pk, key.sk))
      return item === undefined ? [] : [item]
    })
  }),
  queryItems: makeQueryItems(client, tableName),
  scanItems: makeScanItems(client, tableName),
  /**
   * One all-or-nothing write, tried again while it conflicts with other transactions. A fresh
   * command (and so a fresh ClientRequestToken) per attempt: a cancelled attempt wrote nothing.
   * Answers which conditions failed when it was cancelled by them; any other failure is a defect.
   */
  transact: (operation: string, items: ReadonlyArray<TransactWriteItem>): Effect.Effect<TransactResult> => {
    if (items.length > MAX_TRANSACTION_ITEMS) {
      return Effect.die(new Error(`${store}.${operation}: ${items.length} items exceed one transaction`))
    }
    return call((signal) =>
      client.send(new TransactWriteItemsCommand({ TransactItems: [...items] }), { abortSignal: signal })
    ).pipe(
      retryConflicts,
      Effect.as(COMMITTED),
      Effect.catchIf(
        (error) => failedConditions(error) !== undefined,
        (error): Effect.Effect<TransactResult> => Effect.succeed({ committed: false, failed: failedConditions(error) ?? [] })
      ),
      Effect.orDie
    )
  }
})
