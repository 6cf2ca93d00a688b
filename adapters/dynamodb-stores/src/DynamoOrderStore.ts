/**
 * The order store port (core/src/payments/OrderStore.ts) on the one DynamoDB table of
 * DynamoTable.ts. docs/lambda-orders.md describes every item, the access pattern it serves and how
 * each atomic rule is enforced; in short:
 *
 * - Everything unique (an order id, a card session, a deposit address, a ticket code, the ticket of
 *   an order, a receipt id, the receipt of an order, a transfer (chain, tx)) has an item of its own
 *   keyed by that value, created with `attribute_not_exists(pk)` in the same TransactWriteItems as
 *   the record it guards. A cancelled transaction is read through its CancellationReasons, by item
 *   position: "the receipt of this order exists" is the answer "exists", "this receipt id exists"
 *   is a defect, and so on. TransactionConflict means another transaction held an item: the whole
 *   transaction is tried again after a jittered backoff.
 * - `markPaid` is one conditional update (`status = pending AND expires_at > :paidAt`);
 *   `redeemTicket` one conditional update (`attribute_not_exists(redeemed_by)`). Of concurrent
 *   calls DynamoDB lets exactly one condition hold.
 * - `startPayment` reads the order, then writes it conditioned on the `version` it read (every
 *   write of an order increments it), so the record it answers is exactly the one stored; a lost
 *   race reads again.
 *
 * Money never passes through a JS number: like DynamoLedgerStore, this store sends the low-level
 * commands of @aws-sdk/client-dynamodb, writes amounts as `{ N: bigint.toString() }` and decodes
 * them with Schema.BigIntFromString (deposit amounts in token base units exceed 2^53).
 */
import { type AttributeValue, type TransactWriteItem, UpdateItemCommand } from "@aws-sdk/client-dynamodb"
import {
  countsTowardTier,
  type DepositRecord,
  type OrderRecord,
  OrderStatusValues,
  OrderStore,
  OrderTypeValues,
  type PaymentStart,
  type ReceiptRecord,
  type RedeemOutcome,
  type TicketRecord
} from "@model-platform/core/payments"
import { type PaymentMethod, PaymentMethodValues } from "@model-platform/core/catalogue"
import { type OrderDetails } from "@model-platform/core/plans"
import type { Timestamp } from "@model-platform/core/kernel"
import { Effect, Layer, Schema } from "effect"
import {
  BigIntAttr,
  bool,
  BoolAttr,
  decode,
  IntAttr,
  type Item,
  keyOf,
  literalAttr,
  makeWriteStamp,
  num,
  optionalStr,
  str,
  StringAttr,
  TimestampAttr
} from "./DynamoAttributes.ts"
import { call, isConditionFailed, makeItemTable, retryConflicts } from "./DynamoErrors.ts"
import { DynamoConfig, type ItemKey } from "./DynamoTable.ts"

// ---------------------------------------------------------------------------------------------
// keys

const accountPk = (accountId: string) => `ORDERACCOUNT#${accountId}`

/** Sort key prefixes inside an account's order collection (`ORDERACCOUNT#<account id>`), for `begins_with`. */
export const ORDER_ACCOUNT_PREFIX = {
  order: "ORDER#",
  ticket: "TICKET#",
  receipt: "RECEIPT#"
} as const

/** The one partition listing paid orders without a receipt, by paid_at. */
export const UNFULFILLED_PK = "ORDERQUEUE#UNFULFILLED"

/**
 * The key of every order store item (docs/lambda-orders.md). Ids are whole key values, never
 * parsed back out of a key: each item also carries its fields as attributes.
 */
