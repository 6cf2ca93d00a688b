/**
 * The property of automatic top-ups (docs/billing.md "Automatic top-ups"), on any stores: for any
 * rounds of concurrent settlements that each take the balance from at or above the threshold to
 * below it, spread over several processes (each its own BillingWatch, TopUps and Ledger over the
 * shared stores, the card processor shared as Stripe is), and any interleaving of their store
 * operations (a fast-check scheduler gates every read and swap of the top-up state, every balance
 * read, reservation and settlement), the saved card is charged exactly once per crossing: as many
 * approved charges at the processor, paid receipts with auto_reload, credits and auto_reload_paid
 * alerts as rounds, and the balance is exactly the seed minus the charges plus the top-ups.
 */
import { assert, layer } from "@effect/vitest"
import {
  Alerts,
  AlertStore,
  BillingSettingsStore,
  BillingWatch,
  DEFAULT_BILLING_SETTINGS,
  TopUps
} from "@model-platform/core/billing"
import { Catalogue } from "@model-platform/core/catalogue"
import { generateId, MICRO_PER_CREDIT, Time } from "@model-platform/core/kernel"
import { Ledger, LedgerStore } from "@model-platform/core/ledger"
import type { AccountStore } from "@model-platform/core/keys"
import type { PlanStore } from "@model-platform/core/plans"
import { CardProcessor, OrderStore, TestCardProcessor } from "@model-platform/core/payments"
import { Clock, Context, Effect, Layer } from "effect"
import fc from "fast-check"
import { propertyCatalogue } from "./PropertyCatalogue.ts"

/** The plan store too: a top-up is fulfilled as every paid order is (payments/Fulfilment.ts). */
export type TopUpStores = AlertStore | LedgerStore | OrderStore | PlanStore | BillingSettingsStore | AccountStore

const THRESHOLD = 1_000n * MICRO_PER_CREDIT
const SEED = 1_500n * MICRO_PER_CREDIT
const AMOUNT_USD = 5
/** The kit's catalogue (PropertyCatalogue.ts) sells 1000 credits a dollar. */
const TOP_UP = BigInt(AMOUNT_USD) * 1_000n * MICRO_PER_CREDIT

const roundArb = fc.record({
  /** How far below the threshold the round ends (micro-credits; at most 20 credits). */
  below: fc.bigInt({ min: 1n, max: 20n * MICRO_PER_CREDIT }),
  /** The round's settlements: a weight (its share of the round's charge) and the process settling it. */
  calls: fc.array(fc.record({ weight: fc.integer({ min: 1, max: 1000 }), process: fc.nat() }), { minLength: 1, maxLength: 6 })
})

/** `total` split by the weights, every part positive (total is far above the number of parts). */
const split = (total: bigint, weights: ReadonlyArray<number>): ReadonlyArray<bigint> => {
  const sum = BigInt(weights.reduce((a, b) => a + b, 0))
  const parts = weights.map((w) => (total * BigInt(w)) / sum)
  parts[parts.length - 1] = total - parts.slice(0, -1).reduce((a, b) => a + b, 0n)
  return parts
}

