/**
 * Orders paid on a card processor's own checkout page (Stripe Checkout; docs/payments.md "Card:
 * a processor's own checkout"). The platform learns what happened there twice: when the person
 * comes back to `<base>/checkout/<session>` (`returned`, which asks the processor), and from the
 * processor's signed webhook (CardEvents.ts). Both hand the processor's report of a payment to
 * `applyPaid`, so whichever arrives first pays the order and the other finds it paid: one
 * conditional write (OrderStore.markPaid), then the idempotent fulfilment (Fulfilment.ts).
 *
 * A report is checked against the stored order before anything is credited: the order must
 * exist, be the account's the processor names, and the amount and currency paid must be the
 * order's exactly. A report that fails a check changes nothing (and is logged for an operator:
 * money arrived that pays nothing). The order is paid at the time the processor took the
 * payment, so a payment made before the window closed pays it even when reported after.
 */
import { Clock, Context, Effect, Layer } from "effect"
import { CardSetups } from "./CardSetups.ts"
import type { CheckoutInfo } from "../payments/Orders.ts"
import { billingError, type BillingErrorOf } from "./BillingErrors.ts"
import type { CheckoutResult } from "../payments/CardProcessor.ts"
import { CardProcessor } from "../payments/CardProcessor.ts"
import { type OrderRecord, OrderStore } from "../payments/OrderStore.ts"
import { PlanStore } from "../plans/PlanStore.ts"
import * as Time from "../kernel/Time.ts"
import { makeFulfilment } from "../payments/Fulfilment.ts"
import { Ledger } from "../ledger/Ledger.ts"
import { checkoutInfoOf } from "../payments/OrderRules.ts"
import type { AccountId } from "../kernel/Ids.ts"

export type PaidReport = Extract<CheckoutResult, { readonly _tag: "Paid" }>

/**
 * What a report of a payment did: paid the order; found it paid (by this report's twin, or
 * before); or nothing, because no order has its id, it does not match the order, or the order's
 * window had closed when it was paid.
 */
export type PaymentApplied = "paid" | "already_paid" | "unknown_order" | "mismatch" | "expired"

/** What the return page shows. */
export type ReturnView =
  | { readonly _tag: "Paid"; readonly info: CheckoutInfo }
  | { readonly _tag: "Expired"; readonly info: CheckoutInfo }
  | { readonly _tag: "NotPaid"; readonly info: CheckoutInfo; readonly state: "open" | "processing" | "failed"; readonly pay_url: string | null }

/** Why a report does not match its order, or undefined when it does. */
export const reportMismatch = (
  order: { readonly account_id: AccountId; readonly amount_cents: bigint; readonly currency: string },
  paid: PaidReport
): string | undefined =>
  order.account_id !== paid.account_id
    ? `it names account ${paid.account_id}, the order is account ${order.account_id}'s`
    : order.amount_cents !== paid.amount_cents || order.currency !== paid.currency
    ? `${paid.amount_cents} ${paid.currency} were paid for an order of ${order.amount_cents} ${order.currency}`
    : undefined

export class CardCheckouts extends Context.Service<CardCheckouts, {
  /** A processor's report that an order was paid: checked, then the order paid once and fulfilled. */
  readonly applyPaid: (paid: PaidReport) => Effect.Effect<PaymentApplied>
  /** A person back from the processor's page: what the order is now, after asking the processor (404 checkout_not_found). */
  readonly returned: (sessionId: string) => Effect.Effect<ReturnView, BillingErrorOf<"checkout_not_found">>
}>()("@model-platform/core/billing/CardCheckouts") {
  static readonly layer: Layer.Layer<CardCheckouts, never, OrderStore | PlanStore | Ledger | CardProcessor | CardSetups> = Layer.effect(
    CardCheckouts,
    Effect.gen(function*() {
      const store = yield* OrderStore
      const processor = yield* CardProcessor
      const { fulfil, settleOrder } = yield* makeFulfilment
      const setups = yield* CardSetups

      /**
       * A purchase that kept its card (the billing page's): the card for automatic top-ups, once
       * per payment (CardSetups applies a report once). A plan keeps its card on the plan (settleOrder).
       */
      const keepCard = (order: OrderRecord, paid: PaidReport) =>
        paid.saved_card === null || order.details?.kind === "subscription" || order.paid_at === null
          ? Effect.void
          : Effect.asVoid(setups.record({
            _tag: "CardSaved",
            session_id: paid.payment_id,
            account_id: order.account_id,
            card: paid.saved_card,
            opened_at: Date.parse(order.paid_at)
          }))

      const applyPaid = Effect.fn("CardCheckouts.applyPaid")(function*(paid: PaidReport) {
        const order = yield* store.findOrder(paid.order_id)
        const about = `${processor.processor} payment ${paid.payment_id} for order ${paid.order_id}`
        if (order === undefined) {
          yield* Effect.logWarning(`${about}: no such order; nothing was credited (refund it at the processor)`)
          return "unknown_order" as const
        }
        const mismatch = reportMismatch(order, paid)
        if (mismatch !== undefined) {
          yield* Effect.logWarning(`${about} does not match the order (${mismatch}); nothing was credited (refund it at the processor)`)
          return "mismatch" as const
        }
        if (order.status === "paid") {
          // Completes a fulfilment a crash may have cut short (a no-op otherwise).
          yield* fulfil(order, paid.saved_card?.reference ?? null)
          yield* keepCard(order, paid)
          if (paid.session_id !== null && order.card_session_id !== null && paid.session_id !== order.card_session_id) {
            yield* Effect.logWarning(`${about}: the order was already paid through session ${order.card_session_id}; refund this one at the processor`)
          }
          return "already_paid" as const
        }
        const paidAt = Math.min(paid.paid_at, yield* Clock.currentTimeMillis)
        const won = yield* store.markPaid(order.id, "card", Time.toTimestamp(paidAt))
        const after = yield* settleOrder(order.id, paid.saved_card?.reference ?? null)
        if (after.status !== "paid") {
          yield* Effect.logWarning(`${about}: paid after the order's window closed; nothing was credited (refund it at the processor)`)
          return "expired" as const
        }
        yield* keepCard(after, paid)
        return won ? "paid" as const : "already_paid" as const
      })

      const returned = Effect.fn("CardCheckouts.returned")(function*(sessionId: string) {
        const order = yield* store.findByCardSession(sessionId)
        if (order === undefined) return yield* billingError("checkout_not_found", "No checkout has this address.")
        if (order.status === "paid") {
          yield* fulfil(order)
          return { _tag: "Paid", info: checkoutInfoOf(order, yield* Clock.currentTimeMillis) } satisfies ReturnView
        }
        const result = yield* processor.checkoutResult(sessionId)
        if (result._tag === "Paid" && result.order_id === order.id) yield* applyPaid(result)
        const after = (yield* store.findOrder(order.id)) ?? order
        const info = checkoutInfoOf(after, yield* Clock.currentTimeMillis)
        if (info.status === "paid") return { _tag: "Paid", info } satisfies ReturnView
        if (info.status === "expired" || result._tag === "Expired") return { _tag: "Expired", info } satisfies ReturnView
        const state = result._tag === "Processing" ? "processing" as const : result._tag === "Failed" ? "failed" as const : "open" as const
        return { _tag: "NotPaid", info, state, pay_url: after.checkout_url } satisfies ReturnView
      })

      return CardCheckouts.of({ applyPaid, returned })
    })
  )
}
