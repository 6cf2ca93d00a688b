/**
 * The billing properties (docs/billing.md, docs/architecture.md "Money") on a caller's stores,
 * priced by the caller's own tables (BillingTables.ts: a catalogue's `models` and `tiers`, or
 * tables the arbitraries make, a new one per run):
 *
 * - conservation (LedgerStore, through core's Ledger): for any credits and any calls priced by the
 *   table (each reserving the cost of its upper bound, then settled at the cost of what it used or
 *   voided; replays included), every settlement charges exactly the call's cost (gateway/Metering.ts
 *   costOf), the posted balance is the credits minus the charges, nothing stays held, and the
 *   ledger's audit (entries = balances) finds nothing;
 * - no overspend (LedgerStore): concurrent priced calls on one account, fast-check's scheduler
 *   choosing the order of their store operations: after every operation no scope's available is
 *   below zero, and at the end the charges are at most the credits and equal what was taken;
 * - tiers only rise (OrderStore and LedgerStore): for any purchases (credit and package receipts;
 *   plans and rentals, which buy no credits; replays) and spending between them, the credits bought
 *   (payments/Reversals.ts netPurchasedCredits) are the receipts' sum, and the tier, its rpm and
 *   its monthly limit (billing/Tiers.ts) never fall: for the caller's tier table too, so a table
 *   whose limits fall as thresholds rise is reported.
 *
 * Each property declares its own suite on the layer (built once); every run works on a fresh
 * account. `numRuns` defaults to BILLING_PROPERTY_RUNS, else 30.
 */
import { assert, layer } from "@effect/vitest"
import { monthlyLimitAt, tierAt, tierTable, usageTierFor } from "@model-platform/core/billing"
import { costOf, pricesOf, type Quantities } from "@model-platform/core/gateway"
import { generateId, type Timestamp, toTimestamp } from "@model-platform/core/kernel"
import { Ledger, LedgerStore } from "@model-platform/core/ledger"
import { countsTowardTier, netPurchasedCredits, type OrderType, OrderStore } from "@model-platform/core/payments"
import { Effect, Layer } from "effect"
import fc from "fast-check"
import { type PriceTable, priceTableArb, type TierTable, tierTableArb } from "./BillingTables.ts"
import { schedulerGate } from "./SchedulerGate.ts"

export interface BillingPropertyOptions {
  /** Your price table (a catalogue's `models`); by default priceTableArb makes one per run. */
  readonly prices?: PriceTable | undefined
  /** Your tier table (a catalogue's `tiers`); by default tierTableArb makes one per run. */
  readonly tiers?: TierTable | undefined
  /** Runs per property; fewer on a slow store. */
  readonly numRuns?: number | undefined
}

const layerOptions = { excludeTestServices: true, timeout: "60 seconds" } as const
const NEVER: Timestamp = toTimestamp(Date.UTC(2100, 0, 1))
const runsOf = (options: BillingPropertyOptions) =>
  options.numRuns ?? Number(process.env["BILLING_PROPERTY_RUNS"] ?? 30)
const pricesArb = (options: BillingPropertyOptions) =>
  options.prices === undefined ? priceTableArb : fc.constant(options.prices)
const tiersArb = (options: BillingPropertyOptions) =>
  options.tiers === undefined ? tierTableArb : fc.constant(options.tiers)

/** A call: its model (an index into the table), its upper bound, and how much of it it used. */
const callArb = fc.record({
  model: fc.nat(),
  bound: fc.record({
    input_tokens: fc.bigInt({ min: 0n, max: 200_000n }),
    output_tokens: fc.bigInt({ min: 0n, max: 20_000n }),
    requests: fc.constantFrom(0n, 1n, 1n, 4n)
  }),
  /** The share of each bound quantity used, in thousandths. */
  used: fc.oneof(fc.constant(1000), fc.constant(0), fc.integer({ min: 0, max: 1000 })),
  voided: fc.boolean(),
  replay: fc.boolean()
})
type Call = typeof callArb extends fc.Arbitrary<infer A> ? A : never

const usedOf = (call: Call): Quantities => ({
  input_tokens: (call.bound.input_tokens * BigInt(call.used)) / 1000n,
  output_tokens: (call.bound.output_tokens * BigInt(call.used)) / 1000n,
  requests: call.bound.requests
})
const pricesFor = (table: PriceTable, call: Call) => pricesOf(table[call.model % table.length]!)

/** JSON with bigints as text, for failure messages. */
const show = (value: unknown) => JSON.stringify(value, (_, v) => typeof v === "bigint" ? `${v}` : v)

const postedOf = (store: LedgerStore["Service"], account: string) =>
  Effect.map(store.balances(account), (bs) => bs.reduce((sum, b) => sum + b.posted, 0n))

