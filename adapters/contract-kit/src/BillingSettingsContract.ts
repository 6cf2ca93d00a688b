/**
 * The contract suite of the billing settings store port (core/src/billing/BillingSettingsStore.ts).
 * Every implementation runs it against its own layer:
 * `billingSettingsStoreContract("memory", BillingSettingsStoreMemory)`.
 *
 * The layer is shared by the suite's tests, so each works on fresh account ids and never assumes
 * an empty store.
 */
import { assert, describe, layer, type Vitest } from "@effect/vitest"
import {
  type BillingSettings,
  type BillingSettingsPatch,
  BillingSettingsStore,
  DEFAULT_BILLING_SETTINGS,
  type SavedCard
} from "@model-platform/core/billing"
import { generateId } from "@model-platform/core/kernel"
import { Effect, type Layer } from "effect"
import fc from "fast-check"
import { assertDies } from "./ContractSupport.ts"

const layerOptions = { excludeTestServices: true, timeout: "60 seconds" } as const
const unbounded = { concurrency: "unbounded" } as const

const freshAccount = generateId("acct")

const card: SavedCard = {
  processor: "test",
  reference: "pm_4242",
  description: "Visa •••• 4242, 12/31 — «ünïcödé» 'quoted' \"double\"",
  saved_at: "2026-11-23T10:20:30.456Z"
}


// ---- arbitraries for the property -------------------------------------------------------

const pointsArb = fc.uniqueArray(fc.integer({ min: 1, max: 100 }), { maxLength: 6 }).map((xs) => [...xs].sort((a, b) => a - b))
const cardArb = fc.option(
  fc.record({
    processor: fc.constantFrom("test", "stripe"),
    reference: fc.string({ minLength: 1, maxLength: 12 }),
    description: fc.string({ maxLength: 30 }),
    saved_at: fc.constant("2026-11-23T10:20:30.456Z")
  }),
  { nil: null }
)
const autoReloadArb = fc.record({
  enabled: fc.boolean(),
  threshold: fc.bigInt({ min: 0n, max: 2n ** 63n - 1n }),
  amount_usd: fc.integer({ min: 0, max: 5000 }),
  card: cardArb
})
const invoicingArb = fc.option(
  fc.record({
    state: fc.constant("requested" as const),
    note: fc.string({ maxLength: 60 }),
    requested_at: fc.constant("2026-11-23T11:00:00.000Z")
  }),
  { nil: null }
)
const patchArb: fc.Arbitrary<BillingSettingsPatch> = fc.record(
  { alert_points: pointsArb, alert_email: fc.boolean(), auto_reload: autoReloadArb, invoicing: invoicingArb },
  { requiredKeys: [] }
)

