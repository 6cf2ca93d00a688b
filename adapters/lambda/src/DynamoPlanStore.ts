/**
 * The plan store port (core/src/ports/PlanStore.ts) on the one DynamoDB table of DynamoTable.ts,
 * with the low-level commands and hand-written attributes of DynamoOrderStore.ts. The items
 * (`PlanKeys`), and how each rule of the port holds between processes:
 *
 * - A plan is one item keyed by its id (`SUBSCRIPTION#<id>`), a rental one keyed by its id
 *   (`RENTAL#<id>`); `subscription(id)` and `rental(id)` are one strongly consistent GetItem.
 * - One per order: `SUBSCRIPTIONORDER#<order id>` / `RENTALORDER#<order id>` holds the id of the
 *   order's record and is created with `attribute_not_exists(pk)` in the same TransactWriteItems
 *   as the record and its account listing. Of concurrent inserts for one order exactly one
 *   transaction commits; the others see that item's condition fail (read through the
 *   CancellationReasons, by position) and answer the record it points at. The record's own
 *   condition failing alone is a duplicate id for another order: a defect.
 * - Listing by account without an index: the account's partition `PLANACCOUNT#<account id>` holds
 *   one item per plan (`SUBSCRIPTION#<created_at>#<id>`, pointing at the plan, which changes) and
 *   one per rental (`RENTAL#<created_at>#<id>`, a copy: rentals never change). A Query on
 *   `begins_with(sk)` finds them; the answer is sorted newest first, then by id (`newestFirst`).
 * - `setRenewal` is one UpdateItem of the plan conditioned on
 *   `attribute_exists(pk) AND account_id = :account`, answering ALL_NEW: another account's plan
 *   or an unknown id fails the condition, and nothing changes.
 *
 * Integers (cores, gigabytes, hours) are DynamoDB numbers, read back as the same integers.
 * Input breaking `subscriptionProblem` / `rentalProblem` is a defect; so is any store failure.
 */
import { type AttributeValue, UpdateItemCommand } from "@aws-sdk/client-dynamodb"
import { PaymentMethodValues } from "@model-platform/core/Orders"
import {
  newestFirst,
  PlanStore,
  type RentalRecord,
  rentalProblem,
  type SubscriptionRecord,
  subscriptionProblem
} from "@model-platform/core/ports/PlanStore"
import { Effect, Layer, Schema } from "effect"
import {
  bool,
  BoolAttr,
  decode,
  IntAttr,
  type Item,
  keyOf,
  literalAttr,
  num,
  str,
  StringAttr,
  TimestampAttr
} from "./DynamoAttributes.ts"
import { call, isConditionFailed, makeItemTable, retryConflicts } from "./DynamoErrors.ts"
import { DynamoConfig, type ItemKey } from "./DynamoTable.ts"

// ---------------------------------------------------------------------------------------------
// keys

const accountPk = (accountId: string) => `PLANACCOUNT#${accountId}`

/** Sort key prefixes inside an account's plan collection (`PLANACCOUNT#<account id>`), for `begins_with`. */
export const PLAN_ACCOUNT_PREFIX = {
  subscription: "SUBSCRIPTION#",
  rental: "RENTAL#"
} as const

/** The key of every plan store item. Ids are whole key values, never parsed back out of a key. */
export const PlanKeys = {
  /** The plan itself. */
  subscription: (id: string): ItemKey => ({ pk: `SUBSCRIPTION#${id}`, sk: "SUBSCRIPTION" }),
  /** Holds the plan of an order: at most one per order. */
  subscriptionOrder: (orderId: string): ItemKey => ({ pk: `SUBSCRIPTIONORDER#${orderId}`, sk: "SUBSCRIPTIONORDER" }),
  /** Points at the plan from its account's list. */
  accountSubscription: (accountId: string, createdAt: string, id: string): ItemKey => ({
    pk: accountPk(accountId),
    sk: `${PLAN_ACCOUNT_PREFIX.subscription}${createdAt}#${id}`
  }),
  /** The rental itself. */
  rental: (id: string): ItemKey => ({ pk: `RENTAL#${id}`, sk: "RENTAL" }),
  /** Holds the rental of an order: at most one per order. */
  rentalOrder: (orderId: string): ItemKey => ({ pk: `RENTALORDER#${orderId}`, sk: "RENTALORDER" }),
  /** A copy of the rental (rentals never change) in its account's list. */
  accountRental: (accountId: string, createdAt: string, id: string): ItemKey => ({
    pk: accountPk(accountId),
    sk: `${PLAN_ACCOUNT_PREFIX.rental}${createdAt}#${id}`
  })
} as const

// ---------------------------------------------------------------------------------------------
// attribute values

const SubscriptionItem = Schema.Struct({
  id: StringAttr,
  account_id: StringAttr,
  order_id: StringAttr,
  machine_id: StringAttr,
  plan_id: StringAttr,
  paid_with: literalAttr(PaymentMethodValues),
  auto_renews: BoolAttr,
  cancel_at_period_end: BoolAttr,
  current_period_start: TimestampAttr,
  current_period_end: TimestampAttr,
  created_at: TimestampAttr
})

