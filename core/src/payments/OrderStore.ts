/**
 * Port: where orders, gift tickets, receipts and stablecoin deposits are kept (docs/payments.md).
 * The rules (pricing, when an order is paid, what paying grants) live in core/src/payments/OrderService.ts;
 * a store applies what it is given, but the operations marked ATOMIC are conditional writes that
 * hold between processes too, because they are what makes money move exactly once:
 *
 * - `markPaid` moves an order pending -> paid once (the caller that gets `true` fulfils it);
 * - `redeemTicket` marks a ticket redeemed once (the caller that gets "Redeemed" grants it);
 * - `issueTicket`, `insertReceipt` and `recordDeposit` are unique per order / per transfer, so
 *   replaying a fulfilment or a transfer writes nothing new.
 *
 * Amounts are bigints: USD in cents, credits in micro-credits, deposits in the token's base units.
 * Duplicate ids and other broken input are defects, as violated constraints are in SQL.
 */
import { Context, type Effect } from "effect"
import type { OrderStatus, OrderType } from "./Orders.ts"
import type { OrderDetails } from "../plans/PlanStore.ts"
import type { PaymentMethod } from "../catalogue/CatalogueConfig.ts"
import type { Timestamp } from "../kernel/Time.ts"
import type { AccountId, OrderId } from "../kernel/Ids.ts"

/** The deposit address opened for one order: where to send, what, and how much. */
export interface DepositAddress {
  /** Unique among all orders. */
  readonly address: string
  readonly memo: string | null
  readonly chain: string
  readonly token: string
  /** The token's decimals (USDC: 6). */
  readonly decimals: number
  /** The exact amount due, in the token's base units (25 USDC = 25_000_000n). */
  readonly amount: bigint
}

export interface OrderRecord {
  readonly id: OrderId
  /** The buyer. */
  readonly account_id: AccountId
  readonly type: OrderType
  readonly title: string
  readonly amount_cents: bigint
  readonly currency: string
  /** What paying grants, in micro-credits (to the buyer, or on a ticket for a gift). */
  readonly credits: bigint
  /** null: the credits are usable anywhere; else pinned to this machine. */
  readonly machine_id: string | null
  readonly package_id: string | null
  /** A gift issues a redeemable ticket instead of crediting the buyer. */
  readonly gift: boolean
  /** What a rental or subscription order buys (null for credits and packages); kept as given. */
  readonly details: OrderDetails | null
  /**
   * As stored: `pending` or `paid` (the store never writes `expired`: an order is expired when it
   * is pending and `expires_at` has passed, which the service derives at read time).
   */
  readonly status: OrderStatus
  /** The payment last started with POST /orders/{id}/pay, null before. */
  readonly payment_method: PaymentMethod | null
  /** The card checkout session (one per order, kept once opened) and its address for a person. */
  readonly card_session_id: string | null
  readonly checkout_url: string | null
  /** The stablecoin deposit address (one per order, kept once opened). */
  readonly deposit: DepositAddress | null
  readonly created_at: Timestamp
  /** End of the payment window: a pending order cannot be paid from this instant on. */
  readonly expires_at: Timestamp
  readonly paid_at: Timestamp | null
  readonly paid_with: PaymentMethod | null
}

/** What POST /orders/{id}/pay starts: a card checkout session, or a deposit address. */
export type PaymentStart =
  | { readonly method: "card"; readonly session_id: string; readonly checkout_url: string }
  | { readonly method: "stablecoin"; readonly deposit: DepositAddress }

/** A gift ticket: a bearer code worth `credits`, redeemable once by any account. */
export interface TicketRecord {
  /** Normalised (payments/OrderRules.ts normalizeTicketCode): 4 upper-case groups of 5 joined by dashes. Unique. */
  readonly code: string
  /** The order that paid for it; at most one ticket per order. */
  readonly order_id: OrderId
  /** The buyer. */
  readonly account_id: AccountId
  readonly credits: bigint
  readonly machine_id: string | null
  readonly created_at: Timestamp
  readonly redeemed_by: string | null
  readonly redeemed_at: Timestamp | null
}

export type RedeemOutcome =
  | { readonly _tag: "Redeemed"; readonly ticket: TicketRecord }
  | { readonly _tag: "AlreadyRedeemed"; readonly ticket: TicketRecord }
  | { readonly _tag: "NotFound" }

/** One per paid order. */
export interface ReceiptRecord {
  readonly id: string
  readonly account_id: AccountId
  /** Unique: a second receipt for an order is never written. */
  readonly order_id: OrderId
  readonly kind: OrderType
  readonly title: string
  readonly paid_at: Timestamp
  readonly amount_cents: bigint
  readonly currency: string
  readonly credits: bigint
  readonly paid_with: PaymentMethod
  readonly auto_reload: boolean
  /** Its credits are purchased credits, for the usage tier: set by core (OrderRules.ts countsTowardTier), summed by the store. */
  readonly counts_toward_tier: boolean
}

/**
 * How a transfer was classified when it arrived:
 * - counted: to an order's address, in its chain and token, while the order was payable;
 * - late: to an order's address in its asset, after the order was paid or its window closed;
 * - wrong_asset: to an order's address, but on another chain or in another token;
 * - unmatched: to an address that belongs to no order.
 * Only counted deposits can pay an order; everything else is owed back (docs/payments.md).
 */
