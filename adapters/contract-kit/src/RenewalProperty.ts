/**
 * The property of plan renewals (docs/plans.md "Renewals"), on any stores: for a card plan whose
 * period has ended, any number of renewal jobs spread over several processes (each its own Ledger
 * and Renewals over the shared stores, the card processor shared as Stripe is), maybe a person
 * cancelling meanwhile, and any interleaving of their store operations (a fast-check scheduler
 * gates every read and write of the plan and of the renewal's order), the plan is charged at most
 * once and exactly when it moves on:
 *
 * - one charge at the processor at most, one renewal order and one receipt at most;
 * - the plan ends at its old end or exactly one period later, and later iff the charge was approved
 *   and the order and its receipt exist;
 * - with a card that pays and no cancel, it is renewed (once); with a card that is declined, it is
 *   not, it stops renewing with the reason kept, and one plan_renewal_failed alert is raised.
 */
import { assert, layer } from "@effect/vitest"
import { Alerts, AlertStore, makeRenewals, renewalOrderId } from "@model-platform/core/billing"
import { Catalogue } from "@model-platform/core/catalogue"
import { generateId, Time } from "@model-platform/core/kernel"
import { Ledger } from "@model-platform/core/ledger"
import { CardProcessor, OrderStore, TestCardProcessor } from "@model-platform/core/payments"
import type { AccountStore } from "@model-platform/core/keys"
import type { BillingSettingsStore } from "@model-platform/core/billing"
import type { LedgerStore } from "@model-platform/core/ledger"
import { PlanStore, type SubscriptionRecord } from "@model-platform/core/plans"
import { Clock, Effect, Layer } from "effect"
import fc from "fast-check"
import { euCPlans, propertyCatalogue } from "./PropertyCatalogue.ts"

export type RenewalStores = PlanStore | OrderStore | LedgerStore | AlertStore | BillingSettingsStore | AccountStore

const DAY = 24 * 3_600_000
const PERIOD_DAYS = euCPlans.period_days

const scenarioArb = fc.record({
  processes: fc.integer({ min: 1, max: 3 }),
  /** Each job run: the process running it. */
  jobs: fc.array(fc.nat(), { minLength: 1, maxLength: 5 }),
  /** The saved card pays, or is declined (it has expired). */
  pays: fc.boolean(),
  /** A person cancels the plan while the jobs run. */
  cancels: fc.boolean()
})