export const OrderKeys = {
  /** The order itself. */
  order: (orderId: string): ItemKey => ({ pk: `ORDER#${orderId}`, sk: "ORDER" }),
  /** The order in its buyer's list: newest last in sort key order. */
  accountOrder: (accountId: string, createdAt: string, stamp: string, orderId: string): ItemKey => ({
    pk: accountPk(accountId),
    sk: `${ORDER_ACCOUNT_PREFIX.order}${createdAt}#${stamp}#${orderId}`
  }),
  /** Holds a card checkout session: finds its order, keeps sessions unique. */
  cardSession: (sessionId: string): ItemKey => ({ pk: `ORDERSESSION#${sessionId}`, sk: "ORDERSESSION" }),
  /** Holds a deposit address: finds its order, keeps addresses unique among orders. */
  depositAddress: (address: string): ItemKey => ({ pk: `ORDERADDRESS#${address}`, sk: "ORDERADDRESS" }),
  /** A paid order without a receipt, oldest paid first; deleted with the receipt. */
  unfulfilled: (paidAt: string, stamp: string, orderId: string): ItemKey => ({
    pk: UNFULFILLED_PK,
    sk: `${paidAt}#${stamp}#${orderId}`
  }),
  /** The ticket itself. */
  ticket: (code: string): ItemKey => ({ pk: `TICKET#${code}`, sk: "TICKET" }),
  /** Holds the ticket of an order: at most one per order. */
  ticketOrder: (orderId: string): ItemKey => ({ pk: `TICKETORDER#${orderId}`, sk: "TICKETORDER" }),
  /** The ticket in its buyer's list. */
  accountTicket: (accountId: string, createdAt: string, stamp: string, code: string): ItemKey => ({
    pk: accountPk(accountId),
    sk: `${ORDER_ACCOUNT_PREFIX.ticket}${createdAt}#${stamp}#${code}`
  }),
  /** The receipt itself. */
  receipt: (receiptId: string): ItemKey => ({ pk: `RECEIPT#${receiptId}`, sk: "RECEIPT" }),
  /** Holds the receipt of an order: at most one per order. */
  receiptOrder: (orderId: string): ItemKey => ({ pk: `RECEIPTORDER#${orderId}`, sk: "RECEIPTORDER" }),
  /** A copy of the receipt (receipts never change) in its account's list. */
  accountReceipt: (accountId: string, paidAt: string, stamp: string, receiptId: string): ItemKey => ({
    pk: accountPk(accountId),
    sk: `${ORDER_ACCOUNT_PREFIX.receipt}${paidAt}#${stamp}#${receiptId}`
  }),
  /** The account's purchased credits: the running sum of its receipts that count toward the tier. */
  purchased: (accountId: string): ItemKey => ({ pk: accountPk(accountId), sk: "PURCHASED" }),
  /** A transfer, unique per (chain, tx). */
  deposit: (chain: string, tx: string): ItemKey => ({ pk: `DEPOSIT#${tx}`, sk: `DEPOSIT#${chain}` }),
  /** A copy of the transfer (transfers never change) in its address's list, in the order recorded. */
  addressDeposit: (address: string, stamp: string, chain: string, tx: string): ItemKey => ({
    pk: `DEPOSITADDR#${address}`,
    sk: `DEPOSIT#${stamp}#${JSON.stringify([chain, tx])}`
  })
} as const

// ---------------------------------------------------------------------------------------------
// attribute values: written by hand, read with schemas (amounts as decimal strings, never floats)

const DepositAddressAttr = Schema.Struct({
  M: Schema.Struct({
    address: StringAttr,
    memo: Schema.optionalKey(StringAttr),
    chain: StringAttr,
    token: StringAttr,
    decimals: IntAttr,
    amount: BigIntAttr
  })
})

/**
 * What a rental or subscription order buys, as a map whose `kind` says which: numbers as DynamoDB
 * numbers (integers come back as the same integers), a null renew_subscription_id as an absent key.
 */
const OrderDetailsAttr = Schema.Struct({
  M: Schema.Union([
    Schema.Struct({
      kind: literalAttr(["rental"]),
      cpu_cores: IntAttr,
      memory_gb: IntAttr,
      gpu: IntAttr,
      storage_gb: IntAttr,
      hours: IntAttr
    }),
    Schema.Struct({
      kind: literalAttr(["subscription"]),
      plan_id: StringAttr,
      period_days: IntAttr,
      renew_subscription_id: Schema.optionalKey(StringAttr)
    })
  ])
})

const toDetails = (attr: typeof OrderDetailsAttr.Type): OrderDetails => {
  const m = attr.M
  return m.kind === "rental"
    ? {
      kind: "rental",
      cpu_cores: m.cpu_cores,
      memory_gb: m.memory_gb,
      gpu: m.gpu,
      storage_gb: m.storage_gb,
      hours: m.hours
    }
    : {
      kind: "subscription",
      plan_id: m.plan_id,
      period_days: m.period_days,
      renew_subscription_id: m.renew_subscription_id ?? null
    }
}

const detailsAttr = (details: OrderDetails): AttributeValue => ({
  M: details.kind === "rental"
    ? {
      kind: str("rental"),
      cpu_cores: num(details.cpu_cores),
      memory_gb: num(details.memory_gb),
      gpu: num(details.gpu),
      storage_gb: num(details.storage_gb),
      hours: num(details.hours)
    }
    : {
      kind: str("subscription"),
      plan_id: str(details.plan_id),
      period_days: num(details.period_days),
      ...optionalStr("renew_subscription_id", details.renew_subscription_id)
    }
})

