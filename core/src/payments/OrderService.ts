/**
 * Use-cases: orders, payments and gift tickets (docs/payments.md).
 *
 * `Orders` prices order bodies (quote), creates pending orders, starts payments (a card checkout
 * session or a stablecoin deposit address), and applies what the rails report: a card checkout
 * approved or declined (`completeCardPayment`), a transfer seen on a chain (`recordDeposit`).
 * Gift tickets are redeemed by `Tickets` (Tickets.ts); transfers are recorded by
 * StablecoinDeposits.ts.
 *
 * Money moves exactly once, by construction:
 * - an order is paid by ONE conditional write (OrderStore.markPaid: pending -> paid while its
 *   payment window is open); whoever wins or loses, the order is then *fulfilled*, and
 *   fulfilment is idempotent: the credits are posted with ref = order id (Ledger.credit ignores a
 *   ref it has), the gift ticket is unique per order, the receipt unique per order. So replaying a
 *   completion or a transfer any number of times changes nothing, and an interrupted fulfilment is
 *   completed by the next replay (or by `healPaid`, which finds paid orders without a receipt);
 * - a ticket is redeemed by ONE conditional write (OrderStore.redeemTicket) and granted with
 *   ref = "ticket:<code>" in the redeemer's ledger; a redeemer retrying gets 409 but an
 *   interrupted grant is completed.
 * Amounts are bigints throughout: USD cents, micro-credits, token base units.
 */
import { Clock, Context, Effect, Layer } from "effect"
import type { Caller } from "../keys/Caller.ts"
import type { Receipt, ReceiptList } from "./Orders.ts"
import type { Charging } from "../catalogue/Charging.ts"
import { Catalogue } from "../catalogue/Catalogue.ts"
import { chargingGate } from "../catalogue/Charging.ts"
import { type AccountId, generateId, type OrderId } from "../kernel/Ids.ts"
import type { KeyErrorOf } from "../keys/KeyErrors.ts"
import { requireWithin } from "../keys/KeyScope.ts"
import { Ledger } from "../ledger/Ledger.ts"
import type { CheckoutInfo, CreateOrder, Order, OrderList, PayOrder, Quote } from "./Orders.ts"
import { PublicAddress } from "../kernel/RequestBaseUrl.ts"
import { RequestBaseUrl } from "../kernel/RequestBaseUrl.ts"
import { makePlans } from "../plans/Plans.ts"
import { type CardDetails, CardProcessor, type CheckoutRequest } from "./CardProcessor.ts"
import { type DepositAddress, type OrderRecord, OrderStore } from "./OrderStore.ts"
import { LedgerStore } from "../ledger/LedgerStore.ts"
import { PlanStore } from "../plans/PlanStore.ts"
import type { PlanErrorOf } from "../plans/PlanErrors.ts"
import { machineOfScope } from "../plans/ScopeTargetsFromPlans.ts"
import { StablecoinRail, type Transfer } from "./StablecoinRail.ts"
import * as Time from "../kernel/Time.ts"
import {
  checkoutInfoOf,
  CURRENCY,
  type DepositSummary,
  formatUsd,
  ORDERS_DEFAULT_LIMIT,
  ORDERS_MAX_LIMIT,
  payableAt,
  PAYMENT_WINDOW_MS,
  statusAt,
  toOrder,
  toReceipt,
  toTicket,
  usdToBaseUnits
} from "./OrderRules.ts"
import { makeFulfilment } from "./Fulfilment.ts"
import { type DepositResult, makeStablecoinDeposits } from "./StablecoinDeposits.ts"
import { makePricing } from "./OrderPricing.ts"
import { orderError, type OrderErrorOf } from "./PaymentErrors.ts"
import { netPurchasedCredits } from "./Reversals.ts"

// ---------------------------------------------------------------------------------------------
// results

export type CardPaymentResult =
  | { readonly _tag: "Paid"; readonly order: Order; readonly checkout: CheckoutInfo }
  | {
    readonly _tag: "Declined"
    /** A DeclineReason of the processor, or checkout_expired when the window closed. */
    readonly reason: string
    readonly message: string
    readonly checkout: CheckoutInfo
  }

// ---------------------------------------------------------------------------------------------
// the services

