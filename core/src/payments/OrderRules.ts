/**
 * The rules of orders, payments and gift tickets (docs/payments.md), as pure functions: payment
 * windows, USD and token amounts, ticket codes, the views the API shows, and what the deposits to
 * an order add up to. payments/OrderService.ts applies them.
 */
import { Effect } from "effect"
import type { Caller } from "../keys/Caller.ts"
import type { Receipt } from "./Orders.ts"
import type { Ticket } from "../ledger/Credits.ts"
import { type OrderId, randomBytes } from "../kernel/Ids.ts"
import { scopeOf } from "../keys/KeyScope.ts"
import { MICRO_PER_CREDIT, microToCredits } from "../kernel/Money.ts"
import type { Order, OrderStatus, OrderType } from "./Orders.ts"
import type { CheckoutInfo } from "./Orders.ts"
import {
  type DepositAddress,
  type DepositOutcome,
  type DepositRecord,
  type OrderRecord,
  type ReceiptRecord,
  type TicketRecord
} from "./OrderStore.ts"

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
export const isAutoReloadOrder = (orderId: OrderId): boolean => orderId.startsWith(`${AUTO_RELOAD_ORDER_KIND}_`)

/**
 * Whether a receipt counts toward the usage tier (its credits are purchased credits): credits and
 * packages bought, gifts included (the buyer paid for them); plans and rentals do not. Decided
 * here when a receipt is made (Fulfilment.ts) and stored with it (ReceiptRecord.counts_toward_tier),
 * so a store sums the flagged receipts and never decides; also how a receipt stored before the flag
 * existed reads (docs/payments.md "Fulfilment, receipts, purchased credits").
 */
export const countsTowardTier = (kind: OrderType): boolean => kind === "credits" || kind === "package"

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
export const formatCredits = (micro: bigint): string => {
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

/** The characters of a ticket code a caller without `manage` still sees, as of a card number. */
export const TICKET_CODE_SHOWN = 4

/**
 * A ticket's code as `viewer` may read it. A code is a bearer value (any account can redeem it),
 * so reading one in full moves money: only a key that may spend the whole account's money
 * (`manage`, and no machine, plan or rental scope) reads it; any other key (`read`, an agent's
 * key, a scoped key) sees `*****-*****-*****-*3EZN`, dashes and length kept, which no redemption
 * accepts (docs/api-decisions.md "Gift ticket codes need manage").
 */
export const ticketCodeFor = (code: string, viewer: Caller): string => {
  const { key } = viewer
  if (key.permissions.includes("manage") && scopeOf(key)._tag === "Account") return code
  const shownFrom = code.length - TICKET_CODE_SHOWN
  return Array.from(code, (c, i) => c === "-" || i >= shownFrom ? c : "*").join("")
}

// ---- views ----

export const toTicket = (ticket: TicketRecord, viewer: Caller): Ticket => ({
  code: ticketCodeFor(ticket.code, viewer),
  credits: microToCredits(ticket.credits),
  machine_id: ticket.machine_id,
  redeemed: ticket.redeemed_by !== null,
  redeemed_by_you: ticket.redeemed_by === viewer.account.id
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
  readonly order_id: OrderId
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

/** What a checkout page shows of an order at `now` (CheckoutPage.ts). */
export const checkoutInfoOf = (order: OrderRecord, now: number): CheckoutInfo => {
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