const OrderItem = Schema.Struct({
  id: StringAttr,
  account_id: StringAttr,
  type: literalAttr(OrderTypeValues),
  title: StringAttr,
  amount_cents: BigIntAttr,
  currency: StringAttr,
  credits: BigIntAttr,
  machine_id: Schema.optionalKey(StringAttr),
  package_id: Schema.optionalKey(StringAttr),
  gift: BoolAttr,
  /** Absent for credits and package orders, and on every order written before details existed. */
  details: Schema.optionalKey(OrderDetailsAttr),
  status: literalAttr(OrderStatusValues),
  payment_method: Schema.optionalKey(literalAttr(PaymentMethodValues)),
  card_session_id: Schema.optionalKey(StringAttr),
  checkout_url: Schema.optionalKey(StringAttr),
  deposit: Schema.optionalKey(DepositAddressAttr),
  created_at: TimestampAttr,
  expires_at: TimestampAttr,
  paid_at: Schema.optionalKey(TimestampAttr),
  paid_with: Schema.optionalKey(literalAttr(PaymentMethodValues)),
  /** Incremented by every write of the order after its insert. */
  version: IntAttr,
  /** Once paid without a receipt: the sort key of its item in the unfulfilled list. */
  unfulfilled_sk: Schema.optionalKey(StringAttr)
})

/** An order as read, with what conditional writes need. */
interface StoredOrder {
  readonly order: OrderRecord
  readonly version: number
  readonly unfulfilledSk: string | undefined
}

const toOrder = (item: typeof OrderItem.Type): StoredOrder => ({
  order: {
    id: item.id,
    account_id: item.account_id,
    type: item.type,
    title: item.title,
    amount_cents: item.amount_cents,
    currency: item.currency,
    credits: item.credits,
    machine_id: item.machine_id ?? null,
    package_id: item.package_id ?? null,
    gift: item.gift,
    details: item.details === undefined ? null : toDetails(item.details),
    status: item.status,
    payment_method: item.payment_method ?? null,
    card_session_id: item.card_session_id ?? null,
    checkout_url: item.checkout_url ?? null,
    deposit: item.deposit === undefined ? null : {
      address: item.deposit.M.address,
      memo: item.deposit.M.memo ?? null,
      chain: item.deposit.M.chain,
      token: item.deposit.M.token,
      decimals: item.deposit.M.decimals,
      amount: item.deposit.M.amount
    },
    created_at: item.created_at,
    expires_at: item.expires_at,
    paid_at: item.paid_at ?? null,
    paid_with: item.paid_with ?? null
  },
  version: item.version,
  unfulfilledSk: item.unfulfilled_sk
})

const depositAddressAttr = (deposit: NonNullable<OrderRecord["deposit"]>): AttributeValue => ({
  M: {
    address: str(deposit.address),
    ...optionalStr("memo", deposit.memo),
    chain: str(deposit.chain),
    token: str(deposit.token),
    decimals: num(deposit.decimals),
    amount: num(deposit.amount)
  }
})

const orderAttributes = (order: OrderRecord): Item => ({
  id: str(order.id),
  account_id: str(order.account_id),
  type: str(order.type),
  title: str(order.title),
  amount_cents: num(order.amount_cents),
  currency: str(order.currency),
  credits: num(order.credits),
  ...optionalStr("machine_id", order.machine_id),
  ...optionalStr("package_id", order.package_id),
  gift: bool(order.gift),
  ...(order.details === null ? {} : { details: detailsAttr(order.details) }),
  status: str(order.status),
  ...optionalStr("payment_method", order.payment_method),
  ...optionalStr("card_session_id", order.card_session_id),
  ...optionalStr("checkout_url", order.checkout_url),
  ...(order.deposit === null ? {} : { deposit: depositAddressAttr(order.deposit) }),
  created_at: str(order.created_at),
  expires_at: str(order.expires_at),
  ...optionalStr("paid_at", order.paid_at),
  ...optionalStr("paid_with", order.paid_with),
  version: num(0)
})

const TicketItem = Schema.Struct({
  code: StringAttr,
  order_id: StringAttr,
  account_id: StringAttr,
  credits: BigIntAttr,
  machine_id: Schema.optionalKey(StringAttr),
  created_at: TimestampAttr,
  redeemed_by: Schema.optionalKey(StringAttr),
  redeemed_at: Schema.optionalKey(TimestampAttr)
})

const toTicket = (item: typeof TicketItem.Type): TicketRecord => ({
  code: item.code,
  order_id: item.order_id,
  account_id: item.account_id,
  credits: item.credits,
  machine_id: item.machine_id ?? null,
  created_at: item.created_at,
  redeemed_by: item.redeemed_by ?? null,
  redeemed_at: item.redeemed_at ?? null
})