/** Why an order body cannot be priced. */
type Pricing = "credit_price_unset" | "machine_not_found" | "package_not_found"
/** Why a machine's offer refuses a rental or plan body (plans/Offers.ts). */
type OfferRefusal = "rental_not_offered" | "rental_out_of_range" | "plan_not_offered" | "price_inexact"
/** Why an order cannot start a payment. */
type PayRefusal =
  | "order_not_found"
  | "order_already_paid"
  | "order_expired"
  | "payment_conflict"
  | "deposit_in_progress"
  | "deposit_already_opened"
  | "card_payments_off"
  | "stablecoin_payments_off"
  | "stablecoin_option_invalid"

export class Orders extends Context.Service<Orders, {
  /** POST /quotes: what a body would cost and grant, without creating anything. */
  readonly quote: (body: CreateOrder) => Effect.Effect<Quote, OrderErrorOf<Pricing> | PlanErrorOf<OfferRefusal>>
  /** POST /orders: a pending order; nothing is charged until it is paid. */
  readonly create: (caller: Caller, body: CreateOrder) => Effect.Effect<
    Order,
    OrderErrorOf<Pricing> | PlanErrorOf<OfferRefusal | "subscription_not_found" | "renewal_not_stablecoin" | "renewal_mismatch"> | KeyErrorOf<"key_scope_too_narrow">
  >
  /** GET /orders: newest first; limit 1 to 200, default 50, else 400 invalid_request. */
  readonly list: (caller: Caller, limit?: number | undefined) => Effect.Effect<OrderList, OrderErrorOf<"invalid_limit">>
  /** GET /orders/{id}, with `ticket` (the gift ticket of a paid gift order, else null). */
  readonly get: (caller: Caller, orderId: OrderId) => Effect.Effect<Order, OrderErrorOf<"order_not_found">>
  /**
   * POST /orders/{id}/pay: opens a card checkout (pay_url) or a deposit address (payment.deposit).
   * `keepCard`: a purchase on the billing page keeps the card it is paid with for automatic
   * top-ups (a processor with its own page: CardCheckouts.ts); plans always keep theirs.
   */
  readonly pay: (
    caller: Caller,
    orderId: OrderId,
    body: PayOrder,
    options?: { readonly keepCard?: boolean }
  ) => Effect.Effect<Order, OrderErrorOf<PayRefusal> | KeyErrorOf<"key_scope_too_narrow">>
  /** What the checkout page of a session shows (404 checkout_not_found). */
  readonly checkout: (sessionId: string) => Effect.Effect<CheckoutInfo, OrderErrorOf<"checkout_not_found">>
  /**
   * The checkout page was submitted: charge the card through the processor; approved -> the order
   * is paid once and fulfilled. A completion of an already paid order charges nothing and answers
   * Paid (and completes an interrupted fulfilment).
   */
  readonly completeCardPayment: (
    sessionId: string,
    card: CardDetails
  ) => Effect.Effect<CardPaymentResult, OrderErrorOf<"checkout_not_found">>
  /** A transfer seen on a stablecoin rail (at least once; replays change nothing). */
  readonly recordDeposit: (transfer: Transfer) => Effect.Effect<DepositResult, OrderErrorOf<"invalid_transfer">>
  /** The deposit accounting of an order (operators, support; 404 when it has no deposit address). */
  readonly deposits: (orderId: OrderId) => Effect.Effect<DepositSummary, OrderErrorOf<"order_not_found">>
  /** GET /billing/receipts: newest first. */
  readonly receipts: (caller: Caller) => Effect.Effect<ReceiptList>
  /** GET /billing/receipts/{id}. */
  readonly receipt: (caller: Caller, receiptId: string) => Effect.Effect<Receipt, OrderErrorOf<"receipt_not_found">>
  /** Credits bought in total by an account (micro-credits), for its usage tier: less what refunds and disputes took back (Reversals.ts). */
  readonly purchasedCredits: (accountId: AccountId) => Effect.Effect<bigint>
  /** The charging gate now (Billing summary's `charging`). */
  readonly charging: Effect.Effect<Charging>
  /** Completes the fulfilment of paid orders that have no receipt yet (after a crash); returns how many. */
  readonly healPaid: Effect.Effect<number>
}>()("@model-platform/core/OrderService/Orders") {
  static readonly layer: Layer.Layer<
    Orders,
    never,
    OrderStore | PlanStore | Ledger | LedgerStore | Catalogue | CardProcessor | StablecoinRail
  > = Layer.effect(Orders, Effect.suspend(() => makeOrders))
}

