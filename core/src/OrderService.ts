/**
 * Use-cases: orders, payments and gift tickets (docs/payments.md).
 *
 * `Orders` prices order bodies (quote), creates pending orders, starts payments (a card checkout
 * session or a stablecoin deposit address), and applies what the rails report: a card checkout
 * approved or declined (`completeCardPayment`), a transfer seen on a chain (`recordDeposit`).
 * `Tickets` lists the gift tickets an account bought and redeems them.
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
import type { Caller } from "./ApiKeys.ts"
import type { Charging, Receipt, ReceiptList } from "./billing/Schemas.ts"
import { Catalogue } from "./Catalogue.ts"
import { chargingGate } from "./Charging.ts"
import type { CheckoutInfo } from "./CheckoutPage.ts"
import type { RedeemResponse, Ticket, TicketList } from "./Credits.ts"
import * as Errors from "./Errors.ts"
import { generateId, randomBytes } from "./Keys.ts"
import { Ledger } from "./money/Ledger.ts"
import { creditsToMicro, MICRO_PER_CREDIT, microToCredits } from "./Money.ts"
import type { CreateOrder, Order, OrderList, OrderStatus, OrderType, PayOrder, Quote } from "./Orders.ts"
import { rentalPrice, subscriptionPrice } from "./plans/Offers.ts"
import { makePlans } from "./plans/Plans.ts"
import { type CardDetails, CardProcessor, type CheckoutRequest } from "./ports/CardProcessor.ts"
import {
  type DepositAddress,
  type DepositOutcome,
  type DepositRecord,
  type OrderDetails,
  type OrderRecord,
  OrderStore,
  type ReceiptRecord,
  type TicketRecord
} from "./ports/OrderStore.ts"
import { PlanStore } from "./ports/PlanStore.ts"
import { StablecoinRail, type Transfer } from "./ports/StablecoinRail.ts"
import * as Time from "./Time.ts"

// ---------------------------------------------------------------------------------------------
// pure rules

/** How long an order can be paid: from its creation, and again from each POST /orders/{id}/pay. */
export const PAYMENT_WINDOW_MS = 24 * 60 * 60 * 1000

export const ORDERS_DEFAULT_LIMIT = 50
export const ORDERS_MAX_LIMIT = 200

export const CURRENCY = "USD"

/**
 * Automatic top-ups' order ids are "ord_auto_<random>" (billing/TopUp.ts), so that a fulfilment
 * completed here (healPaid) writes their receipt with auto_reload too.
 */
export const AUTO_RELOAD_ORDER_KIND = "ord_auto"
export const isAutoReloadOrder = (orderId: string): boolean => orderId.startsWith(`${AUTO_RELOAD_ORDER_KIND}_`)

/** The status an order shows at `nowMillis`: a pending order whose window has closed is expired. */
export const statusAt = (order: OrderRecord, nowMillis: number): OrderStatus =>
  order.status === "pending" && nowMillis >= Date.parse(order.expires_at) ? "expired" : order.status

/** Whether money arriving at `atMillis` may still pay the order. */
export const payableAt = (order: OrderRecord, atMillis: number): boolean =>
  order.status === "pending" && atMillis < Date.parse(order.expires_at)

/** Cents as the JSON number of dollars (exact for every amount of cents below 2^53). */
export const centsToUsd = (cents: bigint): number => {
  const negative = cents < 0n
  const abs = negative ? -cents : cents
  return Number(`${negative ? "-" : ""}${abs / 100n}.${(abs % 100n).toString().padStart(2, "0")}`)
}

/** "$1,234.50" */
export const formatUsd = (cents: bigint): string => {
  const whole = (cents / 100n).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ",")
  return `$${whole}.${(cents % 100n).toString().padStart(2, "0")}`
}

/** Credits for a title: "25,000" or "1,234.5". */
const formatCredits = (micro: bigint): string => {
  const whole = (micro / MICRO_PER_CREDIT).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ",")
  const fraction = (micro % MICRO_PER_CREDIT).toString().padStart(6, "0").replace(/0+$/, "")
  return fraction === "" ? whole : `${whole}.${fraction}`
}

/**
 * The exact deposit for an amount of USD cents in a USD stablecoin with `decimals` decimals
 * (1 token = 1 USD): base units = cents * 10^decimals / 100. Exact for every whole-cent amount
 * when decimals >= 2, and for whole dollars (all our orders) when decimals >= 0.
 */
