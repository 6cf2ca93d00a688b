/**
 * Stablecoin deposits (docs/payments.md "Stablecoin"): a transfer seen on a rail, recorded once
 * (replays change nothing) and classified against the order its address belongs to — counted,
 * late, of the wrong asset, or unmatched — and the order paid by the one conditional write
 * (OrderStore.markPaid) once its counted deposits cover it; fulfilment is Fulfilment.ts's.
 * Part of `Orders` (OrderService.ts).
 */
import { Clock, Effect } from "effect"
import { Catalogue } from "../catalogue/Catalogue.ts"
import type { OrderId } from "../kernel/Ids.ts"
import * as Time from "../kernel/Time.ts"
import { coveredAt, type DepositSummary, parseUnits, payableAt, summarizeDeposits } from "./OrderRules.ts"
import { type DepositOutcome, type DepositRecord, type OrderRecord, OrderStore } from "./OrderStore.ts"
import { orderError } from "./PaymentErrors.ts"
import type { Transfer } from "./StablecoinRail.ts"

export interface DepositResult {
  /** How this transfer was classified (for a replay: as first recorded). */
  readonly outcome: DepositOutcome
  /** false when the transfer had been recorded before (a replay): nothing new was written. */
  readonly recorded: boolean
  /** The address's order after the transfer, null for an address no order owns. */
  readonly order: DepositSummary | null
}

/** `recordDeposit` and `deposits` of Orders; `settleOrder` is Fulfilment's. */
export const makeStablecoinDeposits = (settleOrder: (orderId: OrderId) => Effect.Effect<OrderRecord>) =>
  Effect.gen(function*() {
    const store = yield* OrderStore
    const payments = (yield* Catalogue).config.payments
    const nowMillis = Clock.currentTimeMillis

    const invalidTransfer = (message: string) => orderError("invalid_transfer", message)

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

    const deposits = Effect.fn("Orders.deposits")(function*(orderId: OrderId) {
      const order = yield* store.findOrder(orderId)
      if (order === undefined || order.deposit === null) {
        return yield* orderError("order_not_found", `No order "${orderId}" with a deposit address.`)
      }
      return yield* summary(order)
    })

    return { recordDeposit, deposits } as const
  })