// ---------------------------------------------------------------------------------------------
// Orders implementation

const makeOrders = Effect.gen(function*() {
  const store = yield* OrderStore
  const ledgerStore = yield* LedgerStore
  const catalogue = yield* Catalogue
  const plans = yield* makePlans
  const machineOf = machineOfScope(yield* PlanStore)
  const processor = yield* CardProcessor
  const rail = yield* StablecoinRail
  const address = yield* PublicAddress
  const payments = catalogue.config.payments

  const nowMillis = Clock.currentTimeMillis

  const { price, quote } = makePricing(catalogue)

  /** The machine an order would be for (null: credits for the whole account, or an unknown package). */
  const orderedMachine = (body: CreateOrder): string | null =>
    body.type === "package"
      ? catalogue.packages.find((p) => p.id === body.package_id)?.machine_id ?? null
      : body.type === "credits"
      ? body.machine_id ?? null
      : body.machine_id

  const create = Effect.fn("Orders.create")(function*(caller: Caller, body: CreateOrder) {
    // Before the order is priced: a scoped key learns nothing of orders beyond its scope.
    yield* requireWithin(machineOf, caller, { _tag: "Order", machine_id: orderedMachine(body) })
    const priced = yield* price(body)
    if (body.type === "subscription" && body.renew_subscription_id !== undefined) {
      yield* plans.checkRenewal(caller.account.id, { ...body, renew_subscription_id: body.renew_subscription_id })
    }
    const now = yield* nowMillis
    const order: OrderRecord = {
      id: yield* generateId("ord"),
      account_id: caller.account.id,
      type: priced.type,
      title: priced.title,
      amount_cents: priced.amount_cents,
      currency: CURRENCY,
      credits: priced.credits,
      machine_id: priced.machine_id,
      package_id: priced.package_id,
      gift: priced.gift,
      details: priced.details,
      status: "pending",
      payment_method: null,
      card_session_id: null,
      checkout_url: null,
      deposit: null,
      created_at: Time.toTimestamp(now),
      expires_at: Time.toTimestamp(now + PAYMENT_WINDOW_MS),
      paid_at: null,
      paid_with: null
    }
    yield* store.insertOrder(order)
    return toOrder(order, now)
  })

  const list = Effect.fn("Orders.list")(function*(caller: Caller, limit?: number) {
    const n = limit ?? ORDERS_DEFAULT_LIMIT
    if (!Number.isInteger(n) || n < 1 || n > ORDERS_MAX_LIMIT) {
      return yield* orderError(
        "invalid_limit",
        `limit must be an integer from 1 to ${ORDERS_MAX_LIMIT} (default ${ORDERS_DEFAULT_LIMIT}); got ${limit}.`
      )
    }
    const orders = yield* store.listOrders(caller.account.id, n)
    const now = yield* nowMillis
    return { data: orders.map((o) => toOrder(o, now)) } satisfies OrderList
  })

  const own = Effect.fnUntraced(function*(caller: Caller, orderId: OrderId) {
    const order = yield* store.getOrder(caller.account.id, orderId)
    if (order === undefined) return yield* orderError("order_not_found", `No order "${orderId}".`)
    return order
  })

  const get = Effect.fn("Orders.get")(function*(caller: Caller, orderId: OrderId) {
    const order = yield* own(caller, orderId)
    const ticket = order.gift && order.status === "paid" ? yield* store.ticketForOrder(order.id) : undefined
    return toOrder(order, yield* nowMillis, ticket === undefined ? null : toTicket(ticket, caller))
  })

  const counted = (deposit: DepositAddress) =>
    Effect.map(
      store.depositsTo(deposit.address),
      (all) =>
        all
          .filter((x) => x.outcome === "counted" && x.chain === deposit.chain && x.token === deposit.token)
          .reduce((sum, x) => sum + x.amount, 0n)
    )

  /** 409 when an order cannot be paid any more (paid, or its window closed). */
  const notPayable = (order: OrderRecord, now: number) =>
    statusAt(order, now) === "paid"
      ? orderError("order_already_paid", `Order ${order.id} is already paid.`)
      : orderError("order_expired", `Order ${order.id} can no longer be paid (${statusAt(order, now)}); create a new order.`)

  /** A new card plan keeps its card for its renewals (docs/plans.md "Renewals"). */
  const keepsCard = (order: OrderRecord) => order.details?.kind === "subscription" && order.details.renew_subscription_id === null

  const checkoutRequest = (order: OrderRecord, baseUrl: string, expiresAt: string = order.expires_at, keepCard = false): CheckoutRequest => ({
    order_id: order.id,
    account_id: order.account_id,
    title: order.title,
    amount_cents: order.amount_cents,
    currency: order.currency,
    base_url: baseUrl,
    save_card: keepCard || keepsCard(order),
    expires_at: expiresAt
  })

  /** The base of the links a checkout hands out: PUBLIC_URL, else the request's (http/PublicUrl.ts). */
  const baseUrl = Effect.map(RequestBaseUrl, (fromRequest) =>
    (address.publicUrl !== undefined && address.publicUrl !== "" ? address.publicUrl : fromRequest ?? "").replace(/\/+$/, ""))

  const optionsText = () =>
    (payments.stablecoin?.options ?? []).map((o) => `${o.token} on ${o.chain}`).join(", ")

  const pay = Effect.fn("Orders.pay")(function*(caller: Caller, orderId: OrderId, body: PayOrder, options?: { readonly keepCard?: boolean }) {
    const order = yield* own(caller, orderId)
    yield* requireWithin(machineOf, caller, { _tag: "Order", machine_id: order.machine_id })
    const now = yield* nowMillis
    if (!payableAt(order, now)) return yield* notPayable(order, now)
    const expiresAt = Time.toTimestamp(now + PAYMENT_WINDOW_MS)

    /** The conditional start lost (paid, expired or another asset meanwhile): say why. */
    const explain = Effect.fnUntraced(function*() {
      const current = (yield* store.findOrder(order.id)) ?? order
      const at = yield* nowMillis
      if (!payableAt(current, at)) return yield* notPayable(current, at)
      return yield* orderError("payment_conflict", `Order ${order.id} changed while starting its payment; try again.`)
    })

    if (body.method === "card") {
      if (payments.card === null) {
        return yield* orderError("card_payments_off", "Card payments are not set up (see GET /payment-methods).")
      }
      if (order.deposit !== null && (yield* counted(order.deposit)) > 0n) {
        return yield* orderError(
          "deposit_in_progress",
          `Part of order ${order.id} was already paid by stablecoin deposit; send the rest to ${order.deposit.address}.`
        )
      }
      const opened = order.card_session_id !== null && order.checkout_url !== null
        ? { session_id: order.card_session_id, checkout_url: order.checkout_url }
        : undefined
      const session = opened ?? (yield* processor.createSession(checkoutRequest(order, yield* baseUrl, expiresAt, options?.keepCard === true)))
      // A processor's own page closes with its session (opened with the window it had then):
      // paying again does not move the window past it.
      const windowEnd = opened !== undefined && processor.pages === "processor" ? order.expires_at : expiresAt
      const updated = yield* store.startPayment(order.id, { method: "card", ...session }, windowEnd, Time.toTimestamp(now))
      if (updated === undefined) return yield* explain()
      return toOrder(updated, now)
    }

    const stablecoin = payments.stablecoin
    if (stablecoin === null) {
      return yield* orderError("stablecoin_payments_off", "Stablecoin payments are not set up (see GET /payment-methods).")
    }
    if (body.chain === undefined || body.token === undefined) {
      return yield* orderError(
        "stablecoin_option_invalid",
        `chain and token are required for a stablecoin payment; accepted: ${optionsText()}.`
      )
    }
    const option = stablecoin.options.find((o) => o.chain === body.chain && o.token === body.token)
    if (option === undefined) {
      return yield* orderError(
        "stablecoin_option_invalid",
        `${body.token} on ${body.chain} is not accepted; accepted: ${optionsText()}.`
      )
    }
    if (order.deposit !== null && (order.deposit.chain !== option.chain || order.deposit.token !== option.token)) {
      return yield* orderError(
        "deposit_already_opened",
        `Order ${order.id} already awaits ${order.deposit.token} on ${order.deposit.chain} at ${order.deposit.address}; ` +
          "create a new order to pay with another chain or token."
      )
    }
    const deposit: DepositAddress = order.deposit ?? {
      ...(yield* rail.depositAddress(order.id, option.chain, option.token)),
      chain: option.chain,
      token: option.token,
      decimals: option.decimals,
      amount: usdToBaseUnits(order.amount_cents, option.decimals)
    }
    const updated = yield* store.startPayment(order.id, { method: "stablecoin", deposit }, expiresAt, Time.toTimestamp(now))
    if (updated === undefined) return yield* explain()
    if (updated.deposit === null || updated.deposit.chain !== option.chain || updated.deposit.token !== option.token) {
      return yield* Effect.die(new Error(`OrderStore.startPayment: order ${order.id} has no deposit in ${option.token}`))
    }
    return toOrder(updated, now)
  })

  // ---- fulfilment: idempotent, so it runs after every completion, first or replayed (Fulfilment.ts) ----

  const { fulfil, settleOrder } = yield* makeFulfilment

  // ---- card ----

  const checkoutInfo = checkoutInfoOf

  const bySession = Effect.fnUntraced(function*(sessionId: string) {
    const order = yield* store.findByCardSession(sessionId)
    if (order === undefined) return yield* orderError("checkout_not_found", "No checkout has this address.")
    return order
  })

  const checkout = Effect.fn("Orders.checkout")(function*(sessionId: string) {
    return checkoutInfo(yield* bySession(sessionId), yield* nowMillis)
  })

  const expiredResult = (order: OrderRecord, now: number): CardPaymentResult => ({
    _tag: "Declined",
    reason: "checkout_expired",
    message: "This checkout has expired; create a new order to try again.",
    checkout: checkoutInfo(order, now)
  })

  const completeCardPayment = Effect.fn("Orders.completeCardPayment")(function*(sessionId: string, card: CardDetails) {
    const order = yield* bySession(sessionId)
    const now = yield* nowMillis
    if (order.status === "paid") {
      yield* fulfil(order)
      return { _tag: "Paid", order: toOrder(order, now), checkout: checkoutInfo(order, now) } satisfies CardPaymentResult
    }
    if (!payableAt(order, now)) return expiredResult(order, now)
    // The order is the idempotency key: concurrent submissions of this checkout charge once.
    const outcome = yield* processor.charge(sessionId, checkoutRequest(order, yield* baseUrl), card, order.id)
    if (outcome._tag === "Declined") {
      return { ...outcome, checkout: checkoutInfo(order, now) } satisfies CardPaymentResult
    }
    // A new plan's card is saved for its renewals (docs/plans.md "Renewals"); declined to save: none.
    const saved = keepsCard(order)
      ? yield* processor.saveCard(order.account_id, card)
      : undefined
    const paidAt = yield* nowMillis
    yield* store.markPaid(order.id, "card", Time.toTimestamp(paidAt))
    const after = yield* settleOrder(order.id, saved?._tag === "Saved" ? saved.reference : null)
    // Lost to the window closing between the check and the write: nothing was granted. (A real
    // processor would void the authorisation here; the test processor moves no money.)
    if (after.status !== "paid") return expiredResult(after, paidAt)
    return { _tag: "Paid", order: toOrder(after, paidAt), checkout: checkoutInfo(after, paidAt) } satisfies CardPaymentResult
  })

  const { recordDeposit, deposits } = yield* makeStablecoinDeposits(settleOrder)

  // ---- receipts, tiers, gate ----

  const receipt = Effect.fn("Orders.receipt")(function*(caller: Caller, receiptId: string) {
    const found = yield* store.getReceipt(caller.account.id, receiptId)
    if (found === undefined) return yield* orderError("receipt_not_found", `No receipt "${receiptId}".`)
    return toReceipt(found)
  })

  const healPaid = Effect.gen(function*() {
    const orders = yield* store.unfulfilled(100)
    yield* Effect.forEach(orders, (order) => fulfil(order), { discard: true })
    return orders.length
  }).pipe(Effect.withSpan("Orders.healPaid"))

  return Orders.of({
    quote,
    create,
    list,
    get,
    pay,
    checkout,
    completeCardPayment,
    recordDeposit,
    deposits,
    receipts: (caller) => Effect.map(store.listReceipts(caller.account.id), (rs) => ({ data: rs.map(toReceipt) })),
    receipt,
    purchasedCredits: netPurchasedCredits(store, ledgerStore),
    charging: Effect.map(nowMillis, (now) => chargingGate(payments, now)),
    healPaid
  })
})