const settingsTests = (it: Vitest.MethodsNonLive<BillingSettingsStore>) => {
  describe("get and update", () => {
    it.effect("an account that never saved anything has the defaults", () =>
      Effect.gen(function*() {
        const store = yield* BillingSettingsStore
        assert.deepStrictEqual(yield* store.get(yield* freshAccount), DEFAULT_BILLING_SETTINGS)
      }))

    it.effect("an update replaces the sections it names, answers the record, and get reads the same", () =>
      Effect.gen(function*() {
        const store = yield* BillingSettingsStore
        const account = yield* freshAccount
        const first = yield* store.update(account, { alert_points: [50, 80, 100], alert_email: true })
        assert.deepStrictEqual(first, { ...DEFAULT_BILLING_SETTINGS, alert_points: [50, 80, 100], alert_email: true })
        assert.deepStrictEqual(yield* store.get(account), first)
        const autoReload = { enabled: true, threshold: 2n ** 62n + 7n, amount_usd: 25, card }
        const second = yield* store.update(account, { auto_reload: autoReload })
        assert.deepStrictEqual(second, { ...first, auto_reload: autoReload })
        const third = yield* store.update(account, { alert_points: [] })
        assert.deepStrictEqual(third, { ...second, alert_points: [] })
        assert.deepStrictEqual(yield* store.get(account), third)
      }))

    it.effect("an empty patch changes nothing and answers the record", () =>
      Effect.gen(function*() {
        const store = yield* BillingSettingsStore
        const account = yield* freshAccount
        assert.deepStrictEqual(yield* store.update(account, {}), DEFAULT_BILLING_SETTINGS)
        yield* store.update(account, { alert_email: true })
        assert.deepStrictEqual(yield* store.update(account, {}), { ...DEFAULT_BILLING_SETTINGS, alert_email: true })
      }))

    it.effect("null sections round-trip: invoicing set then cleared, a card removed", () =>
      Effect.gen(function*() {
        const store = yield* BillingSettingsStore
        const account = yield* freshAccount
        const invoicing = { state: "requested" as const, note: "Monthly invoice, please.\nPO 1234 — ünïcödé", requested_at: "2026-11-23T11:00:00.000Z" }
        assert.deepStrictEqual((yield* store.update(account, { invoicing })).invoicing, invoicing)
        assert.strictEqual((yield* store.update(account, { invoicing: null })).invoicing, null)
        yield* store.update(account, { auto_reload: { ...DEFAULT_BILLING_SETTINGS.auto_reload, card } })
        const removed = yield* store.update(account, { auto_reload: { ...DEFAULT_BILLING_SETTINGS.auto_reload, threshold: 7n, card: null } })
        assert.deepStrictEqual(removed.auto_reload, { ...DEFAULT_BILLING_SETTINGS.auto_reload, threshold: 7n })
        assert.deepStrictEqual(yield* store.get(account), removed)
      }))

    it.effect("accounts are independent", () =>
      Effect.gen(function*() {
        const store = yield* BillingSettingsStore
        const [a, b] = [yield* freshAccount, yield* freshAccount]
        yield* store.update(a, { alert_points: [10], alert_email: true })
        assert.deepStrictEqual(yield* store.get(b), DEFAULT_BILLING_SETTINGS)
        yield* store.update(b, { alert_points: [20] })
        assert.deepStrictEqual((yield* store.get(a)).alert_points, [10])
      }))

    it.effect("values the record refuses are defects and change nothing", () =>
      Effect.gen(function*() {
        const store = yield* BillingSettingsStore
        const account = yield* freshAccount
        const before = yield* store.update(account, { alert_points: [25], alert_email: true })
        const refused: ReadonlyArray<[string, BillingSettingsPatch]> = [
          ["a point of 0", { alert_points: [0, 50] }],
          ["a point above 100", { alert_points: [101] }],
          ["a fractional point", { alert_points: [12.5] }],
          ["points out of order", { alert_points: [80, 50] }],
          ["a point twice", { alert_points: [50, 50] }],
          ["a negative threshold", { alert_email: false, auto_reload: { ...DEFAULT_BILLING_SETTINGS.auto_reload, threshold: -1n } }],
          ["a threshold of 2^63", { auto_reload: { ...DEFAULT_BILLING_SETTINGS.auto_reload, threshold: 2n ** 63n } }],
          ["a negative amount", { auto_reload: { ...DEFAULT_BILLING_SETTINGS.auto_reload, amount_usd: -5 } }]
        ]
        for (const [what, patch] of refused) yield* assertDies(store.update(account, patch), what)
        assert.deepStrictEqual(yield* store.get(account), before)
      }))
  })

  describe("concurrency", () => {
    it.effect("concurrent updates of different sections all land", () =>
      Effect.gen(function*() {
        const store = yield* BillingSettingsStore
        const account = yield* freshAccount
        const autoReload = { enabled: true, threshold: 5_000_000n, amount_usd: 10, card }
        const invoicing = { state: "requested" as const, note: "n", requested_at: "2026-11-23T11:00:00.000Z" }
        const patches: ReadonlyArray<BillingSettingsPatch> = [
          { alert_points: [50, 90] },
          { alert_email: true },
          { auto_reload: autoReload },
          { invoicing }
        ]
        // Many rounds of the four at once: a read-then-write store loses one now and then.
        for (let round = 0; round < 10; round++) {
          const fresh = yield* freshAccount
          yield* Effect.all(patches.map((p) => store.update(fresh, p)), unbounded)
          assert.deepStrictEqual(yield* store.get(fresh), { alert_points: [50, 90], alert_email: true, auto_reload: autoReload, invoicing })
        }
        yield* Effect.all(patches.map((p) => store.update(account, p)), unbounded)
        assert.deepStrictEqual(yield* store.get(account), { alert_points: [50, 90], alert_email: true, auto_reload: autoReload, invoicing })
      }))

    it.effect("concurrent updates of one section leave one of the values sent, whole", () =>
      Effect.gen(function*() {
        const store = yield* BillingSettingsStore
        const account = yield* freshAccount
        const sent = Array.from({ length: 20 }, (_, i) => [i + 1, i + 50])
        yield* Effect.all(sent.map((alert_points) => store.update(account, { alert_points })), unbounded)
        const kept = (yield* store.get(account)).alert_points
        assert.isTrue(sent.some((s) => JSON.stringify(s) === JSON.stringify(kept)), `kept ${JSON.stringify(kept)}`)
      }))
  })

  it.effect("property: after any sequence of updates the record is the defaults with each section's last value", () =>
    Effect.gen(function*() {
      const services = yield* Effect.context<BillingSettingsStore>()
      const run = Effect.runPromiseWith(services)
      yield* Effect.promise(() =>
        fc.assert(
          fc.asyncProperty(fc.array(patchArb, { maxLength: 8 }), (patches) =>
            run(Effect.gen(function*() {
              const store = yield* BillingSettingsStore
              const account = yield* freshAccount
              let expected: BillingSettings = DEFAULT_BILLING_SETTINGS
              for (const patch of patches) {
                expected = { ...expected, ...patch }
                assert.deepStrictEqual(yield* store.update(account, patch), expected)
              }
              assert.deepStrictEqual(yield* store.get(account), expected)
            }))),
          { numRuns: 30 }
        )
      )
    }), 120_000)
}

/** Declares the billing settings store contract on `storeLayer` (built once for the suite). */
export const billingSettingsStoreContract = <E>(name: string, storeLayer: Layer.Layer<BillingSettingsStore, E>): void =>
  layer(storeLayer, layerOptions)(name, settingsTests)