export const usdToBaseUnits = (cents: bigint, decimals: number): bigint => {
  const scaled = cents * 10n ** BigInt(decimals)
  if (scaled % 100n !== 0n) throw new RangeError(`${cents} cents is not a whole number of base units at ${decimals} decimals`)
  return scaled / 100n
}

/** Base units as the exact decimal string in token units: 25_000_000n at 6 decimals -> "25.000000". */
export const formatUnits = (base: bigint, decimals: number): string => {
  const negative = base < 0n
  const abs = negative ? -base : base
  const unit = 10n ** BigInt(decimals)
  const text = decimals === 0
    ? abs.toString()
    : `${abs / unit}.${(abs % unit).toString().padStart(decimals, "0")}`
  return negative ? `-${text}` : text
}

/**
 * An exact decimal string in token units as base units, or undefined when it is not one: digits,
 * optionally a point and at most `decimals` digits ("25", "25.5", "25.000000"). No sign, exponent
 * or float ever: "25.0000001" at 6 decimals is refused rather than rounded.
 */
export const parseUnits = (text: string, decimals: number): bigint | undefined => {
  const match = /^(\d+)(?:\.(\d+))?$/.exec(text)
  if (match === null) return undefined
  const fraction = match[2] ?? ""
  if (fraction.length > decimals) return undefined
  return BigInt(match[1]!) * 10n ** BigInt(decimals) + BigInt(fraction.padEnd(decimals, "0") || "0")
}

// ---- ticket codes ----

/** Crockford's base32: no I, L, O, U, so a typed code is hard to get wrong. */
export const TICKET_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
export const TICKET_GROUPS = 4
export const TICKET_GROUP_LENGTH = 5

/**
 * A new ticket code: 4 groups of 5 base32 characters, 100 bits from the CSPRNG (each random byte
 * gives 5 uniform bits: 256 is a multiple of 32). E.g. "7KQ2M-X9D4R-0HVTB-S3EZN".
 */
export const generateTicketCode: Effect.Effect<string> = Effect.map(
  randomBytes(TICKET_GROUPS * TICKET_GROUP_LENGTH),
  (bytes) => {
    const chars = Array.from(bytes, (b) => TICKET_ALPHABET[b & 31]!)
    const groups: Array<string> = []
    for (let i = 0; i < TICKET_GROUPS; i++) {
      groups.push(chars.slice(i * TICKET_GROUP_LENGTH, (i + 1) * TICKET_GROUP_LENGTH).join(""))
    }
    return groups.join("-")
  }
)

/**
 * A typed code in its stored form, or undefined when it cannot be one. Case, spaces and dashes
 * are ignored, and the letters Crockford reads as digits are read so (I and L as 1, O as 0).
 */
export const normalizeTicketCode = (typed: string): string | undefined => {
  const chars = typed.toUpperCase().replace(/[\s-]/g, "").replace(/[IL]/g, "1").replace(/O/g, "0")
  if (chars.length !== TICKET_GROUPS * TICKET_GROUP_LENGTH) return undefined
  for (const c of chars) if (!TICKET_ALPHABET.includes(c)) return undefined
  const groups: Array<string> = []
  for (let i = 0; i < TICKET_GROUPS; i++) groups.push(chars.slice(i * TICKET_GROUP_LENGTH, (i + 1) * TICKET_GROUP_LENGTH))
  return groups.join("-")
}

/** The ledger ref of a ticket's credits in the redeemer's account. */
export const ticketRef = (code: string): string => `ticket:${code}`

// ---- views ----

export const toTicket = (ticket: TicketRecord, viewerAccountId: string): Ticket => ({
  code: ticket.code,
  credits: microToCredits(ticket.credits),
  machine_id: ticket.machine_id,
  redeemed: ticket.redeemed_by !== null,
  redeemed_by_you: ticket.redeemed_by === viewerAccountId
})

export const toReceipt = (receipt: ReceiptRecord): Receipt => ({
  id: receipt.id,
  kind: receipt.kind,
  title: receipt.title,
  status: "paid",
  paid_at: receipt.paid_at,
  amount: { value: centsToUsd(receipt.amount_cents), currency: receipt.currency, text: formatUsd(receipt.amount_cents) },
  credits: microToCredits(receipt.credits),
  paid_with: receipt.paid_with,
  auto_reload: receipt.auto_reload
})

