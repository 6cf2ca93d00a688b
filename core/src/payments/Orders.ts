/**
 * Orders: the order resource, the order body shared by POST /quotes and POST /orders (one of four
 * kinds, discriminated by `type`), the quote that prices a body without creating an order, and the
 * body of POST /orders/{id}/pay. JSON shapes only; pricing and payment live elsewhere.
 */
import { Schema } from "effect"
import { Ticket } from "../ledger/Credits.ts"
import { CreditAmount } from "../kernel/Money.ts"
import { Timestamp } from "../kernel/Time.ts"
import { Id, IntAtLeast } from "../kernel/Fields.ts"
import { RentalOrderBody, SubscriptionOrderBody } from "../plans/Schemas.ts"
import { PaymentMethod } from "../catalogue/CatalogueConfig.ts"
import type { OrderId } from "../kernel/Ids.ts"

export const OrderTypeValues = ["credits", "package", "rental", "subscription"] as const
export const OrderType = Schema.Literals(OrderTypeValues)
export type OrderType = typeof OrderType.Type

/**
 * pending and paid are the spec's; cancelled (withdrawn before payment) and expired (its payment
 * window closed unpaid) are ours (docs/resources.md). paid is final.
 */
export const OrderStatusValues = ["pending", "paid", "cancelled", "expired"] as const
export const OrderStatus = Schema.Literals(OrderStatusValues)
export type OrderStatus = typeof OrderStatus.Type

/** Where and how much to send for a stablecoin payment. amount is an exact decimal string. */
export const Deposit = Schema.Struct({
  chain: Schema.String,
  token: Schema.String,
  amount: Schema.String,
  address: Schema.String,
  memo: Schema.NullOr(Schema.String)
})
export type Deposit = typeof Deposit.Type

/** {method: null} before a payment is started; {method: card} after a card checkout was opened. */
export const OrderPayment = Schema.Union([
  Schema.Struct({ method: Schema.Null }),
  Schema.Struct({ method: Schema.Literal("card") }),
  Schema.Struct({ method: Schema.Literal("stablecoin"), deposit: Deposit })
])
export type OrderPayment = typeof OrderPayment.Type

export const Order = Schema.Struct({
  id: Schema.String,
  type: OrderType,
  title: Schema.String,
  amount_usd: Schema.Number,
  currency: Schema.String,
  status: OrderStatus,
  machine_id: Schema.NullOr(Schema.String),
  payment: OrderPayment,
  pay_url: Schema.String,
  created_at: Timestamp,
  paid_at: Schema.NullOr(Timestamp),
  /** Only on GET /orders/{id}: the ticket of a paid credit order, else null. */
  ticket: Schema.optionalKey(Schema.NullOr(Ticket))
})
export type Order = typeof Order.Type

export const OrderList = Schema.Struct({ data: Schema.Array(Order) })
export type OrderList = typeof OrderList.Type

// ---- Order body (POST /quotes and POST /orders) -------------------------------------------

export const MIN_CREDIT_ORDER_USD = 5
export const MAX_CREDIT_ORDER_USD = 5000

/** Whole US dollars, 5 to 5000: the amount of a credit order (and of an automatic top-up). */
export const CreditOrderUsd = Schema.Int.check(
  Schema.isBetween({ minimum: MIN_CREDIT_ORDER_USD, maximum: MAX_CREDIT_ORDER_USD }, {
    expected: `whole US dollars from ${MIN_CREDIT_ORDER_USD} to ${MAX_CREDIT_ORDER_USD}`
  })
)

export const CreditsOrderBody = Schema.Struct({
  type: Schema.Literal("credits"),
  amount_usd: CreditOrderUsd,
  /** Pins the credit to one machine; absent or null: usable anywhere. */
  machine_id: Schema.optionalKey(Schema.NullOr(Id)),
  /** Issue a redeemable ticket code instead of crediting this account. */
  gift: Schema.optionalKey(Schema.Boolean)
})
export type CreditsOrderBody = typeof CreditsOrderBody.Type

export const PackageOrderBody = Schema.Struct({
  type: Schema.Literal("package"),
  package_id: Id,
  gift: Schema.optionalKey(Schema.Boolean)
})
export type PackageOrderBody = typeof PackageOrderBody.Type