const ticketAttributes = (ticket: TicketRecord): Item => ({
  code: str(ticket.code),
  order_id: str(ticket.order_id),
  account_id: str(ticket.account_id),
  credits: num(ticket.credits),
  ...optionalStr("machine_id", ticket.machine_id),
  created_at: str(ticket.created_at),
  ...optionalStr("redeemed_by", ticket.redeemed_by),
  ...optionalStr("redeemed_at", ticket.redeemed_at)
})

const ReceiptItem = Schema.Struct({
  id: StringAttr,
  account_id: StringAttr,
  order_id: StringAttr,
  kind: literalAttr(OrderTypeValues),
  title: StringAttr,
  paid_at: TimestampAttr,
  amount_cents: BigIntAttr,
  currency: StringAttr,
  credits: BigIntAttr,
  paid_with: literalAttr(PaymentMethodValues),
  auto_reload: BoolAttr,
  // Absent on receipts written before the flag (docs/lambda-orders.md).
  counts_toward_tier: Schema.optionalKey(BoolAttr)
})

/** A receipt written before counts_toward_tier existed reads by the rule it was counted by (its kind). */
const toReceipt = ({ counts_toward_tier, ...item }: typeof ReceiptItem.Type): ReceiptRecord => ({
  ...item,
  counts_toward_tier: counts_toward_tier ?? countsTowardTier(item.kind)
})

const receiptAttributes = (receipt: ReceiptRecord): Item => ({
  id: str(receipt.id),
  account_id: str(receipt.account_id),
  order_id: str(receipt.order_id),
  kind: str(receipt.kind),
  title: str(receipt.title),
  paid_at: str(receipt.paid_at),
  amount_cents: num(receipt.amount_cents),
  currency: str(receipt.currency),
  credits: num(receipt.credits),
  paid_with: str(receipt.paid_with),
  auto_reload: bool(receipt.auto_reload),
  counts_toward_tier: bool(receipt.counts_toward_tier)
})

const DepositItem = Schema.Struct({
  tx: StringAttr,
  chain: StringAttr,
  token: StringAttr,
  address: StringAttr,
  amount: BigIntAttr,
  order_id: Schema.optionalKey(StringAttr),
  outcome: literalAttr(["counted", "late", "wrong_asset", "unmatched"]),
  at: TimestampAttr,
  recorded_at: TimestampAttr
})

const toDeposit = (item: typeof DepositItem.Type): DepositRecord => ({
  tx: item.tx,
  chain: item.chain,
  token: item.token,
  address: item.address,
  amount: item.amount,
  order_id: item.order_id ?? null,
  outcome: item.outcome,
  at: item.at,
  recorded_at: item.recorded_at
})

const depositAttributes = (deposit: DepositRecord): Item => ({
  tx: str(deposit.tx),
  chain: str(deposit.chain),
  token: str(deposit.token),
  address: str(deposit.address),
  amount: num(deposit.amount),
  ...optionalStr("order_id", deposit.order_id),
  outcome: str(deposit.outcome),
  at: str(deposit.at),
  recorded_at: str(deposit.recorded_at)
})

/** Index items that point at a record by one string attribute. */
const OrderPointer = Schema.Struct({ order_id: StringAttr })
const CodePointer = Schema.Struct({ code: StringAttr })
const PurchasedItem = Schema.Struct({ credits: BigIntAttr })

/** A lost optimistic race reads again; this many rounds without progress is a defect. */
const MAX_ATTEMPTS = 50

// ---------------------------------------------------------------------------------------------
// the store