/** An order as the API shows it at `nowMillis`; `ticket` only when given (GET /orders/{id}). */
export const toOrder = (order: OrderRecord, nowMillis: number, ticket?: Ticket | null): Order => {
  const payment: Order["payment"] = order.payment_method === null
    ? { method: null }
    : order.payment_method === "card" || order.deposit === null
    ? { method: "card" }
    : {
      method: "stablecoin",
      deposit: {
        chain: order.deposit.chain,
        token: order.deposit.token,
        amount: formatUnits(order.deposit.amount, order.deposit.decimals),
        address: order.deposit.address,
        memo: order.deposit.memo
      }
    }
  return {
    id: order.id,
    type: order.type,
    title: order.title,
    amount_usd: centsToUsd(order.amount_cents),
    currency: order.currency,
    status: statusAt(order, nowMillis),
    machine_id: order.machine_id,
    payment,
    pay_url: order.checkout_url ?? "",
    created_at: order.created_at,
    paid_at: order.paid_at,
    ...(ticket === undefined ? {} : { ticket })
  }
}

/** What a stablecoin order's address has received and what is owed back (token units, exact strings). */
export interface DepositSummary {
  readonly order_id: string
  readonly status: OrderStatus
  readonly address: string
  readonly chain: string
  readonly token: string
  /** The exact amount the order asks for. */
  readonly amount_due: string
  /** Everything received at the address in the order's chain and token. */
  readonly received: string
  /** Still to send before the order is paid (0 once it is paid or expired). */
  readonly remaining: string
  /** Received but not applied to the order: excess, late deposits, or all of it for an expired order. */
  readonly refund_due: string
  /** Transfers to the address in another chain or token: all owed back, as received. */
  readonly other_assets: ReadonlyArray<{ readonly chain: string; readonly token: string; readonly amount: string; readonly tx: string }>
  readonly deposits: ReadonlyArray<
    { readonly tx: string; readonly amount: string; readonly outcome: DepositOutcome; readonly at: string }
  >
}

/**
 * The accounting of one deposit address (pure): sums of the matching-asset deposits, what the
 * order applies (its whole amount when it was paid by stablecoin, else nothing), what remains,
 * and what is owed back. Derived from the recorded deposits alone, so concurrent arrivals can
 * never make it disagree with itself.
 */
export const summarizeDeposits = (
  order: OrderRecord & { readonly deposit: DepositAddress },
  deposits: ReadonlyArray<DepositRecord>,
  nowMillis: number
): DepositSummary => {
  const d = order.deposit
  const matching = deposits.filter((x) => x.chain === d.chain && x.token === d.token)
  const received = matching.reduce((sum, x) => sum + x.amount, 0n)
  const counted = matching.filter((x) => x.outcome === "counted").reduce((sum, x) => sum + x.amount, 0n)
  const payable = payableAt(order, nowMillis)
  const applied = order.status === "paid" && order.paid_with === "stablecoin" ? d.amount : 0n
  const remaining = payable && counted < d.amount ? d.amount - counted : 0n
  const kept = payable ? counted : applied
  const fmt = (x: bigint) => formatUnits(x, d.decimals)
  return {
    order_id: order.id,
    status: statusAt(order, nowMillis),
    address: d.address,
    chain: d.chain,
    token: d.token,
    amount_due: fmt(d.amount),
    received: fmt(received),
    remaining: fmt(remaining),
    refund_due: fmt(received - kept),
    other_assets: deposits
      .filter((x) => x.chain !== d.chain || x.token !== d.token)
      .map((x) => ({ chain: x.chain, token: x.token, amount: x.amount.toString(), tx: x.tx })),
    deposits: matching.map((x) => ({ tx: x.tx, amount: fmt(x.amount), outcome: x.outcome, at: x.at }))
  }
}

/**
 * When the counted deposits first covered `amount` (chain time), or undefined when they do not:
 * the instant the order was paid.
 */
export const coveredAt = (deposits: ReadonlyArray<DepositRecord>, amount: bigint): string | undefined => {
  const counted = deposits
    .filter((x) => x.outcome === "counted")
    .sort((a, b) => Date.parse(a.at) - Date.parse(b.at))
  let sum = 0n
  for (const x of counted) {
    sum += x.amount
    if (sum >= amount) return x.at
  }
  return undefined
}

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

export interface DepositResult {
  /** How this transfer was classified (for a replay: as first recorded). */
  readonly outcome: DepositOutcome
  /** false when the transfer had been recorded before (a replay): nothing new was written. */
  readonly recorded: boolean
  /** The address's order after the transfer, null for an address no order owns. */
  readonly order: DepositSummary | null
}

// ---------------------------------------------------------------------------------------------
// the services