export type DepositOutcome = "counted" | "late" | "wrong_asset" | "unmatched"

/** A transfer seen on a stablecoin rail, as recorded. */
export interface DepositRecord {
  /** The transaction, unique per chain. */
  readonly tx: string
  readonly chain: string
  readonly token: string
  /** The address it was sent to. */
  readonly address: string
  /** Token base units (e.g. USDC: 6 decimals), positive. */
  readonly amount: bigint
  /** The order owning the address, null when none does. */
  readonly order_id: OrderId | null
  readonly outcome: DepositOutcome
  /** When it happened on the chain. */
  readonly at: Timestamp
  /** When the platform recorded it. */
  readonly recorded_at: Timestamp
}

export class OrderStore extends Context.Service<OrderStore, {
  // ---- orders ----
  /** Inserts a new order; a duplicate id is a defect. */
  readonly insertOrder: (order: OrderRecord) => Effect.Effect<void>
  /** The account's order, or undefined (unknown, or another account's). */
  readonly getOrder: (accountId: AccountId, orderId: OrderId) => Effect.Effect<OrderRecord | undefined>
  /** Any account's order by id (for payment callbacks). */
  readonly findOrder: (orderId: OrderId) => Effect.Effect<OrderRecord | undefined>
  /** The account's orders, newest first (equal created_at: last inserted first), at most `limit`. */
  readonly listOrders: (accountId: AccountId, limit: number) => Effect.Effect<ReadonlyArray<OrderRecord>>
  readonly findByCardSession: (sessionId: string) => Effect.Effect<OrderRecord | undefined>
  readonly findByDepositAddress: (address: string) => Effect.Effect<OrderRecord | undefined>
  /**
   * ATOMIC, conditional: only while the order is pending with expires_at > now, and (for a
   * stablecoin start) it has no deposit address yet or one in the same chain and token. Sets
   * payment_method and expires_at; a card start sets the session only when the order has none (so
   * concurrent starts agree on one session), a stablecoin start sets the deposit only when the order
   * has none. Returns the order as it is afterwards, or undefined when the condition failed (nothing
   * changed). A deposit address used by another order is a defect.
   */
  readonly startPayment: (
    orderId: OrderId,
    start: PaymentStart,
    expiresAt: Timestamp,
    now: Timestamp
  ) => Effect.Effect<OrderRecord | undefined>
  /**
   * ATOMIC, conditional: pending -> paid (paid_at, paid_with) only when the order is pending and
   * expires_at > paidAt. true for the one call that did it; false for every other (already paid,
   * expired, unknown), and nothing changed. Of concurrent calls exactly one answers true.
   */
  readonly markPaid: (orderId: OrderId, paidWith: PaymentMethod, paidAt: Timestamp) => Effect.Effect<boolean>
  /** Paid orders with no receipt yet (fulfilment interrupted), oldest paid first, at most `limit`. */
  readonly unfulfilled: (limit: number) => Effect.Effect<ReadonlyArray<OrderRecord>>

  // ---- tickets ----
  /**
   * ATOMIC: stores the ticket unless its order has one; returns the order's ticket (the given one
   * when new, else the existing one, unchanged). A code already used by another order is a defect.
   */
  readonly issueTicket: (ticket: TicketRecord) => Effect.Effect<TicketRecord>
  readonly getTicket: (code: string) => Effect.Effect<TicketRecord | undefined>
  readonly ticketForOrder: (orderId: OrderId) => Effect.Effect<TicketRecord | undefined>
  /** Tickets the account bought, newest first. */
  readonly ticketsBoughtBy: (accountId: AccountId) => Effect.Effect<ReadonlyArray<TicketRecord>>
  /**
   * ATOMIC, conditional: sets redeemed_by and redeemed_at only when the ticket is unredeemed.
   * Of concurrent calls exactly one is "Redeemed"; the others see "AlreadyRedeemed" with the
   * winner's redeemer.
   */
  readonly redeemTicket: (code: string, accountId: AccountId, at: Timestamp) => Effect.Effect<RedeemOutcome>

  // ---- receipts ----
  /** ATOMIC: stores the receipt unless its order has one ("exists": nothing changed). */
  readonly insertReceipt: (receipt: ReceiptRecord) => Effect.Effect<"inserted" | "exists">
  /** The account's receipts, newest paid first. */
  readonly listReceipts: (accountId: AccountId) => Effect.Effect<ReadonlyArray<ReceiptRecord>>
  readonly getReceipt: (accountId: AccountId, receiptId: string) => Effect.Effect<ReceiptRecord | undefined>
  /** Credits bought in total (micro-credits): the sum of the credits of the account's receipts that count toward the tier. */
  readonly purchasedCredits: (accountId: AccountId) => Effect.Effect<bigint>

  // ---- stablecoin deposits ----
  /** ATOMIC: records a transfer unless (chain, tx) was recorded ("duplicate": nothing changed). */
  readonly recordDeposit: (deposit: DepositRecord) => Effect.Effect<"recorded" | "duplicate">
  /** The transfer recorded for (chain, tx), if any. */
  readonly getDeposit: (chain: string, tx: string) => Effect.Effect<DepositRecord | undefined>
  /** Every transfer recorded to an address, in the order recorded. */
  readonly depositsTo: (address: string) => Effect.Effect<ReadonlyArray<DepositRecord>>
}>()("@model-platform/core/payments/OrderStore") {}