/** Conservation: the posted balance is the credits minus the calls' costs, to the micro-credit. */
export const conservationProperty = <E>(
  name: string,
  stores: Layer.Layer<LedgerStore, E>,
  options: BillingPropertyOptions = {}
): void =>
  layer(Ledger.layer.pipe(Layer.provideMerge(stores)), layerOptions)(name, (it) => {
    it.effect("property: the posted balance is the credits minus each priced call's exact cost", () =>
      Effect.gen(function*() {
        const services = yield* Effect.context<Ledger | LedgerStore>()
        const property = fc.asyncProperty(
          pricesArb(options),
          fc.array(fc.bigInt({ min: 1n, max: 50n * 1_000_000n }), { minLength: 1, maxLength: 3 }),
          fc.array(callArb, { maxLength: 12 }),
          (table, credits, calls) =>
            Effect.runPromiseWith(services)(Effect.gen(function*() {
              const ledger = yield* Ledger
              const store = yield* LedgerStore
              const account = yield* generateId("acct")
              let expected = 0n
              for (const amount of credits) {
                const ref = yield* generateId("order")
                const credit = { ref, machine_id: null, amount, type: "credit_added" as const }
                assert.strictEqual((yield* ledger.credit(account, credit))._tag, "Posted")
                assert.strictEqual((yield* ledger.credit(account, credit))._tag, "Duplicate", "a replayed credit adds nothing")
                expected += amount
              }
              for (const call of calls) {
                const prices = pricesFor(table, call)
                const bound = costOf(prices, call.bound)
                const reserved = yield* ledger.reserve(account, null, bound, NEVER)
                if (reserved._tag !== "Reserved") {
                  assert.isTrue(bound > expected, `refused ${reserved._tag} with ${expected} left for ${bound}`)
                  continue
                }
                if (call.voided) {
                  assert.strictEqual((yield* ledger.void(reserved.ref))._tag, "Voided")
                } else {
                  const cost = costOf(prices, usedOf(call))
                  const settled = yield* ledger.settle(reserved.ref, cost)
                  assert.isTrue(settled._tag === "Settled" && settled.charged === cost && settled.excess === 0n, `settled ${cost}: ${show(settled)}`)
                  expected -= cost
                }
                if (call.replay) assert.strictEqual((yield* ledger.settle(reserved.ref, bound))._tag, "NotPending", "a replayed settlement charges nothing")
              }
              const balances = yield* store.balances(account)
              assert.strictEqual(yield* postedOf(store, account), expected, "posted = credits - costs")
              assert.deepStrictEqual(balances.filter((b) => b.held !== 0n), [], "nothing held")
              assert.deepStrictEqual(yield* ledger.audit(account), [])
            }))
        )
        yield* Effect.promise(() => fc.assert(property, { numRuns: runsOf(options) }))
      }), 600_000)
  })

/** No overspend: under any interleaving of concurrent priced calls, no scope goes below zero. */
export const noOverspendProperty = <E>(
  name: string,
  stores: Layer.Layer<LedgerStore, E>,
  options: BillingPropertyOptions = {}
): void =>
  layer(stores, layerOptions)(name, (it) => {
    it.effect("property: concurrent priced calls never spend more than the credits (fc.scheduler)", () =>
      Effect.gen(function*() {
        const base = yield* LedgerStore
        const property = fc.asyncProperty(
          fc.scheduler(),
          pricesArb(options),
          fc.bigInt({ min: 0n, max: 5n * 1_000_000n }),
          fc.array(callArb, { minLength: 1, maxLength: 6 }),
          async (s, table, credits, calls) => {
            const account = await Effect.runPromise(generateId("acct"))
            const violations: Array<string> = []
            const check = (label: string) =>
              Effect.map(base.balances(account), (bs) => {
                for (const b of bs) if (b.posted - b.held < 0n) violations.push(`${label}: ${b.machine_id ?? "account"} available ${b.posted - b.held}`)
              })
            const gate = schedulerGate(s, check)
            const gated = LedgerStore.of({
              ...base,
              reserve: (r) => gate("reserve", base.reserve(r)),
              ...(base.reserveInOrder === undefined ? {} : { reserveInOrder: (r) => gate("reserveInOrder", base.reserveInOrder!(r)) }),
              settle: (x) => gate("settle", base.settle(x)),
              void: (ref, at) => gate("void", base.void(ref, at))
            })
            const ledger = await Effect.runPromise(
              Effect.provide(Effect.service(Ledger), Ledger.layer.pipe(Layer.provide(Layer.succeed(LedgerStore, gated))))
            )
            if (credits > 0n) await Effect.runPromise(ledger.credit(account, { ref: "seed", machine_id: null, amount: credits, type: "credit_added" }))
            const charged = await s.waitFor(Effect.runPromise(Effect.all(
              calls.map((call) =>
                Effect.gen(function*() {
                  const prices = pricesFor(table, call)
                  const reserved = yield* ledger.reserve(account, null, costOf(prices, call.bound), NEVER)
                  if (reserved._tag !== "Reserved") return 0n
                  if (call.voided) {
                    yield* ledger.void(reserved.ref)
                    return 0n
                  }
                  const settled = yield* ledger.settle(reserved.ref, costOf(prices, usedOf(call)))
                  return settled._tag === "Settled" ? settled.charged : 0n
                })
              ),
              { concurrency: "unbounded" }
            )))
            const total = charged.reduce((sum, c) => sum + c, 0n)
            const posted = await Effect.runPromise(postedOf(base, account))
            assert.deepStrictEqual(violations, [])
            assert.isTrue(total <= credits, `charged ${total} of ${credits}`)
            assert.strictEqual(posted, credits - total, "posted = credits - charged")
          }
        )
        yield* Effect.promise(() => fc.assert(property, { numRuns: runsOf(options) }))
      }), 600_000)
  })