const toSubscription = (item: typeof SubscriptionItem.Type): SubscriptionRecord => ({
  id: item.id,
  account_id: item.account_id,
  order_id: item.order_id,
  machine_id: item.machine_id,
  plan_id: item.plan_id,
  paid_with: item.paid_with,
  auto_renews: item.auto_renews,
  cancel_at_period_end: item.cancel_at_period_end,
  current_period_start: item.current_period_start,
  current_period_end: item.current_period_end,
  created_at: item.created_at
})

const subscriptionAttributes = (r: SubscriptionRecord): Item => ({
  id: str(r.id),
  account_id: str(r.account_id),
  order_id: str(r.order_id),
  machine_id: str(r.machine_id),
  plan_id: str(r.plan_id),
  paid_with: str(r.paid_with),
  auto_renews: bool(r.auto_renews),
  cancel_at_period_end: bool(r.cancel_at_period_end),
  current_period_start: str(r.current_period_start),
  current_period_end: str(r.current_period_end),
  created_at: str(r.created_at)
})

const RentalItem = Schema.Struct({
  id: StringAttr,
  account_id: StringAttr,
  order_id: StringAttr,
  machine_id: StringAttr,
  cpu_cores: IntAttr,
  memory_gb: IntAttr,
  gpu: IntAttr,
  storage_gb: IntAttr,
  hours: IntAttr,
  starts_at: TimestampAttr,
  ends_at: TimestampAttr,
  created_at: TimestampAttr
})

const toRental = (item: typeof RentalItem.Type): RentalRecord => ({
  id: item.id,
  account_id: item.account_id,
  order_id: item.order_id,
  machine_id: item.machine_id,
  cpu_cores: item.cpu_cores,
  memory_gb: item.memory_gb,
  gpu: item.gpu,
  storage_gb: item.storage_gb,
  hours: item.hours,
  starts_at: item.starts_at,
  ends_at: item.ends_at,
  created_at: item.created_at
})

const rentalAttributes = (r: RentalRecord): Item => ({
  id: str(r.id),
  account_id: str(r.account_id),
  order_id: str(r.order_id),
  machine_id: str(r.machine_id),
  cpu_cores: num(r.cpu_cores),
  memory_gb: num(r.memory_gb),
  gpu: num(r.gpu),
  storage_gb: num(r.storage_gb),
  hours: num(r.hours),
  starts_at: str(r.starts_at),
  ends_at: str(r.ends_at),
  created_at: str(r.created_at)
})

/** The order's item and the account's list items of plans point at a plan by id. */
const SubscriptionPointer = Schema.Struct({ subscription_id: StringAttr })
const RentalPointer = Schema.Struct({ rental_id: StringAttr })

// ---------------------------------------------------------------------------------------------
// the store

