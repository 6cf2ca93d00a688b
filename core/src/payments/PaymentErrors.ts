/**
 * The refusals of the payments area (docs/architecture.md "Errors"): one tagged error per service,
 * its `reason` naming each refusal a caller can tell apart. A reason is the spec's error code where
 * the spec has one; http/Refusals.ts maps every reason to its status and code.
 */
import { Schema } from "effect"
import { refusalFields, type RefusalOf } from "../kernel/Refusal.ts"

export const OrderErrorReasons = [
  /** No order of the caller's account has this id (or it has no deposit address, for `deposits`). */
  "order_not_found",
  /** The order is paid already. */
  "order_already_paid",
  /** The order's payment window closed: create a new order. */
  "order_expired",
  /** The order changed while its payment started (a concurrent pay): try again. */
  "payment_conflict",
  /** Part of the order was paid by a stablecoin deposit: pay the rest there, not by card. */
  "deposit_in_progress",
  /** The order awaits a deposit in another chain or token. */
  "deposit_already_opened",
  /** No checkout session has this id. */
  "checkout_not_found",
  /** No receipt of the caller's account has this id. */
  "receipt_not_found",
  /** The ordered machine is not in the catalogue. */
  "machine_not_found",
  /** The ordered package is not in the catalogue. */
  "package_not_found",
  /** A credit order, but the catalogue sets no credit price. */
  "credit_price_unset",
  /** A card payment, but card payments are not set up. */
  "card_payments_off",
  /** A stablecoin payment, but stablecoin payments are not set up. */
  "stablecoin_payments_off",
  /** A stablecoin payment without its chain and token, or with a pair not accepted. */
  "stablecoin_option_invalid",
  /** GET /orders: limit out of its range. */
  "invalid_limit",
  /** A transfer reported by a rail that cannot be recorded (bad time, asset or amount). */
  "invalid_transfer"
] as const
export type OrderErrorReason = (typeof OrderErrorReasons)[number]

/** A refusal of `Orders` (payments/OrderService.ts). */
export class OrderError extends Schema.TaggedError<OrderError>()("OrderError", refusalFields(OrderErrorReasons)) {
  static readonly reasons = OrderErrorReasons
}

/** An OrderError of the given reasons: a service's signature says which refusals each call can give. */
export type OrderErrorOf<R extends OrderErrorReason> = RefusalOf<OrderError, R>

export const orderError = <R extends OrderErrorReason>(reason: R, message: string): OrderErrorOf<R> =>
  new OrderError({ reason, message }) as OrderErrorOf<R>

export const TicketErrorReasons = [
  /** No ticket has this code (or the code is malformed). */
  "ticket_not_found",
  /** The ticket was redeemed before (by this account or another). */
  "ticket_already_redeemed"
] as const
export type TicketErrorReason = (typeof TicketErrorReasons)[number]

/** A refusal of `Tickets` (payments/OrderService.ts). */
export class TicketError extends Schema.TaggedError<TicketError>()("TicketError", refusalFields(TicketErrorReasons)) {
  static readonly reasons = TicketErrorReasons
}

export type TicketErrorOf<R extends TicketErrorReason> = RefusalOf<TicketError, R>

export const ticketError = <R extends TicketErrorReason>(reason: R, message: string): TicketErrorOf<R> =>
  new TicketError({ reason, message }) as TicketErrorOf<R>