/** A purchase (a receipt of a kind) or spending between purchases. */
const tierStepArb = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant("buy" as const),
      order: fc.constantFrom<OrderType>("credits", "credits", "package", "subscription", "rental"),
      credits: fc.oneof(fc.bigInt({ min: 1n, max: 20_000n * 1_000_000n }), fc.bigInt({ min: 1n, max: 1_000_000n })),
      replay: fc.boolean()
    })
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("spend" as const), permille: fc.integer({ min: 1, max: 1000 }) }) }
)

/** Tiers only rise: buying moves an account up or leaves it; spending never moves it down. */
export const tiersOnlyRiseProperty = <E>(
  name: string,
  stores: Layer.Layer<OrderStore | LedgerStore, E>,
  options: BillingPropertyOptions = {}
): void =>
  layer(Ledger.layer.pipe(Layer.provideMerge(stores)), layerOptions)(name, (it) => {
    it.effect("property: the usage tier, its rpm and its monthly limit never fall as an account buys and spends", () =>
      Effect.gen(function*() {
        const services = yield* Effect.context<Ledger | LedgerStore | OrderStore>()
        const property = fc.asyncProperty(tiersArb(options), fc.array(tierStepArb, { minLength: 1, maxLength: 10 }), (tiers, steps) =>
          Effect.runPromiseWith(services)(Effect.gen(function*() {
            const ledger = yield* Ledger
            const store = yield* LedgerStore
            const orders = yield* OrderStore
            const purchasedOf = netPurchasedCredits(orders, store)
            const table = tierTable(tiers)
            const account = yield* generateId("acct")
            const standing = (purchased: bigint) => {
              const current = tierAt(table, purchased).current
              return {
                index: current === undefined ? -1 : table.tiers.indexOf(current),
                rpm: usageTierFor(tiers, purchased).rpm,
                limit: monthlyLimitAt(table, purchased)
              }
            }
            let bought = 0n
            let before = standing(0n)
            assert.strictEqual(yield* purchasedOf(account), 0n)
            for (const [i, step] of steps.entries()) {
              if (step.kind === "buy") {
                const orderId = yield* generateId("ord")
                const receipt = {
                  id: yield* generateId("rcpt"),
                  account_id: account,
                  order_id: orderId,
                  kind: step.order,
                  title: `${step.order} ${i}`,
                  paid_at: toTimestamp(Date.UTC(2026, 0, 1) + i * 60_000),
                  amount_cents: 100n,
                  currency: "USD",
                  credits: step.order === "credits" || step.order === "package" ? step.credits : 0n,
                  paid_with: "card" as const,
                  auto_reload: false,
                  // As core flags it where receipts are made (payments/OrderRules.ts).
                  counts_toward_tier: countsTowardTier(step.order)
                }
                assert.strictEqual(yield* orders.insertReceipt(receipt), "inserted")
                if (step.replay) assert.strictEqual(yield* orders.insertReceipt({ ...receipt, id: yield* generateId("rcpt") }), "exists")
                if (receipt.credits > 0n) {
                  yield* ledger.credit(account, { ref: orderId, machine_id: null, amount: receipt.credits, type: "credit_added" })
                }
                bought += receipt.credits
              } else {
                const available = yield* postedOf(store, account)
                const amount = (available * BigInt(step.permille)) / 1000n
                const reserved = yield* ledger.reserve(account, null, amount, NEVER)
                if (reserved._tag === "Reserved") yield* ledger.settle(reserved.ref, amount)
              }
              const purchased = yield* purchasedOf(account)
              assert.strictEqual(purchased, bought, `step ${i}: credits bought`)
              const after = standing(purchased)
              const label = `step ${i} (${step.kind}): ${show(before)} -> ${show(after)}`
              assert.isAtLeast(after.index, before.index, `the tier fell: ${label}`)
              assert.isAtLeast(after.rpm, before.rpm, `the rpm fell: ${label}`)
              assert.isTrue(before.limit === null || (after.limit !== null && after.limit >= before.limit), `the monthly limit fell: ${label}`)
              before = after
            }
          })))
        yield* Effect.promise(() => fc.assert(property, { numRuns: runsOf(options) }))
      }), 600_000)
  })

/** Every billing property on stores that hold them all. */
export const billingProperties = <E>(
  name: string,
  stores: Layer.Layer<OrderStore | LedgerStore, E>,
  options: BillingPropertyOptions = {}
): void => {
  conservationProperty(`${name}: conservation`, stores, options)
  noOverspendProperty(`${name}: no overspend`, stores, options)
  tiersOnlyRiseProperty(`${name}: tiers only rise`, stores, options)
}
