/**
 * Fulfilment of a paid order (docs/payments.md "Fulfilment, receipts, purchased credits"), for
 * every path that pays one (Orders: the platform's checkout, deposits; OffSessionCharges: automatic
 * top-ups and plan renewals; CardCheckouts: a processor's checkout, by its return page or its
 * webhook): the gift ticket or the credits (ledger ref = the order id), the plan or rental, then
 * the receipt, each idempotent, so it runs after every completion, first or replayed, and a replay
 * finishes a fulfilment a crash cut short.
 */
import { Effect, Option } from "effect"
import { generateId, type OrderId } from "../kernel/Ids.ts"
import { makePlans } from "../plans/Plans.ts"
import { PlanStore } from "../plans/PlanStore.ts"
import { type OrderRecord, OrderStore } from "./OrderStore.ts"
import { Ledger } from "../ledger/Ledger.ts"
import { CardProcessor } from "./CardProcessor.ts"
import { countsTowardTier, generateTicketCode, isAutoReloadOrder } from "./OrderRules.ts"

export const makeFulfilment = Effect.gen(function*() {
  const store = yield* OrderStore
  const ledger = yield* Ledger
  const plans = yield* makePlans
  const planStore = yield* PlanStore
  const processor = Option.getOrUndefined(yield* Effect.serviceOption(CardProcessor))

  /**
   * The card a new plan paid on the processor's page renews with, when the caller has not got it:
   * the processor saved it with the payment, so it is asked. This is the return page finding the
   * order paid by a webhook still settling it, or a fulfilment healed after a crash. Whichever
   * path makes the plan first makes it for good (PlanStore.insertSubscription), so none may make
   * it without its card.
   */
  const cardOf = Effect.fnUntraced(function*(order: OrderRecord, cardReference: string | null) {
    const details = order.details
    const newCardPlan = details?.kind === "subscription" && details.renew_subscription_id === null && order.paid_with === "card"
    if (cardReference !== null || !newCardPlan || processor?.pages !== "processor" || order.card_session_id === null) {
      return cardReference
    }
    // Made already (a person viewing the return page again): nothing to ask the processor for.
    if ((yield* planStore.subscriptions(order.account_id)).some((plan) => plan.order_id === order.id)) return null
    const result = yield* processor.checkoutResult(order.card_session_id)
    return result._tag === "Paid" && result.order_id === order.id ? result.saved_card?.reference ?? null : null
  })

  /** Fulfils a paid order (nothing for another); `cardReference`: the card saved at its checkout, for a plan. */
  const fulfil = Effect.fnUntraced(function*(order: OrderRecord, cardReference: string | null = null) {
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
    yield* plans.fulfil(order, yield* cardOf(order, cardReference))
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
      auto_reload: isAutoReloadOrder(order.id),
      counts_toward_tier: countsTowardTier(order.type)
    })
  })

  /** Reads the order back after a markPaid attempt and fulfils it when it is paid. */
  const settleOrder = Effect.fnUntraced(function*(orderId: OrderId, cardReference: string | null = null) {
    const order = yield* store.findOrder(orderId)
    if (order === undefined) return yield* Effect.die(new Error(`order ${orderId} vanished`))
    yield* fulfil(order, cardReference)
    return order
  })

  return { fulfil, settleOrder } as const
})
