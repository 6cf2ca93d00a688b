/**
 * One charge of a saved card while nobody is there, recorded as a paid order (docs/payments.md
 * "Saved cards and off-session charges"): the one path of automatic top-ups (billing/TopUp.ts)
 * and card plans' renewals (billing/Renewals.ts).
 *
 * The order's id is the charge's idempotency key, and every step after an approval is idempotent
 * (the order stored unless it is, OrderStore.markPaid once, then Fulfilment: credits, plan,
 * receipt), so running the same order again — a process resuming a charge another one left, a
 * renewal job run twice — charges once and records once. A paid order whose fulfilment a crash cut
 * short is also finished by Orders.healPaid.
 */
import { Clock, Effect } from "effect"
import * as Time from "../kernel/Time.ts"
import { CardProcessor, type DeclineReason } from "./CardProcessor.ts"
import { makeFulfilment } from "./Fulfilment.ts"
import { type OrderRecord, OrderStore } from "./OrderStore.ts"
import { storeOrderOnce } from "./StoreOrderOnce.ts"

/** What an off-session charge came to: its order paid and fulfilled, or the processor's refusal. */
export type OffSessionOutcome =
  | { readonly _tag: "Paid"; readonly order: OrderRecord }
  | { readonly _tag: "Declined"; readonly reason: DeclineReason; readonly message: string }

export const makeOffSessionCharges = Effect.gen(function*() {
  const store = yield* OrderStore
  const processor = yield* CardProcessor
  const { settleOrder } = yield* makeFulfilment

  /**
   * Charges `order` (pending, as it is to be stored: its amount, title as the charge's description)
   * to the saved card `cardReference`. Approved: the order stored, paid by card now and fulfilled.
   * Declined: nothing is written (the caller decides what the person is told).
   */
  const charge = Effect.fn("OffSessionCharges.charge")(function*(order: OrderRecord, cardReference: string) {
    const outcome = yield* processor.chargeSaved({
      reference: cardReference,
      account_id: order.account_id,
      amount_cents: order.amount_cents,
      currency: order.currency,
      description: order.title,
      idempotency_key: order.id
    })
    if (outcome._tag === "Declined") return outcome satisfies OffSessionOutcome
    const paidAt = yield* Clock.currentTimeMillis
    yield* storeOrderOnce(store, order)
    yield* store.markPaid(order.id, "card", Time.toTimestamp(paidAt))
    const paid = yield* settleOrder(order.id)
    // The card was charged: an order that cannot be paid (its window closed before it was
    // recorded) is money taken for nothing, which must not pass quietly.
    if (paid.status !== "paid") return yield* Effect.die(new Error(`off-session charge of order ${order.id} approved, but the order is ${paid.status}`))
    return { _tag: "Paid", order: paid } satisfies OffSessionOutcome
  })

  return { charge } as const
})