export const OrderStoreDynamo: Layer.Layer<OrderStore, never, DynamoConfig> = Layer.effect(
  OrderStore,
  Effect.gen(function*() {
    const { client, tableName } = yield* DynamoConfig
    const { createItem, deleteItem, getItem, getItems, queryItems, transact } = makeItemTable(client, tableName, "OrderStore")
    const decodeOrder = decode(OrderItem)
    const decodeTicket = decode(TicketItem)
    const decodeReceipt = decode(ReceiptItem)
    const decodeDeposit = decode(DepositItem)
    const decodeOrderPointer = decode(OrderPointer)
    const decodeCodePointer = decode(CodePointer)
    const decodePurchased = decode(PurchasedItem)

    const die = (operation: string, problem: string) => Effect.die(new Error(`OrderStore.${operation}: ${problem}`))

    /** Orders the list items of one timestamp by insertion. */
    const writeStamp = makeWriteStamp()

    // --- items of a transaction


    // --- reads (all strongly consistent)




    /** An account's list items of one kind, newest first. */
    const accountList = (accountId: string, prefix: string, limit?: number) =>
      queryItems({
        KeyConditionExpression: "pk = :pk AND begins_with(sk, :prefix)",
        ExpressionAttributeValues: { ":pk": str(accountPk(accountId)), ":prefix": str(prefix) },
        ScanIndexForward: false
      }, limit)

    const readOrder = (orderId: string) =>
      Effect.flatMap(getItem(OrderKeys.order(orderId)), (item) =>
        item === undefined ? Effect.undefined : Effect.map(decodeOrder(item), toOrder))

    /** The order a pointer item (session, address) names. */
    const orderByPointer = (key: ItemKey) =>
      Effect.gen(function*() {
        const pointer = yield* getItem(key)
        if (pointer === undefined) return undefined
        return (yield* readOrder((yield* decodeOrderPointer(pointer)).order_id))?.order
      })

    /** Orders by id, in the ids' order. */
    const ordersById = Effect.fnUntraced(function*(ids: ReadonlyArray<string>) {
      const found: Array<OrderRecord> = []
      for (const item of yield* getItems(ids.map(OrderKeys.order))) found.push(toOrder(yield* decodeOrder(item)).order)
      return found
    })

    // ---- orders ----

    // The order, its entry in the buyer's list, and (when given) its session and address items,
    // all or nothing: any failed condition is a duplicate, a defect.
    const insertOrder = Effect.fn("OrderStore.insertOrder")(function*(order: OrderRecord) {
      const stamp = yield* writeStamp
      const pointer = { order_id: str(order.id) }
      const result = yield* transact("insertOrder", [
        createItem(OrderKeys.order(order.id), orderAttributes(order)),
        createItem(OrderKeys.accountOrder(order.account_id, order.created_at, stamp, order.id), pointer),
        ...(order.card_session_id === null ? [] : [createItem(OrderKeys.cardSession(order.card_session_id), pointer)]),
        ...(order.deposit === null ? [] : [createItem(OrderKeys.depositAddress(order.deposit.address), pointer)])
      ])
      if (result.committed) return
      if (result.failed.includes(0)) return yield* die("insertOrder", `duplicate order id ${order.id}`)
      return yield* die("insertOrder", `duplicate card session or deposit address for order ${order.id}`)
    })

    const getOrder = Effect.fn("OrderStore.getOrder")(function*(accountId: string, orderId: string) {
      const stored = yield* readOrder(orderId)
      return stored !== undefined && stored.order.account_id === accountId ? stored.order : undefined
    })

    const findOrder = (orderId: string) =>
      readOrder(orderId).pipe(Effect.map((stored) => stored?.order), Effect.withSpan("OrderStore.findOrder"))

    const listOrders = Effect.fn("OrderStore.listOrders")(function*(accountId: string, limit: number) {
      if (limit <= 0) return []
      const items = yield* accountList(accountId, ORDER_ACCOUNT_PREFIX.order, limit)
      const ids: Array<string> = []
      for (const item of items) ids.push((yield* decodeOrderPointer(item)).order_id)
      return yield* ordersById(ids)
    })

    const findByCardSession = (sessionId: string) =>
      orderByPointer(OrderKeys.cardSession(sessionId)).pipe(Effect.withSpan("OrderStore.findByCardSession"))

    const findByDepositAddress = (address: string) =>
      orderByPointer(OrderKeys.depositAddress(address)).pipe(Effect.withSpan("OrderStore.findByDepositAddress"))

    /**
     * Reads the order, decides from it, and writes conditioned on the version read (plus, for a
     * new session or address, the creation of its item): item 0 failing means the order changed
     * since it was read, and it is read again; item 1 alone failing means the session or address
     * belongs to another order, a defect.
     */
    const startPayment = Effect.fn("OrderStore.startPayment")(
      function*(orderId: string, start: PaymentStart, expiresAt: Timestamp, now: Timestamp) {
        for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
          const stored = yield* readOrder(orderId)
          if (stored === undefined) return undefined
          const { order, version } = stored
          if (order.status !== "pending" || !(order.expires_at > now)) return undefined
          let next: OrderRecord
          const set: Record<string, AttributeValue> = { payment_method: str(start.method), expires_at: str(expiresAt) }
          let unique: TransactWriteItem | undefined
          if (start.method === "card") {
            if (order.card_session_id === null) {
              next = {
                ...order,
                payment_method: "card",
                expires_at: expiresAt,
                card_session_id: start.session_id,
                checkout_url: start.checkout_url
              }
              set.card_session_id = str(start.session_id)
              set.checkout_url = str(start.checkout_url)
              unique = createItem(OrderKeys.cardSession(start.session_id), { order_id: str(order.id) })
            } else {
              next = { ...order, payment_method: "card", expires_at: expiresAt }
            }
          } else if (order.deposit !== null) {
            if (order.deposit.chain !== start.deposit.chain || order.deposit.token !== start.deposit.token) return undefined
            next = { ...order, payment_method: "stablecoin", expires_at: expiresAt }
          } else {
            next = { ...order, payment_method: "stablecoin", expires_at: expiresAt, deposit: { ...start.deposit } }
            set.deposit = depositAddressAttr(start.deposit)
            unique = createItem(OrderKeys.depositAddress(start.deposit.address), { order_id: str(order.id) })
          }
          const names = Object.keys(set)
          const update: TransactWriteItem = {
            Update: {
              TableName: tableName,
              Key: keyOf(OrderKeys.order(order.id)),
              UpdateExpression: `SET ${names.map((name, i) => `#f${i} = :f${i}`).join(", ")}, #version = :next`,
              ConditionExpression: "#version = :version AND #status = :pending AND #expires > :now",
              ExpressionAttributeNames: {
                ...Object.fromEntries(names.map((name, i) => [`#f${i}`, name])),
                "#version": "version",
                "#status": "status",
                "#expires": "expires_at"
              },
              ExpressionAttributeValues: {
                ...Object.fromEntries(names.map((name, i) => [`:f${i}`, set[name]!])),
                ":next": num(version + 1),
                ":version": num(version),
                ":pending": str("pending"),
                ":now": str(now)
              }
            }
          }
          const result = yield* transact("startPayment", unique === undefined ? [update] : [update, unique])
          if (result.committed) return next
          if (!result.failed.includes(0)) {
            return yield* die(
              "startPayment",
              start.method === "card"
                ? `card session ${start.session_id} belongs to another order`
                : `deposit address ${start.deposit.address} belongs to another order`
            )
          }
        }
        return yield* die("startPayment", `order ${orderId} kept changing`)
      }
    )

    // One conditional update decides (item 0); the same transaction lists the order as
    // unfulfilled (item 1) unless its receipt exists already (item 2), in which case it is paid
    // without the listing.
    const markPaid = Effect.fn("OrderStore.markPaid")(function*(orderId: string, paidWith: PaymentMethod, paidAt: Timestamp) {
      const stamp = yield* writeStamp
      const unfulfilledKey = OrderKeys.unfulfilled(paidAt, stamp, orderId)
      const update = (listed: boolean): TransactWriteItem => ({
        Update: {
          TableName: tableName,
          Key: keyOf(OrderKeys.order(orderId)),
          UpdateExpression: `SET #status = :paid, #paid_at = :at, #paid_with = :with, #version = #version + :one${
            listed ? ", #unfulfilled = :sk" : ""
          }`,
          ConditionExpression: "attribute_exists(pk) AND #status = :pending AND #expires > :at",
          ExpressionAttributeNames: {
            "#status": "status",
            "#paid_at": "paid_at",
            "#paid_with": "paid_with",
            "#version": "version",
            "#expires": "expires_at",
            ...(listed ? { "#unfulfilled": "unfulfilled_sk" } : {})
          },
          ExpressionAttributeValues: {
            ":paid": str("paid"),
            ":pending": str("pending"),
            ":at": str(paidAt),
            ":with": str(paidWith),
            ":one": num(1),
            ...(listed ? { ":sk": str(unfulfilledKey.sk) } : {})
          }
        }
      })
      const result = yield* transact("markPaid", [
        update(true),
        createItem(unfulfilledKey, { order_id: str(orderId) }),
        {
          ConditionCheck: {
            TableName: tableName,
            Key: keyOf(OrderKeys.receiptOrder(orderId)),
            ConditionExpression: "attribute_not_exists(pk)"
          }
        }
      ])
      if (result.committed) return true
      if (result.failed.includes(0)) return false
      if (result.failed.includes(1)) return yield* die("markPaid", `unfulfilled item of ${orderId} exists`)
      // Its receipt exists: paid, but nothing is left to fulfil.
      const again = yield* transact("markPaid", [update(false)])
      return again.committed
    })

    const unfulfilled = Effect.fn("OrderStore.unfulfilled")(function*(limit: number) {
      if (limit <= 0) return []
      const items = yield* queryItems({
        KeyConditionExpression: "pk = :pk",
        ExpressionAttributeValues: { ":pk": str(UNFULFILLED_PK) }
      }, limit)
      const ids: Array<string> = []
      for (const item of items) ids.push((yield* decodeOrderPointer(item)).order_id)
      return yield* ordersById(ids)
    })

    // ---- tickets ----

    const readTicket = (code: string) =>
      Effect.flatMap(getItem(OrderKeys.ticket(code)), (item) =>
        item === undefined ? Effect.undefined : Effect.map(decodeTicket(item), toTicket))

    const ticketForOrder = Effect.fn("OrderStore.ticketForOrder")(function*(orderId: string) {
      const pointer = yield* getItem(OrderKeys.ticketOrder(orderId))
      if (pointer === undefined) return undefined
      return yield* readTicket((yield* decodeCodePointer(pointer)).code)
    })

    // The order's ticket item (0), the ticket (1) and its entry in the buyer's list (2), all or
    // nothing: 0 failing means the order has its ticket (answered as it is); 1 a code clash.
    const issueTicket = Effect.fn("OrderStore.issueTicket")(function*(ticket: TicketRecord) {
      const stamp = yield* writeStamp
      const pointer = { code: str(ticket.code) }
      const result = yield* transact("issueTicket", [
        createItem(OrderKeys.ticketOrder(ticket.order_id), pointer),
        createItem(OrderKeys.ticket(ticket.code), ticketAttributes(ticket)),
        createItem(OrderKeys.accountTicket(ticket.account_id, ticket.created_at, stamp, ticket.code), pointer)
      ])
      if (result.committed) return { ...ticket }
      if (result.failed.includes(0)) {
        const existing = yield* ticketForOrder(ticket.order_id)
        return existing ?? (yield* die("issueTicket", `the ticket of order ${ticket.order_id} is missing`))
      }
      if (result.failed.includes(1)) return yield* die("issueTicket", "duplicate ticket code")
      return yield* die("issueTicket", "the buyer's list item exists")
    })

    const getTicket = (code: string) => readTicket(code).pipe(Effect.withSpan("OrderStore.getTicket"))

    const ticketsBoughtBy = Effect.fn("OrderStore.ticketsBoughtBy")(function*(accountId: string) {
      const items = yield* accountList(accountId, ORDER_ACCOUNT_PREFIX.ticket)
      const codes: Array<string> = []
      for (const item of items) codes.push((yield* decodeCodePointer(item)).code)
      const found: Array<TicketRecord> = []
      for (const item of yield* getItems(codes.map(OrderKeys.ticket))) found.push(toTicket(yield* decodeTicket(item)))
      return found
    })

    // One conditional update; when it fails the ticket is read as it is (redeemed for good, so the
    // winner's redeemer), or is unknown.
    const redeemTicket = Effect.fn("OrderStore.redeemTicket")(function*(code: string, accountId: string, at: Timestamp) {
      const updated = yield* call((signal) =>
        client.send(
          new UpdateItemCommand({
            TableName: tableName,
            Key: keyOf(OrderKeys.ticket(code)),
            UpdateExpression: "SET #by = :by, #at = :at",
            ConditionExpression: "attribute_exists(pk) AND attribute_not_exists(#by)",
            ExpressionAttributeNames: { "#by": "redeemed_by", "#at": "redeemed_at" },
            ExpressionAttributeValues: { ":by": str(accountId), ":at": str(at) },
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
      if (updated !== undefined) return { _tag: "Redeemed", ticket: toTicket(yield* decodeTicket(updated)) } satisfies RedeemOutcome
      const ticket = yield* readTicket(code)
      if (ticket === undefined) return { _tag: "NotFound" } satisfies RedeemOutcome
      return { _tag: "AlreadyRedeemed", ticket } satisfies RedeemOutcome
    })

    // ---- receipts ----

    // The order's receipt item (0), the receipt (1), its copy in the account's list (2), then the
    // order's unfulfilled listing: deleted when the order read has one, else a check that it still
    // has none (3: failing means it was paid meanwhile, and everything is read again), and the
    // purchased credits sum (receipts that count toward the tier).
    const insertReceipt = Effect.fn("OrderStore.insertReceipt")(function*(receipt: ReceiptRecord) {
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        const order = yield* readOrder(receipt.order_id)
        const listedSk = order?.unfulfilledSk
        const stamp = yield* writeStamp
        const attributes = receiptAttributes(receipt)
        const result = yield* transact("insertReceipt", [
          createItem(OrderKeys.receiptOrder(receipt.order_id), { receipt_id: str(receipt.id) }),
          createItem(OrderKeys.receipt(receipt.id), attributes),
          createItem(OrderKeys.accountReceipt(receipt.account_id, receipt.paid_at, stamp, receipt.id), attributes),
          listedSk === undefined
            ? {
              ConditionCheck: {
                TableName: tableName,
                Key: keyOf(OrderKeys.order(receipt.order_id)),
                ConditionExpression: "attribute_not_exists(#unfulfilled)",
                ExpressionAttributeNames: { "#unfulfilled": "unfulfilled_sk" }
              }
            }
            : deleteItem({ pk: UNFULFILLED_PK, sk: listedSk }),
          ...(receipt.counts_toward_tier
            ? [{
              Update: {
                TableName: tableName,
                Key: keyOf(OrderKeys.purchased(receipt.account_id)),
                UpdateExpression: "SET #account = :account ADD #credits :credits",
                ExpressionAttributeNames: { "#account": "account_id", "#credits": "credits" },
                ExpressionAttributeValues: { ":account": str(receipt.account_id), ":credits": num(receipt.credits) }
              }
            } satisfies TransactWriteItem]
            : [])
        ])
        if (result.committed) return "inserted" as const
        if (result.failed.includes(0)) return "exists" as const
        if (result.failed.includes(1)) return yield* die("insertReceipt", `duplicate receipt id ${receipt.id}`)
        if (result.failed.includes(2)) return yield* die("insertReceipt", `list item of receipt ${receipt.id} exists`)
      }
      return yield* die("insertReceipt", `order ${receipt.order_id} kept changing`)
    })

    const listReceipts = Effect.fn("OrderStore.listReceipts")(function*(accountId: string) {
      const found: Array<ReceiptRecord> = []
      for (const item of yield* accountList(accountId, ORDER_ACCOUNT_PREFIX.receipt)) {
        found.push(toReceipt(yield* decodeReceipt(item)))
      }
      return found
    })

    const getReceipt = Effect.fn("OrderStore.getReceipt")(function*(accountId: string, receiptId: string) {
      const item = yield* getItem(OrderKeys.receipt(receiptId))
      if (item === undefined) return undefined
      const receipt = toReceipt(yield* decodeReceipt(item))
      return receipt.account_id === accountId ? receipt : undefined
    })

    const purchasedCredits = Effect.fn("OrderStore.purchasedCredits")(function*(accountId: string) {
      const item = yield* getItem(OrderKeys.purchased(accountId))
      return item === undefined ? 0n : (yield* decodePurchased(item)).credits
    })

    // ---- stablecoin deposits ----

    // The transfer (0) and its copy in the address's list (1): 0 failing means (chain, tx) was
    // recorded, "duplicate".
    const recordDeposit = Effect.fn("OrderStore.recordDeposit")(function*(deposit: DepositRecord) {
      if (deposit.amount <= 0n) return yield* die("recordDeposit", "amount must be positive")
      const stamp = yield* writeStamp
      const attributes = depositAttributes(deposit)
      const result = yield* transact("recordDeposit", [
        createItem(OrderKeys.deposit(deposit.chain, deposit.tx), attributes),
        createItem(OrderKeys.addressDeposit(deposit.address, stamp, deposit.chain, deposit.tx), attributes)
      ])
      if (result.committed) return "recorded" as const
      if (result.failed.includes(0)) return "duplicate" as const
      return yield* die("recordDeposit", `list item of ${deposit.chain} ${deposit.tx} exists`)
    })

    const getDeposit = Effect.fn("OrderStore.getDeposit")(function*(chain: string, tx: string) {
      const item = yield* getItem(OrderKeys.deposit(chain, tx))
      return item === undefined ? undefined : toDeposit(yield* decodeDeposit(item))
    })

    const depositsTo = Effect.fn("OrderStore.depositsTo")(function*(address: string) {
      const items = yield* queryItems({
        KeyConditionExpression: "pk = :pk AND begins_with(sk, :prefix)",
        ExpressionAttributeValues: { ":pk": str(`DEPOSITADDR#${address}`), ":prefix": str("DEPOSIT#") }
      })
      const found: Array<DepositRecord> = []
      for (const item of items) found.push(toDeposit(yield* decodeDeposit(item)))
      return found
    })

    return OrderStore.of({
      insertOrder,
      getOrder,
      findOrder,
      listOrders,
      findByCardSession,
      findByDepositAddress,
      startPayment,
      markPaid,
      unfulfilled,
      issueTicket,
      getTicket,
      ticketForOrder,
      ticketsBoughtBy,
      redeemTicket,
      insertReceipt,
      listReceipts,
      getReceipt,
      purchasedCredits,
      recordDeposit,
      getDeposit,
      depositsTo
    })
  })
)
