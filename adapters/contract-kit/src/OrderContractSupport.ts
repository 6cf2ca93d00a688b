/**
 * What the order store contract's tests share (OrderContract.ts, OrderRecordsContract.ts): explicit
 * times, and orders, deposit addresses, tickets, receipts and transfers made with fresh ids.
 */
import { Effect } from "effect"
import { generateId } from "@model-platform/core/kernel"
import {
  countsTowardTier,
  type DepositAddress,
  type DepositRecord,
  type OrderRecord,
  OrderStore,
  type ReceiptRecord,
  type TicketRecord
} from "@model-platform/core/payments"
import { at, randomHexOf } from "./SampleRecords.ts"

export const DAY = 24 * 60 * 60 * 1000

export const unbounded = { concurrency: "unbounded" } as const

export const makeOrder = Effect.fnUntraced(function*(accountId: string, overrides: Partial<OrderRecord> = {}) {
  const order: OrderRecord = {
    id: yield* generateId("ord"),
    account_id: accountId,
    type: "credits",
    title: "25,000 credits",
    amount_cents: 2_500n,
    currency: "USD",
    credits: 25_000_000_000n,
    machine_id: null,
    package_id: null,
    gift: false,
    details: null,
    status: "pending",
    payment_method: null,
    card_session_id: null,
    checkout_url: null,
    deposit: null,
    created_at: at(0),
    expires_at: at(DAY),
    paid_at: null,
    paid_with: null,
    ...overrides
  }
  return order
})

export const makeDeposit = Effect.fnUntraced(function*(overrides: Partial<DepositAddress> = {}) {
  const deposit: DepositAddress = {
    address: `0x${yield* randomHexOf(20)}`,
    memo: null,
    chain: "base",
    token: "USDC",
    decimals: 6,
    amount: 25_000_000n,
    ...overrides
  }
  return deposit
})

export const makeTicket = Effect.fnUntraced(function*(orderId: string, accountId: string, overrides: Partial<TicketRecord> = {}) {
  const ticket: TicketRecord = {
    code: (yield* randomHexOf(10)).toUpperCase(),
    order_id: orderId,
    account_id: accountId,
    credits: 10_000_000_000n,
    machine_id: null,
    created_at: at(0),
    redeemed_by: null,
    redeemed_at: null,
    ...overrides
  }
  return ticket
})

export const makeReceipt = Effect.fnUntraced(function*(accountId: string, overrides: Partial<ReceiptRecord> = {}) {
  const receipt: ReceiptRecord = {
    id: yield* generateId("rcpt"),
    account_id: accountId,
    order_id: yield* generateId("ord"),
    kind: "credits",
    title: "25,000 credits",
    paid_at: at(0),
    amount_cents: 2_500n,
    currency: "USD",
    credits: 25_000_000_000n,
    paid_with: "card",
    auto_reload: false,
    counts_toward_tier: countsTowardTier(overrides.kind ?? "credits"),
    ...overrides
  }
  return receipt
})

export const makeTransfer = Effect.fnUntraced(function*(address: string, overrides: Partial<DepositRecord> = {}) {
  const deposit: DepositRecord = {
    tx: `0x${yield* randomHexOf(32)}`,
    chain: "base",
    token: "USDC",
    address,
    amount: 25_000_000n,
    order_id: null,
    outcome: "unmatched",
    at: at(1_000),
    recorded_at: at(2_000),
    ...overrides
  }
  return deposit
})

/** Store failures are defects: a broken rule (a duplicate id) must die, not succeed or fail. */

/** Inserts an order and checks it reads back as given. */
export const saved = Effect.fnUntraced(function*(accountId: string, overrides: Partial<OrderRecord> = {}) {
  const store = yield* OrderStore
  const order = yield* makeOrder(accountId, overrides)
  yield* store.insertOrder(order)
  return order
})
