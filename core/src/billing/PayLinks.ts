/**
 * When an off-session charge fails (an automatic top-up, a card plan's renewal: the card was
 * declined, or its bank wants the person present, `authentication_required`), the person is
 * mailed a link to pay the same thing on-session (docs/billing.md "Automatic top-ups",
 * docs/plans.md "Renewals"): the failed charge's order, left pending, with a card checkout opened
 * for it (the processor's page, where the bank can ask for its authentication). Paying it pays
 * that order as any checkout does, once: the top-up's credits, or the plan's next period. Nothing
 * is charged again by itself: the link is the one way on, and it is sent once per failure (the
 * callers offer it only from the step that recorded the failure).
 *
 * The mail goes to the account's email whether or not it asked for alert mail: a payment it owes
 * is not an alert it may mute. The link is built on PUBLIC_URL (a job has no request); without it,
 * or without a mail sender, no link is sent and the log says why.
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import { PublicAddress } from "../kernel/RequestBaseUrl.ts"
import { formatUsd, payableAt } from "../payments/OrderRules.ts"
import { AccountStore } from "../keys/AccountStore.ts"
import { CardProcessor } from "../payments/CardProcessor.ts"
import { EmailSender } from "../kernel/EmailSender.ts"
import { type OrderRecord, OrderStore } from "../payments/OrderStore.ts"
import { storeOrderOnce } from "../payments/StoreOrderOnce.ts"
import * as Time from "../kernel/Time.ts"

/** The mail offering the link (plain text). */
export const payLinkMail = (to: string, order: OrderRecord, why: string, payUrl: string) => ({
  to,
  subject: `Model Platform: please pay ${formatUsd(order.amount_cents)} yourself`,
  text: [
    `${why}`,
    "",
    `${order.title}: ${formatUsd(order.amount_cents)}. Nothing was charged. To pay it yourself, open`,
    "",
    `    ${payUrl}`,
    "",
    `The link works until ${order.expires_at} (UTC). Nothing else is charged until you do, or until`,
    "you save a card or change the settings on the billing page."
  ].join("\n")
})

export class PayLinks extends Context.Service<PayLinks, {
  /**
   * Leaves `order` (the failed charge's, pending) to be paid on-session: stored unless it is,
   * a checkout opened for it, its link mailed to the account. Answers the link, or undefined
   * when none could be made or sent (logged).
   */
  readonly offer: (order: OrderRecord, why: string) => Effect.Effect<string | undefined>
}>()("@model-platform/core/billing/PayLinks") {
  static readonly layer: Layer.Layer<PayLinks, never, OrderStore | CardProcessor | AccountStore> = Layer.effect(
    PayLinks,
    Effect.gen(function*() {
      const store = yield* OrderStore
      const processor = yield* CardProcessor
      const accounts = yield* AccountStore
      const email = Option.getOrUndefined(yield* Effect.serviceOption(EmailSender))
      const publicUrl = (yield* PublicAddress).publicUrl?.replace(/\/+$/, "")

      const offer = (order: OrderRecord, why: string): Effect.Effect<string | undefined> =>
        Effect.gen(function*() {
          if (email === undefined || publicUrl === undefined || publicUrl === "") {
            yield* Effect.logWarning(
              `order ${order.id}: no link to pay it on-session was mailed (${email === undefined ? "no mail sender" : "PUBLIC_URL is not set"})`
            )
            return undefined
          }
          yield* storeOrderOnce(store, order)
          const stored = (yield* store.findOrder(order.id)) ?? order
          const now = yield* Clock.currentTimeMillis
          if (!payableAt(stored, now)) return undefined
          const session = stored.card_session_id !== null && stored.checkout_url !== null
            ? { session_id: stored.card_session_id, checkout_url: stored.checkout_url }
            : yield* processor.createSession({
              order_id: stored.id,
              account_id: stored.account_id,
              title: stored.title,
              amount_cents: stored.amount_cents,
              currency: stored.currency,
              base_url: publicUrl,
              save_card: false,
              expires_at: stored.expires_at
            })
          const started = yield* store.startPayment(stored.id, { method: "card", ...session }, stored.expires_at, Time.toTimestamp(now))
          const payUrl = started?.checkout_url ?? session.checkout_url
          const account = yield* accounts.get(stored.account_id)
          if (account === undefined) return undefined
          yield* email.send(payLinkMail(account.email, stored, why, payUrl)).pipe(
            Effect.catch((e) => Effect.logWarning(`order ${order.id}: the mail with its pay link was not sent`, { reason: e.reason }))
          )
          return payUrl
        }).pipe(
          // Offering a link never fails its caller (a job recording a failure): trouble is logged.
          Effect.catchCause((cause) => Effect.as(Effect.logError(`order ${order.id}: could not offer a link to pay it`, cause), undefined)),
          Effect.withSpan("PayLinks.offer")
        )

      return PayLinks.of({ offer })
    })
  )
}