/** Declares the property on `stores` (built once); `numRuns` scenarios. */
export const renewalProperty = <E>(name: string, stores: Layer.Layer<RenewalStores, E>, numRuns: number): void =>
  layer(stores, { excludeTestServices: true, timeout: "300 seconds" })(name, (it) => {
    it.effect("concurrent renewal jobs charge a due card plan at most once, and move it exactly when charged (fast-check scheduler)", () =>
      Effect.gen(function*() {
        const shared = yield* Effect.context<RenewalStores>()
        const run = Effect.runPromiseWith(shared)
        yield* Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(fc.scheduler(), scenarioArb, (s, scenario) =>
              run(Effect.scoped(Effect.gen(function*() {
                const gate = <A>(effect: Effect.Effect<A>) => Effect.andThen(Effect.promise(() => s.schedule(Promise.resolve())), effect)
                const account = yield* generateId("acct")

                // The processor is one, shared by the processes (Stripe keeps idempotency keys server side).
                const base = TestCardProcessor.make({ baseUrl: "" })
                const approved = new Set<string>()
                const charged = new Set<string>()
                const processor = CardProcessor.of({
                  ...base,
                  chargeSaved: (charge) =>
                    Effect.tap(base.chargeSaved(charge), (o) =>
                      Effect.sync(() => {
                        charged.add(charge.idempotency_key)
                        if (o._tag === "Approved") approved.add(charge.idempotency_key)
                      }))
                })

                const plans = yield* PlanStore
                const orders = yield* OrderStore
                const gatedStores = Layer.mergeAll(
                  Layer.succeed(PlanStore, PlanStore.of({
                    ...plans,
                    subscription: (id) => gate(plans.subscription(id)),
                    renew: (r) => gate(plans.renew(r)),
                    failRenewal: (id, end, error) => gate(plans.failRenewal(id, end, error)),
                    dueRenewals: (before, limit) => gate(plans.dueRenewals(before, limit))
                  })),
                  Layer.succeed(OrderStore, OrderStore.of({
                    ...orders,
                    findOrder: (id) => gate(orders.findOrder(id)),
                    insertOrder: (o) => gate(orders.insertOrder(o)),
                    markPaid: (id, w, at) => gate(orders.markPaid(id, w, at))
                  }))
                )
                const processLayer = Layer.mergeAll(Ledger.layer, Alerts.layer).pipe(
                  Layer.provideMerge(Layer.mergeAll(gatedStores, Layer.succeed(CardProcessor, processor), Catalogue.layer(propertyCatalogue)))
                )
                const renewers = yield* Effect.forEach(Array.from({ length: scenario.processes }), () =>
                  Effect.flatMap(Layer.build(processLayer), (context) => Effect.provideContext(makeRenewals, context)))

                // A Basic plan on m-eu-c (the kit catalogue's offer) whose period ended a minute ago, its card saved at checkout.
                const now = yield* Clock.currentTimeMillis
                const saved = scenario.pays
                  ? yield* base.saveCard(account, { number: "4242424242424242", exp_month: 12, exp_year: 2099, cvc: "123" })
                  : undefined
                const plan: SubscriptionRecord = {
                  id: yield* generateId("sub"), account_id: account, order_id: yield* generateId("ord"), machine_id: "m-eu-c",
                  plan_id: "basic", paid_with: "card", auto_renews: true, cancel_at_period_end: false,
                  current_period_start: Time.toTimestamp(now - PERIOD_DAYS * DAY - 60_000),
                  current_period_end: Time.toTimestamp(now - 60_000), created_at: Time.toTimestamp(now - PERIOD_DAYS * DAY - 60_000),
                  // Declined: a card that expired in January 2020.
                  card_reference: saved?._tag === "Saved" ? saved.reference : "pm_test_4242_012020_expiredcard0",
                  renewal_error: null
                }
                yield* plans.insertSubscription(plan)

                const tasks = [
                  ...scenario.jobs.map((p) => renewers[p % scenario.processes]!.renewDue()),
                  ...(scenario.cancels
                    ? [gate(plans.setRenewal(account, plan.id, { auto_renews: false, cancel_at_period_end: true }))]
                    : [])
                ]
                yield* Effect.promise(() => s.waitFor(run(Effect.all(tasks, { concurrency: "unbounded" }))))

                const label = JSON.stringify(scenario)
                const after = (yield* plans.subscription(plan.id))!
                const orderId = renewalOrderId(plan)
                const order = yield* orders.findOrder(orderId)
                const receipts = (yield* orders.listReceipts(account)).filter((r) => r.order_id === orderId)
                const nextEnd = Time.toTimestamp(Date.parse(plan.current_period_end) + PERIOD_DAYS * DAY)
                assert.isAtMost(charged.size, 1, `one charge at most: ${label}`)
                assert.isAtMost(receipts.length, 1, `one receipt at most: ${label}`)
                const renewed = after.current_period_end === nextEnd
                assert.isTrue(renewed || after.current_period_end === plan.current_period_end, `the end moved by one period or not at all: ${label}`)
                assert.strictEqual(renewed, approved.size === 1, `renewed iff charged: ${label}`)
                assert.strictEqual(renewed, order?.status === "paid" && receipts.length === 1, `renewed iff its order is paid with a receipt: ${label}`)
                const failedAlerts = (yield* (yield* AlertStore).list(account, 50)).filter((a) => a.kind === "plan_renewal_failed")
                if (scenario.pays && !scenario.cancels) assert.isTrue(renewed, `a card that pays renews it: ${label}`)
                if (!scenario.pays) {
                  assert.isFalse(renewed, label)
                  // A cancel may come first: then nothing was charged and nothing failed.
                  if (charged.size === 1) {
                    assert.deepStrictEqual([after.auto_renews, after.renewal_error?.includes("expired_card")], [false, true], label)
                    assert.strictEqual(failedAlerts.length, 1, `one alert: ${label}`)
                  }
                }
                if (scenario.pays) assert.strictEqual(failedAlerts.length, 0, label)
              })))),
            { numRuns }
          )
        )
      }))
  })