export const PlanStoreDynamo: Layer.Layer<PlanStore, never, DynamoConfig> = Layer.effect(
  PlanStore,
  Effect.gen(function*() {
    const { client, tableName } = yield* DynamoConfig
    const { createItem, getItem, getItems, queryItems, transact } = makeItemTable(client, tableName, "PlanStore")
    const decodeSubscription = decode(SubscriptionItem)
    const decodeRental = decode(RentalItem)
    const decodeSubscriptionPointer = decode(SubscriptionPointer)
    const decodeRentalPointer = decode(RentalPointer)

    const die = (operation: string, problem: string) => Effect.die(new Error(`PlanStore.${operation}: ${problem}`))


    /** An account's list items of one kind (strongly consistent, every page). */
    const accountList = (accountId: string, prefix: string) =>
      queryItems({
        KeyConditionExpression: "pk = :pk AND begins_with(sk, :prefix)",
        ExpressionAttributeValues: { ":pk": str(accountPk(accountId)), ":prefix": str(prefix) },
        ScanIndexForward: false
      })

    // ---- plans ----

    const readSubscription = (id: string) =>
      Effect.flatMap(getItem(PlanKeys.subscription(id)), (item) =>
        item === undefined ? Effect.undefined : Effect.map(decodeSubscription(item), toSubscription))

    // The order's item (0), the plan (1) and its entry in the account's list (2), all or nothing:
    // 0 failing means the order has its plan (answered as stored); 1 alone a duplicate id.
    const insertSubscription = Effect.fn("PlanStore.insertSubscription")(function*(record: SubscriptionRecord) {
      const problem = subscriptionProblem(record)
      if (problem !== undefined) return yield* die("insertSubscription", problem)
      const pointer = { subscription_id: str(record.id) }
      const result = yield* transact("insertSubscription", [
        createItem(PlanKeys.subscriptionOrder(record.order_id), pointer),
        createItem(PlanKeys.subscription(record.id), subscriptionAttributes(record)),
        createItem(PlanKeys.accountSubscription(record.account_id, record.created_at, record.id), pointer)
      ])
      if (result.committed) return { ...record }
      if (result.failed.includes(0)) {
        const held = yield* getItem(PlanKeys.subscriptionOrder(record.order_id))
        const existing = held === undefined
          ? undefined
          : yield* readSubscription((yield* decodeSubscriptionPointer(held)).subscription_id)
        return existing ?? (yield* die("insertSubscription", `the plan of order ${record.order_id} is missing`))
      }
      if (result.failed.includes(1)) return yield* die("insertSubscription", `duplicate plan id ${record.id}`)
      return yield* die("insertSubscription", `the account's list item of plan ${record.id} exists`)
    })

    const subscription = (id: string) => readSubscription(id).pipe(Effect.withSpan("PlanStore.subscription"))

    const subscriptions = Effect.fn("PlanStore.subscriptions")(function*(accountId: string) {
      const ids: Array<string> = []
      for (const item of yield* accountList(accountId, PLAN_ACCOUNT_PREFIX.subscription)) {
        ids.push((yield* decodeSubscriptionPointer(item)).subscription_id)
      }
      const found: Array<SubscriptionRecord> = []
      for (const item of yield* getItems(ids.map(PlanKeys.subscription))) {
        found.push(toSubscription(yield* decodeSubscription(item)))
      }
      return found.sort(newestFirst)
    })

    // One conditional update: the plan exists and is the account's, else nothing changes.
    const setRenewal = Effect.fn("PlanStore.setRenewal")(function*(
      accountId: string,
      id: string,
      renewal: Pick<SubscriptionRecord, "auto_renews" | "cancel_at_period_end">
    ) {
      const updated = yield* call((signal) =>
        client.send(
          new UpdateItemCommand({
            TableName: tableName,
            Key: keyOf(PlanKeys.subscription(id)),
            UpdateExpression: "SET #renews = :renews, #cancel = :cancel",
            ConditionExpression: "attribute_exists(pk) AND #account = :account",
            ExpressionAttributeNames: {
              "#renews": "auto_renews",
              "#cancel": "cancel_at_period_end",
              "#account": "account_id"
            },
            ExpressionAttributeValues: {
              ":renews": bool(renewal.auto_renews),
              ":cancel": bool(renewal.cancel_at_period_end),
              ":account": str(accountId)
            } satisfies Record<string, AttributeValue>,
            ReturnValues: "ALL_NEW"
          }),
          { abortSignal: signal }
        )
      ).pipe(
        retryConflicts,
        Effect.map((output) => output.Attributes),
        Effect.catchIf(isConditionFailed, () => Effect.undefined),
        Effect.orDie
      )
      return updated === undefined ? undefined : toSubscription(yield* decodeSubscription(updated))
    })

    // ---- rentals ----

    const readRental = (id: string) =>
      Effect.flatMap(getItem(PlanKeys.rental(id)), (item) =>
        item === undefined ? Effect.undefined : Effect.map(decodeRental(item), toRental))

    // The order's item (0), the rental (1) and its copy in the account's list (2), all or nothing:
    // 0 failing means the order has its rental (answered as stored); 1 alone a duplicate id.
    const insertRental = Effect.fn("PlanStore.insertRental")(function*(record: RentalRecord) {
      const problem = rentalProblem(record)
      if (problem !== undefined) return yield* die("insertRental", problem)
      const attributes = rentalAttributes(record)
      const result = yield* transact("insertRental", [
        createItem(PlanKeys.rentalOrder(record.order_id), { rental_id: str(record.id) }),
        createItem(PlanKeys.rental(record.id), attributes),
        createItem(PlanKeys.accountRental(record.account_id, record.created_at, record.id), attributes)
      ])
      if (result.committed) return { ...record }
      if (result.failed.includes(0)) {
        const held = yield* getItem(PlanKeys.rentalOrder(record.order_id))
        const existing = held === undefined ? undefined : yield* readRental((yield* decodeRentalPointer(held)).rental_id)
        return existing ?? (yield* die("insertRental", `the rental of order ${record.order_id} is missing`))
      }
      if (result.failed.includes(1)) return yield* die("insertRental", `duplicate rental id ${record.id}`)
      return yield* die("insertRental", `the account's list item of rental ${record.id} exists`)
    })

    const rental = (id: string) => readRental(id).pipe(Effect.withSpan("PlanStore.rental"))

    const rentals = Effect.fn("PlanStore.rentals")(function*(accountId: string) {
      const found: Array<RentalRecord> = []
      for (const item of yield* accountList(accountId, PLAN_ACCOUNT_PREFIX.rental)) {
        found.push(toRental(yield* decodeRental(item)))
      }
      return found.sort(newestFirst)
    })

    return PlanStore.of({
      insertSubscription,
      subscription,
      subscriptions,
      setRenewal,
      insertRental,
      rental,
      rentals
    })
  })
)