export class Orders extends Context.Service<Orders, {
  /** POST /quotes: what a body would cost and grant, without creating anything. */
  readonly quote: (body: CreateOrder) => Effect.Effect<Quote, Errors.BadRequest | Errors.NotFound>
  /** POST /orders: a pending order; nothing is charged until it is paid. */
  readonly create: (caller: Caller, body: CreateOrder) => Effect.Effect<Order, Errors.BadRequest | Errors.NotFound>
  /** GET /orders: newest first; limit 1 to 200, default 50, else 400 invalid_request. */
  readonly list: (caller: Caller, limit?: number | undefined) => Effect.Effect<OrderList, Errors.BadRequest>
  /** GET /orders/{id}, with `ticket` (the gift ticket of a paid gift order, else null). */
  readonly get: (caller: Caller, orderId: string) => Effect.Effect<Order, Errors.NotFound>
  /** POST /orders/{id}/pay: opens a card checkout (pay_url) or a deposit address (payment.deposit). */
  readonly pay: (
    caller: Caller,
    orderId: string,
    body: PayOrder
  ) => Effect.Effect<Order, Errors.BadRequest | Errors.NotFound | Errors.Conflict>
  /** What the checkout page of a session shows (404 checkout_not_found). */
  readonly checkout: (sessionId: string) => Effect.Effect<CheckoutInfo, Errors.NotFound>
  /**
   * The checkout page was submitted: charge the card through the processor; approved -> the order
   * is paid once and fulfilled. A completion of an already paid order charges nothing and answers
   * Paid (and completes an interrupted fulfilment).
   */
  readonly completeCardPayment: (
    sessionId: string,
    card: CardDetails
  ) => Effect.Effect<CardPaymentResult, Errors.NotFound>
  /** A transfer seen on a stablecoin rail (at least once; replays change nothing). */
  readonly recordDeposit: (transfer: Transfer) => Effect.Effect<DepositResult, Errors.BadRequest>
  /** The deposit accounting of an order (operators, support; 404 when it has no deposit address). */
  readonly deposits: (orderId: string) => Effect.Effect<DepositSummary, Errors.NotFound>
  /** GET /billing/receipts: newest first. */
  readonly receipts: (caller: Caller) => Effect.Effect<ReceiptList>
  /** GET /billing/receipts/{id}. */
  readonly receipt: (caller: Caller, receiptId: string) => Effect.Effect<Receipt, Errors.NotFound>
  /** Credits bought in total by an account (micro-credits), for its usage tier. */
  readonly purchasedCredits: (accountId: string) => Effect.Effect<bigint>
  /** The charging gate now (Billing summary's `charging`). */
  readonly charging: Effect.Effect<Charging>
  /** Completes the fulfilment of paid orders that have no receipt yet (after a crash); returns how many. */
  readonly healPaid: Effect.Effect<number>
}>()("@model-platform/core/OrderService/Orders") {
  static readonly layer: Layer.Layer<
    Orders,
    never,
    OrderStore | PlanStore | Ledger | Catalogue | CardProcessor | StablecoinRail
  > = Layer.effect(Orders, Effect.suspend(() => makeOrders))
}

export class Tickets extends Context.Service<Tickets, {
  /** GET /tickets: tickets this account bought, newest first, redeemed or not. */
  readonly list: (caller: Caller) => Effect.Effect<TicketList>
  /**
   * POST /credits/redeem: once per ticket, by any account. 404 ticket_not_found for an unknown
   * (or malformed) code, 409 ticket_already_redeemed after the first redemption.
   */
  readonly redeem: (caller: Caller, code: string) => Effect.Effect<RedeemResponse, Errors.NotFound | Errors.Conflict>
}>()("@model-platform/core/OrderService/Tickets") {
  static readonly layer: Layer.Layer<Tickets, never, OrderStore | Ledger> = Layer.effect(
    Tickets,
    Effect.gen(function*() {
      const store = yield* OrderStore
      const ledger = yield* Ledger

      const grant = (ticket: TicketRecord, accountId: string) =>
        ticket.credits > 0n
          ? Effect.asVoid(ledger.credit(accountId, {
            ref: ticketRef(ticket.code),
            machine_id: ticket.machine_id,
            amount: ticket.credits,
            type: "credit_added"
          }))
          : Effect.void

      const notFound = Errors.notFound("ticket_not_found", "No ticket has this code.")

      const redeem = Effect.fn("Tickets.redeem")(function*(caller: Caller, typed: string) {
        const code = normalizeTicketCode(typed)
        if (code === undefined) return yield* notFound
        const outcome = yield* store.redeemTicket(code, caller.account.id, yield* Time.now)
        switch (outcome._tag) {
          case "NotFound":
            return yield* notFound
          case "AlreadyRedeemed": {
            // The redeemer asking again: complete a grant a crash may have cut short (a no-op
            // otherwise: the ledger ignores a ref it has), then say it was used.
            if (outcome.ticket.redeemed_by === caller.account.id) yield* grant(outcome.ticket, caller.account.id)
            return yield* Errors.conflict(
              "ticket_already_redeemed",
              outcome.ticket.redeemed_by === caller.account.id
                ? "You have already redeemed this ticket."
                : "This ticket has already been redeemed."
            )
          }
          case "Redeemed": {
            yield* grant(outcome.ticket, caller.account.id)
            return {
              redeemed: true,
              credits: microToCredits(outcome.ticket.credits),
              machine_id: outcome.ticket.machine_id
            } satisfies RedeemResponse
          }
        }
      })

      return Tickets.of({
        list: (caller) =>
          Effect.map(store.ticketsBoughtBy(caller.account.id), (tickets) => ({
            data: tickets.map((t) => toTicket(t, caller.account.id))
          })),
        redeem
      })
    })
  )
}

