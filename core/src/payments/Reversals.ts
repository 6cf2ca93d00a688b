/**
 * Refunds and disputes (docs/payments.md "Refunds and disputes"): a card processor reports that a
 * payment was refunded (in part or whole) or disputed by the card holder, and the credits that
 * payment bought are taken back through the ledger — a `credit_reversed` entry whose reference is
 * the processor's refund or dispute, so each is taken back once however often it is reported.
 *
 * - What is taken back: the order's credits in proportion to the amount reversed (a full refund,
 *   all of them; half the amount, half), rounded down to the micro-credit, in the scope the order
 *   credited (account-wide, or pinned to its machine), from the buyer's account (a gift's buyer
 *   too: the payment was theirs).
 * - Credits already spent leave that scope below zero: nothing more is spent from it (priced calls
 *   answer 402 insufficient_credit) until credits bought later bring it above zero again.
 * - A report for no order of the platform's, an order not paid, another currency or more than the
 *   order's amount changes nothing (logged). A plan or a rental grants no credits: its refund takes
 *   nothing back here (an operator ends the plan if they mean to).
 * - Purchased credits (the usage tier) count a reversal against the purchase
 *   (`netPurchasedCredits`); the receipt stays (the payment happened; the processor shows the
 *   refund), and the month's statement shows the purchased credits net of what was taken back.
 */
import { Context, Effect, Layer } from "effect"
import type { Reversal } from "./CardProcessor.ts"
import { LedgerStore } from "../ledger/LedgerStore.ts"
import { OrderStore } from "./OrderStore.ts"
import { Ledger } from "../ledger/Ledger.ts"
import type { AccountId } from "../kernel/Ids.ts"

/** What a reported reversal did. */
export type ReversalApplied = "reversed" | "already_reversed" | "unknown_order" | "mismatch" | "nothing_to_take"

/** The ledger reference of a reversal: unique per refund or dispute. */
export const reversalRef = (reversal: Pick<Reversal, "kind" | "reference">): string => `${reversal.kind}:${reversal.reference}`

/** The credits `amountCents` of an order's price takes back (rounded down). */
export const reversedCredits = (order: { readonly credits: bigint; readonly amount_cents: bigint }, amountCents: bigint): bigint =>
  order.amount_cents <= 0n ? 0n : (order.credits * amountCents) / order.amount_cents

/**
 * Credits bought in total (the usage tier): the paid credit and package orders (their receipts),
 * less the credits refunds and disputes took back. Never below zero.
 */
export const netPurchasedCredits = (orders: OrderStore["Service"], ledger: LedgerStore["Service"]) => (accountId: AccountId) =>
  Effect.zipWith(orders.purchasedCredits(accountId), ledger.creditTotals(accountId), (paid, totals) => {
    const reversed = totals.reduce((sum, t) => (t.type === "credit_reversed" ? sum + t.amount : sum), 0n)
    const net = paid + reversed
    return net > 0n ? net : 0n
  })

export class Reversals extends Context.Service<Reversals, {
  /** A refund or dispute the processor reported: the order's credits taken back once. */
  readonly apply: (reversal: Reversal) => Effect.Effect<ReversalApplied>
}>()("@model-platform/core/payments/Reversals") {
  static readonly layer: Layer.Layer<Reversals, never, OrderStore | Ledger> = Layer.effect(
    Reversals,
    Effect.gen(function*() {
      const store = yield* OrderStore
      const ledger = yield* Ledger

      const apply = Effect.fn("Reversals.apply")(function*(reversal: Reversal) {
        const about = `${reversal.kind} ${reversal.reference} of payment ${reversal.payment_id}`
        const order = reversal.order_id === null ? undefined : yield* store.findOrder(reversal.order_id)
        if (order === undefined) {
          yield* Effect.logWarning(`${about}: no order of the platform's (${reversal.order_id ?? "none named"}); nothing taken back`)
          return "unknown_order" as const
        }
        if (order.status !== "paid") {
          yield* Effect.logWarning(`${about}: order ${order.id} was never paid; nothing taken back`)
          return "nothing_to_take" as const
        }
        if (order.currency !== reversal.currency || reversal.amount_cents <= 0n || reversal.amount_cents > order.amount_cents) {
          yield* Effect.logWarning(`${about}: ${reversal.amount_cents} ${reversal.currency} does not fit order ${order.id}; nothing taken back`)
          return "mismatch" as const
        }
        const credits = reversedCredits(order, reversal.amount_cents)
        if (credits <= 0n) {
          yield* Effect.logInfo(`${about}: order ${order.id} granted no credits (${order.type}); nothing taken back`)
          return "nothing_to_take" as const
        }
        const posted = yield* ledger.reverse(order.account_id, { ref: reversalRef(reversal), machine_id: order.machine_id, amount: credits })
        return posted._tag === "Posted" ? "reversed" as const : "already_reversed" as const
      })

      return Reversals.of({ apply })
    })
  )
}