/** Declares the property on `stores` (built once); `numRuns` runs of 1 to 3 rounds over 1 to 3 processes. */
export const topUpProperty = <E>(name: string, stores: Layer.Layer<TopUpStores, E>, numRuns: number): void =>
  layer(stores, { excludeTestServices: true, timeout: "300 seconds" })(name, (it) => {
    it.effect("concurrent settlements crossing the threshold charge exactly once per crossing (fast-check scheduler)", () =>
      Effect.gen(function*() {
        const shared = yield* Effect.context<TopUpStores>()
        const run = Effect.runPromiseWith(shared)
        yield* Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(fc.scheduler(), fc.integer({ min: 1, max: 3 }), fc.array(roundArb, { minLength: 1, maxLength: 3 }), (s, processes, rounds) =>
              run(Effect.scoped(Effect.gen(function*() {
                const gate = <A>(effect: Effect.Effect<A>) => Effect.andThen(Effect.promise(() => s.schedule(Promise.resolve())), effect)
                const account = yield* generateId("acct")

                // The processor is one, shared by the processes (Stripe keeps idempotency keys server side).
                const base = TestCardProcessor.make({ baseUrl: "" })
                const approved = new Set<string>()
                const processor = CardProcessor.of({
                  ...base,
                  chargeSaved: (charge) =>
                    Effect.tap(base.chargeSaved(charge), (o) => Effect.sync(() => o._tag === "Approved" && approved.add(charge.idempotency_key)))
                })

                const baseAlerts = yield* AlertStore
                const baseLedger = yield* LedgerStore
                const gatedStores = Layer.mergeAll(
                  Layer.succeed(AlertStore, AlertStore.of({
                    ...baseAlerts,
                    topUp: (a) => gate(baseAlerts.topUp(a)),
                    swapTopUp: (a, e, n) => gate(baseAlerts.swapTopUp(a, e, n))
                  })),
                  Layer.succeed(LedgerStore, LedgerStore.of({
                    ...baseLedger,
                    balances: (a) => gate(baseLedger.balances(a)),
                    reserve: (r) => gate(baseLedger.reserve(r)),
                    settle: (x) => gate(baseLedger.settle(x))
                  }))
                )
                const processLayer = Layer.mergeAll(BillingWatch.layer, Ledger.layer).pipe(
                  Layer.provideMerge(TopUps.layer.pipe(Layer.provideMerge(Alerts.layer), Layer.provide(Ledger.layer))),
                  Layer.provide(gatedStores),
                  Layer.provide(Layer.succeed(CardProcessor, processor)),
                  Layer.provide(Catalogue.layer(propertyCatalogue))
                )
                const contexts = yield* Effect.forEach(Array.from({ length: processes }), () => Layer.build(processLayer))

                // The seed and a saved card (the billing page's work), then automatic top-ups on.
                const ledger = Context.get(contexts[0]!, Ledger)
                yield* ledger.credit(account, { ref: "seed", machine_id: null, amount: SEED, type: "credit_added" })
                const saved = yield* base.saveCard(account, { number: "4242424242424242", exp_month: 12, exp_year: 2099, cvc: "123" })
                if (saved._tag !== "Saved") return assert.fail("the test card did not save")
                yield* (yield* BillingSettingsStore).update(account, {
                  auto_reload: {
                    ...DEFAULT_BILLING_SETTINGS.auto_reload,
                    enabled: true,
                    threshold: THRESHOLD,
                    amount_usd: AMOUNT_USD,
                    card: { processor: "test", reference: saved.reference, description: saved.description, saved_at: yield* Time.now }
                  }
                })

                const expiresAt = Time.toTimestamp((yield* Clock.currentTimeMillis) + 3_600_000)
                const settle = (process: number, amount: bigint) =>
                  Effect.gen(function*() {
                    const context = contexts[process % processes]!
                    const reserved = yield* Context.get(context, Ledger).reserve(account, null, amount, expiresAt)
                    if (reserved._tag !== "Reserved") return yield* Effect.die(new Error(`reserve: ${reserved._tag}`))
                    yield* Context.get(context, Ledger).settle(reserved.ref, amount)
                    yield* Context.get(context, BillingWatch).settled([account])
                  })

                let balance = SEED
                for (const round of rounds) {
                  // From at or above the threshold to `below` under it: one crossing.
                  const total = balance - THRESHOLD + round.below
                  const parts = split(total, round.calls.map((c) => c.weight))
                  const tasks = Effect.all(round.calls.map((c, i) => settle(c.process, parts[i]!)), { concurrency: "unbounded" })
                  yield* Effect.promise(() => s.waitFor(run(tasks)))
                  balance = balance - total + TOP_UP
                }

                const label = `${processes} process(es), rounds ${JSON.stringify(rounds.map((r) => r.calls.length))}`
                const posted = (yield* baseLedger.balances(account)).reduce((sum, b) => sum + b.posted, 0n)
                assert.strictEqual(approved.size, rounds.length, `charges at the processor: ${label}`)
                const receipts = (yield* (yield* OrderStore).listReceipts(account)).filter((r) => r.auto_reload)
                assert.strictEqual(receipts.length, rounds.length, `receipts: ${label}`)
                assert.strictEqual(posted, balance, `balance: ${label}`)
                const alerts = yield* baseAlerts.list(account, 200)
                assert.strictEqual(alerts.filter((a) => a.kind === "auto_reload_paid").length, rounds.length, `alerts: ${label}`)
                assert.deepStrictEqual(alerts.filter((a) => a.kind !== "auto_reload_paid"), [])
                const state = yield* baseAlerts.topUp(account)
                assert.strictEqual(state?.phase, "armed")
                assert.strictEqual(state?.last_error, null)
              })))),
            { numRuns }
          )
        )
      }))
  })