// ---------------------------------------------------------------------------------------------
// Orders implementation

/** What an order body prices to. */
interface Priced {
  readonly type: OrderType
  readonly title: string
  readonly amount_cents: bigint
  readonly credits: bigint
  readonly machine_id: string | null
  readonly package_id: string | null
  readonly gift: boolean
  /** What a rental or a plan order buys (null for credits and packages). */
  readonly details: OrderDetails | null
}

const makeOrders = Effect.gen(function*() {
  const store = yield* OrderStore
  const ledger = yield* Ledger
  const catalogue = yield* Catalogue
  const plans = yield* makePlans
  const processor = yield* CardProcessor
  const rail = yield* StablecoinRail
  const payments = catalogue.config.payments

  const nowMillis = Clock.currentTimeMillis

  const machineName = (machineId: string) => catalogue.machineConfig(machineId)?.name ?? machineId

  /** The machine of a rental or subscription body (404 machine_not_found). */
  const offeringMachine = (machineId: string) => {
    const machine = catalogue.machineConfig(machineId)
    return machine === undefined ? Errors.notFound("machine_not_found", `No machine "${machineId}".`) : Effect.succeed(machine)
  }

  const price = Effect.fnUntraced(function*(body: CreateOrder) {
    switch (body.type) {
      case "credits": {
        const perUsd = catalogue.config.prices.credits_per_usd
        if (perUsd === null) {
          return yield* Errors.badRequest(
            "invalid_request",
            "Credit orders are not available yet: no credit price is set. Packages may be bought (GET /packages)."
          )
        }
        const machineId = body.machine_id ?? null
        if (machineId !== null && catalogue.machineConfig(machineId) === undefined) {
          return yield* Errors.notFound("machine_not_found", `No machine "${machineId}".`)
        }
        const credits = BigInt(body.amount_usd) * BigInt(perUsd) * MICRO_PER_CREDIT
        const gift = body.gift ?? false
        const what = `${formatCredits(credits)} credits${machineId === null ? "" : ` on ${machineName(machineId)}`}`
        return {
          type: "credits",
          title: gift ? `Gift: ${what}` : what,
          amount_cents: BigInt(body.amount_usd) * 100n,
          credits,
          machine_id: machineId,
          package_id: null,
          gift,
          details: null
        } satisfies Priced
      }
      case "package": {
        const pkg = catalogue.packages.find((p) => p.id === body.package_id)
        if (pkg === undefined) return yield* Errors.notFound("package_not_found", `No package "${body.package_id}".`)
        const credits = creditsToMicro(pkg.credits)
        if (credits === undefined) return yield* Effect.die(new Error(`package ${pkg.id}: credits ${pkg.credits} are not exact`))
        const gift = body.gift ?? false
        return {
          type: "package",
          title: gift ? `Gift: ${pkg.name}` : pkg.name,
          amount_cents: BigInt(Math.round(pkg.amount_usd * 100)),
          credits,
          machine_id: pkg.machine_id,
          package_id: pkg.id,
          gift,
          details: null
        } satisfies Priced
      }
      case "rental": {
        const machine = yield* offeringMachine(body.machine_id)
        const { amount_cents, ...rental } = yield* rentalPrice(machine, body)
        const gpus = rental.gpu === 0 ? "" : `, ${rental.gpu} GPU`
        return {
          type: "rental",
          title: `${machine.name}: ${rental.cpu_cores} cores, ${rental.memory_gb} GB${gpus} for ${rental.hours} h`,
          amount_cents,
          credits: 0n,
          machine_id: machine.id,
          package_id: null,
          gift: false,
          details: { kind: "rental", ...rental }
        } satisfies Priced
      }
      case "subscription": {
        if (body.renew_subscription_id !== undefined) {
          // docs/plans.md "Not built yet": renewals come with the renewal job.
          return yield* Errors.badRequest("invalid_request", "renew_subscription_id: renewing a plan by order is not available yet.")
        }
        const machine = yield* offeringMachine(body.machine_id)
        const { amount_cents, period_days, plan } = yield* subscriptionPrice(machine, body)
        return {
          type: "subscription",
          title: `${plan.name} plan on ${machine.name}, ${period_days} days`,
          amount_cents,
          credits: 0n,
          machine_id: machine.id,
          package_id: null,
          gift: false,
          details: { kind: "subscription", plan_id: plan.id, period_days, renew_subscription_id: null }
        } satisfies Priced
      }
    }
  })

  const quote = Effect.fn("Orders.quote")(function*(body: CreateOrder) {
    const priced = yield* price(body)
    const common = { amount_usd: centsToUsd(priced.amount_cents), currency: CURRENCY }
    const credits = microToCredits(priced.credits)
    const details = priced.details
    if (details?.kind === "rental") {
      const { kind: _, ...rental } = details
      return { type: "rental", ...common, details: { credits, machine_id: priced.machine_id ?? "", ...rental } } satisfies Quote
    }
    if (details?.kind === "subscription") {
      const { kind: _, ...plan } = details
      return { type: "subscription", ...common, details: { credits, machine_id: priced.machine_id ?? "", ...plan } } satisfies Quote
    }
    return priced.type === "credits"
      ? { type: "credits", ...common, details: { credits, machine_id: priced.machine_id, gift: priced.gift } } satisfies Quote
      : {
        type: "package",
        ...common,
        details: { credits, machine_id: priced.machine_id, package_id: priced.package_id ?? "", gift: priced.gift }
      } satisfies Quote
  })

  const create = Effect.fn("Orders.create")(function*(caller: Caller, body: CreateOrder) {
    const priced = yield* price(body)
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
      return yield* Errors.badRequest(
        "invalid_request",
        `limit must be an integer from 1 to ${ORDERS_MAX_LIMIT} (default ${ORDERS_DEFAULT_LIMIT}); got ${limit}.`
      )
    }
    const orders = yield* store.listOrders(caller.account.id, n)
    const now = yield* nowMillis
    return { data: orders.map((o) => toOrder(o, now)) } satisfies OrderList
  })

  const own = Effect.fnUntraced(function*(caller: Caller, orderId: string) {
    const order = yield* store.getOrder(caller.account.id, orderId)
    if (order === undefined) return yield* Errors.notFound("order_not_found", `No order "${orderId}".`)
    return order
  })

  const get = Effect.fn("Orders.get")(function*(caller: Caller, orderId: string) {
    const order = yield* own(caller, orderId)
    const ticket = order.gift && order.status === "paid" ? yield* store.ticketForOrder(order.id) : undefined
    return toOrder(order, yield* nowMillis, ticket === undefined ? null : toTicket(ticket, caller.account.id))
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
      ? Errors.conflict("order_already_paid", `Order ${order.id} is already paid.`)
      : Errors.conflict("order_expired", `Order ${order.id} can no longer be paid (${statusAt(order, now)}); create a new order.`)

  const checkoutRequest = (order: OrderRecord): CheckoutRequest => ({
    order_id: order.id,
    account_id: order.account_id,
    title: order.title,
    amount_cents: order.amount_cents,
    currency: order.currency
  })

  const optionsText = () =>
    (payments.stablecoin?.options ?? []).map((o) => `${o.token} on ${o.chain}`).join(", ")

  const pay = Effect.fn("Orders.pay")(function*(caller: Caller, orderId: string, body: PayOrder) {
    const order = yield* own(caller, orderId)
    const now = yield* nowMillis
    if (!payableAt(order, now)) return yield* notPayable(order, now)
    const expiresAt = Time.toTimestamp(now + PAYMENT_WINDOW_MS)

    /** The conditional start lost (paid, expired or another asset meanwhile): say why. */
    const explain = Effect.fnUntraced(function*() {
      const current = (yield* store.findOrder(order.id)) ?? order
      const at = yield* nowMillis
      if (!payableAt(current, at)) return yield* notPayable(current, at)
      return yield* Errors.conflict("payment_conflict", `Order ${order.id} changed while starting its payment; try again.`)
    })

    if (body.method === "card") {
      if (payments.card === null) {
        return yield* Errors.badRequest("invalid_request", "Card payments are not set up (see GET /payment-methods).")
      }
      if (order.deposit !== null && (yield* counted(order.deposit)) > 0n) {
        return yield* Errors.conflict(
          "deposit_in_progress",
          `Part of order ${order.id} was already paid by stablecoin deposit; send the rest to ${order.deposit.address}.`
        )
      }
      const session = order.card_session_id !== null && order.checkout_url !== null
        ? { session_id: order.card_session_id, checkout_url: order.checkout_url }
        : yield* processor.createSession(checkoutRequest(order))
      const updated = yield* store.startPayment(order.id, { method: "card", ...session }, expiresAt, Time.toTimestamp(now))
      if (updated === undefined) return yield* explain()
      return toOrder(updated, now)
    }

    const stablecoin = payments.stablecoin
    if (stablecoin === null) {
      return yield* Errors.badRequest("invalid_request", "Stablecoin payments are not set up (see GET /payment-methods).")
    }
    if (body.chain === undefined || body.token === undefined) {
      return yield* Errors.badRequest(
        "invalid_request",
        `chain and token are required for a stablecoin payment; accepted: ${optionsText()}.`
      )
    }
    const option = stablecoin.options.find((o) => o.chain === body.chain && o.token === body.token)
    if (option === undefined) {
      return yield* Errors.badRequest(
        "invalid_request",
        `${body.token} on ${body.chain} is not accepted; accepted: ${optionsText()}.`
      )
    }
    if (order.deposit !== null && (order.deposit.chain !== option.chain || order.deposit.token !== option.token)) {
      return yield* Errors.conflict(
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

  // ---- fulfilment: idempotent, so it runs after every completion, first or replayed ----

  const fulfil = Effect.fnUntraced(function*(order: OrderRecord) {
    if (order.status !== "paid" || order.paid_at === null || order.paid_with === null) return
    if (order.gift) {
      yield* store.issueTicket({
        code: yield* generateTicketCode,
        order_id: order.id,
        account_id: order.account_id,
        credits: order.credits,
        machine_id: order.machine_id,
        created_at: order.paid_at,
        redeemed_by: null,
        redeemed_at: null
      })
    } else if (order.credits > 0n) {
      yield* ledger.credit(order.account_id, {
        ref: order.id,
        machine_id: order.machine_id,
        amount: order.credits,
        type: "credit_added"
      })
    }
    // A rental or a plan (once per order: docs/plans.md).
    yield* plans.fulfil(order)
    // Last: a paid order without a receipt is one whose fulfilment was cut short (healPaid).
    yield* store.insertReceipt({
      id: yield* generateId("rcpt"),
      account_id: order.account_id,
      order_id: order.id,
      kind: order.type,
      title: order.title,
      paid_at: order.paid_at,
      amount_cents: order.amount_cents,
      currency: order.currency,
      credits: order.credits,
      paid_with: order.paid_with,
      auto_reload: isAutoReloadOrder(order.id)
    })
  })

  /** Reads the order back after a markPaid attempt and fulfils it when it is paid. */
  const settleOrder = Effect.fnUntraced(function*(orderId: string) {
    const order = yield* store.findOrder(orderId)
    if (order === undefined) return yield* Effect.die(new Error(`order ${orderId} vanished`))
    yield* fulfil(order)
    return order
  })

  // ---- card ----

  const checkoutInfo = (order: OrderRecord, now: number): CheckoutInfo => {
    const status = statusAt(order, now)
    return {
      session_id: order.card_session_id ?? "",
      order_id: order.id,
      title: order.title,
      amount_text: formatUsd(order.amount_cents),
      status: status === "paid" ? "paid" : status === "pending" ? "open" : "expired",
      paid_at: order.paid_at
    }
  }

  const bySession = Effect.fnUntraced(function*(sessionId: string) {
    const order = yield* store.findByCardSession(sessionId)
    if (order === undefined) return yield* Errors.notFound("checkout_not_found", "No checkout has this address.")
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
    const outcome = yield* processor.charge(sessionId, checkoutRequest(order), card)
    if (outcome._tag === "Declined") {
      return { ...outcome, checkout: checkoutInfo(order, now) } satisfies CardPaymentResult
    }
    const paidAt = yield* nowMillis
    yield* store.markPaid(order.id, "card", Time.toTimestamp(paidAt))
    const after = yield* settleOrder(order.id)
    // Lost to the window closing between the check and the write: nothing was granted. (A real
    // processor would void the authorisation here; the test processor moves no money.)
    if (after.status !== "paid") return expiredResult(after, paidAt)
    return { _tag: "Paid", order: toOrder(after, paidAt), checkout: checkoutInfo(after, paidAt) } satisfies CardPaymentResult
  })

  // ---- stablecoin ----

  const invalidTransfer = (message: string) => Errors.badRequest("invalid_request", message)

  const summary = Effect.fnUntraced(function*(order: OrderRecord) {
    const deposit = order.deposit
    if (deposit === null) return yield* Effect.die(new Error(`order ${order.id} has no deposit address`))
    return summarizeDeposits({ ...order, deposit }, yield* store.depositsTo(deposit.address), yield* nowMillis)
  })

  const recordDeposit = Effect.fn("Orders.recordDeposit")(function*(transfer: Transfer) {
    const atMillis = Date.parse(transfer.at)
    if (Number.isNaN(atMillis)) return yield* invalidTransfer(`Transfer ${transfer.tx}: at is not a timestamp.`)
    const order = yield* store.findByDepositAddress(transfer.to)
    const deposit = order?.deposit ?? null
    const sameAsset = deposit !== null && deposit.chain === transfer.chain && deposit.token === transfer.token
    const decimals = sameAsset
      ? deposit.decimals
      : payments.stablecoin?.options.find((o) => o.chain === transfer.chain && o.token === transfer.token)?.decimals
    if (decimals === undefined) {
      return yield* invalidTransfer(`Transfer ${transfer.tx}: ${transfer.token} on ${transfer.chain} is not an accepted asset.`)
    }
    const amount = parseUnits(transfer.amount, decimals)
    if (amount === undefined || amount <= 0n) {
      return yield* invalidTransfer(
        `Transfer ${transfer.tx}: amount ${JSON.stringify(transfer.amount)} is not a positive amount with at most ${decimals} decimals.`
      )
    }
    const outcome: DepositOutcome = order === undefined || deposit === null
      ? "unmatched"
      : !sameAsset
      ? "wrong_asset"
      : payableAt(order, atMillis)
      ? "counted"
      : "late"
    const record: DepositRecord = {
      tx: transfer.tx,
      chain: transfer.chain,
      token: transfer.token,
      address: transfer.to,
      amount,
      order_id: order?.id ?? null,
      outcome,
      at: Time.toTimestamp(atMillis),
      recorded_at: yield* Time.now
    }
    const written = yield* store.recordDeposit(record)
    const stored = written === "recorded" ? record : ((yield* store.getDeposit(transfer.chain, transfer.tx)) ?? record)
    if (order === undefined || deposit === null) {
      return { outcome: stored.outcome, recorded: written === "recorded", order: null } satisfies DepositResult
    }
    // Pay the order when its counted deposits cover it (a replay re-runs this: markPaid answers
    // false and fulfilment writes nothing new).
    const all = yield* store.depositsTo(deposit.address)
    const paidAt = coveredAt(all.filter((x) => x.chain === deposit.chain && x.token === deposit.token), deposit.amount)
    if (paidAt !== undefined) yield* store.markPaid(order.id, "stablecoin", paidAt)
    const after = yield* settleOrder(order.id)
    return { outcome: stored.outcome, recorded: written === "recorded", order: yield* summary(after) } satisfies DepositResult
  })

  const deposits = Effect.fn("Orders.deposits")(function*(orderId: string) {
    const order = yield* store.findOrder(orderId)
    if (order === undefined || order.deposit === null) {
      return yield* Errors.notFound("order_not_found", `No order "${orderId}" with a deposit address.`)
    }
    return yield* summary(order)
  })

  // ---- receipts, tiers, gate ----

  const receipt = Effect.fn("Orders.receipt")(function*(caller: Caller, receiptId: string) {
    const found = yield* store.getReceipt(caller.account.id, receiptId)
    if (found === undefined) return yield* Errors.notFound("receipt_not_found", `No receipt "${receiptId}".`)
    return toReceipt(found)
  })

  const healPaid = Effect.gen(function*() {
    const orders = yield* store.unfulfilled(100)
    yield* Effect.forEach(orders, fulfil, { discard: true })
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
    purchasedCredits: (accountId) => store.purchasedCredits(accountId),
    charging: Effect.map(nowMillis, (now) => chargingGate(payments, now)),
    healPaid
  })
})
