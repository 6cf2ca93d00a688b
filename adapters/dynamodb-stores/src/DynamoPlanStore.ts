/**
 * The plan store port (core/src/plans/PlanStore.ts) on the one DynamoDB table of DynamoTable.ts,
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
 * - A plan item also holds `version` (0 at insert, +1 on every write), `card_reference` and
 *   `renewal_error` (absent when null).
 * - Renewals (DynamoPlanRenewals.ts): `PLANRENEWAL#<order id>` remembers the order that renewed a
 *   plan (once per order); the one partition `PLANRENEWING` holds `<current_period_end>#<plan id>`
 *   for exactly the plans with `auto_renews` (no secondary index), kept in step by every write
 *   that changes `auto_renews` or `current_period_end` in its own transaction, insert included.
 *   `setRenewal` and `renew` read the plan and write conditioned on the version read (read again
 *   when it changed); another account's plan or an unknown id changes nothing.
 *
 * Integers (cores, gigabytes, hours) are DynamoDB numbers, read back as the same integers.
 * Input breaking `subscriptionProblem` / `renewalProblem` / `rentalProblem` is a defect; so is any
 * store failure.
 */
import { PaymentMethodValues } from "@model-platform/core/catalogue"
import {
  newestFirst,
  PlanStore,
  type RentalRecord,
  rentalProblem,
  type SubscriptionRecord,
  subscriptionProblem
} from "@model-platform/core/plans"
import { Effect, Layer, Schema } from "effect"
import {
  bool,
  BoolAttr,
  decode,
  IntAttr,
  type Item,
  literalAttr,
  num,
  optionalStr,
  str,
  StringAttr,
  TimestampAttr
} from "./DynamoAttributes.ts"
import { makeItemTable } from "./DynamoErrors.ts"
import { makePlanRenewals, RenewalKeys, renewingChanges, type StoredPlan } from "./DynamoPlanRenewals.ts"
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
  }),
  ...RenewalKeys
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
  created_at: TimestampAttr,
  card_reference: Schema.optionalKey(StringAttr),
  renewal_error: Schema.optionalKey(StringAttr),
  // Absent on plans written before versions.
  version: Schema.optionalKey(IntAttr)
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
  created_at: item.created_at,
  card_reference: item.card_reference ?? null,
  renewal_error: item.renewal_error ?? null
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
  created_at: str(r.created_at),
  ...optionalStr("card_reference", r.card_reference),
  ...optionalStr("renewal_error", r.renewal_error),
  version: num(0)
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
    const table = makeItemTable(client, tableName, "PlanStore")
    const { createItem, getItem, getItems, queryItems, transact } = table
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

    const decodePlan = (item: Item) => Effect.map(decodeSubscription(item), toSubscription)

    const readPlan = (id: string): Effect.Effect<StoredPlan | undefined> =>
      Effect.flatMap(getItem(PlanKeys.subscription(id)), (item) =>
        item === undefined
          ? Effect.undefined
          : Effect.map(decodeSubscription(item), (decoded) => ({ plan: toSubscription(decoded), version: decoded.version })))

    const readSubscription = (id: string) => Effect.map(readPlan(id), (stored) => stored?.plan)

    // The order's item (0), the plan (1), its entry in the account's list (2) and, when it renews,
    // its renewing index item, all or nothing: 0 failing means the order has its plan (answered
    // as stored); 1 alone a duplicate id.
    const insertSubscription = Effect.fn("PlanStore.insertSubscription")(function*(record: SubscriptionRecord) {
      const problem = subscriptionProblem(record)
      if (problem !== undefined) return yield* die("insertSubscription", problem)
      const pointer = { subscription_id: str(record.id) }
      const result = yield* transact("insertSubscription", [
        createItem(PlanKeys.subscriptionOrder(record.order_id), pointer),
        createItem(PlanKeys.subscription(record.id), subscriptionAttributes(record)),
        createItem(PlanKeys.accountSubscription(record.account_id, record.created_at, record.id), pointer),
        ...renewingChanges(tableName, undefined, record)
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
      for (const item of yield* getItems(ids.map(PlanKeys.subscription))) found.push(yield* decodePlan(item))
      return found.sort(newestFirst)
    })

    const renewals = makePlanRenewals({ tableName, table, planKey: PlanKeys.subscription, readPlan, decodePlan, die })

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
      ...renewals,
      insertRental,
      rental,
      rentals
    })
  })
)