/** Body of POST /orders and POST /quotes: one of four, by `type`. */
export const CreateOrder = Schema.Union([CreditsOrderBody, PackageOrderBody, RentalOrderBody, SubscriptionOrderBody])
  .annotate({ expected: "an order body whose type is credits, package, rental or subscription" })
  .pipe(Schema.toTaggedUnion("type"))
export type CreateOrder = typeof CreateOrder.Type

// ---- Quote (POST /quotes) -----------------------------------------------------------------

/**
 * What an order body would cost (amount_usd, the fiat price) and grant (details.credits). details
 * always has credits and machine_id, then the fields that define the purchase, by type.
 */
export const CreditsQuote = Schema.Struct({
  type: Schema.Literal("credits"),
  amount_usd: Schema.Number,
  currency: Schema.String,
  details: Schema.Struct({ credits: CreditAmount, machine_id: Schema.NullOr(Schema.String), gift: Schema.Boolean })
})

export const PackageQuote = Schema.Struct({
  type: Schema.Literal("package"),
  amount_usd: Schema.Number,
  currency: Schema.String,
  details: Schema.Struct({
    credits: CreditAmount,
    machine_id: Schema.NullOr(Schema.String),
    package_id: Schema.String,
    gift: Schema.Boolean
  })
})

export const RentalQuote = Schema.Struct({
  type: Schema.Literal("rental"),
  amount_usd: Schema.Number,
  currency: Schema.String,
  details: Schema.Struct({
    credits: CreditAmount,
    machine_id: Schema.String,
    cpu_cores: Schema.Int,
    memory_gb: Schema.Int,
    gpu: Schema.Int,
    storage_gb: Schema.Int,
    hours: Schema.Int
  })
})

export const SubscriptionQuote = Schema.Struct({
  type: Schema.Literal("subscription"),
  amount_usd: Schema.Number,
  currency: Schema.String,
  details: Schema.Struct({
    credits: CreditAmount,
    machine_id: Schema.String,
    plan_id: Schema.String,
    period_days: Schema.Int,
    renew_subscription_id: Schema.NullOr(Schema.String)
  })
})

export const Quote = Schema.Union([CreditsQuote, PackageQuote, RentalQuote, SubscriptionQuote])
  .pipe(Schema.toTaggedUnion("type"))
export type Quote = typeof Quote.Type

// ---- Pay (POST /orders/{id}/pay) ----------------------------------------------------------

/** chain and token choose among the stablecoin options of GET /payment-methods. */
export const PayOrder = Schema.Struct({
  method: PaymentMethod,
  chain: Schema.optionalKey(Id),
  token: Schema.optionalKey(Id)
}).check(
  Schema.makeFilter((body) =>
    body.method === "stablecoin"
      ? undefined
      : [
        ...(body.chain === undefined ? [] : [{ path: ["chain"], issue: "chain is for stablecoin payments only" }]),
        ...(body.token === undefined ? [] : [{ path: ["token"], issue: "token is for stablecoin payments only" }])
      ]
  )
)
export type PayOrder = typeof PayOrder.Type

// ---- Receipts (GET /billing/receipts) -----------------------------------------------------

/** A receipt's kind is the type of the order it pays; auto_reload marks automatic top-ups. */
export const Receipt = Schema.Struct({
  id: Schema.String,
  kind: Schema.Literals(["credits", "package", "rental", "subscription"]),
  title: Schema.String,
  status: Schema.Literal("paid"),
  paid_at: Timestamp,
  amount: Schema.Struct({ value: Schema.Number, currency: Schema.String, text: Schema.String }),
  credits: CreditAmount,
  paid_with: PaymentMethod,
  auto_reload: Schema.Boolean
})
export type Receipt = typeof Receipt.Type

export const ReceiptList = Schema.Struct({ data: Schema.Array(Receipt) })
export type ReceiptList = typeof ReceiptList.Type

/** What the page shows about a checkout session (Orders.checkout). */
export interface CheckoutInfo {
  readonly session_id: string
  readonly order_id: OrderId
  readonly title: string
  /** e.g. "$25.00" */
  readonly amount_text: string
  /** open: can be paid; paid: done; expired: the payment window closed unpaid. */
  readonly status: "open" | "paid" | "expired"
  readonly paid_at: string | null
}
