/**
 * The contract suite of the alert store port (core/src/billing/AlertStore.ts). Every implementation
 * runs it against its own layer: `alertStoreContract("memory", AlertStoreMemory)`.
 *
 * The layer is shared by the suite's tests, so each works on fresh account ids and never assumes
 * an empty store.
 */
import { assert, describe, layer, type Vitest } from "@effect/vitest"
import { generateId } from "@model-platform/core/kernel"
import { type AlertKind, type AlertRecord, AlertStore, type TopUpState } from "@model-platform/core/billing"
import { Effect, type Layer } from "effect"
import fc from "fast-check"
import { assertDies } from "./ContractSupport.ts"

const layerOptions = { excludeTestServices: true, timeout: "60 seconds" } as const
const unbounded = { concurrency: "unbounded" } as const

const freshAccount = generateId("acct")

const alertOf = (accountId: string, overrides: Partial<AlertRecord> = {}) =>
  Effect.map(generateId("alrt"), (id): AlertRecord => ({
    id,
    account_id: accountId,
    kind: "org_spend",
    target: "account",
    period: "2026-11",
    point: 50,
    message: "Spend passed 50 % of the monthly limit — «ünïcödé» 'quoted' \"double\"\nsecond line",
    seen: false,
    created_at: "2026-11-23T10:20:30.456Z",
    ...overrides
  }))

const stateOf = (version: number, overrides: Partial<TopUpState> = {}): TopUpState => ({
  version,
  phase: "armed",
  order_id: null,
  day: "2026-11-23",
  charges_on_day: 0,
  last_error: null,
  updated_at: "2026-11-23T10:20:30.456Z",
  ...overrides
})


const alertTests = (it: Vitest.MethodsNonLive<AlertStore>) => {
  describe("alerts", () => {
    it.effect("a raised alert reads back whole; raising its identity again changes nothing", () =>
      Effect.gen(function*() {
        const store = yield* AlertStore
        const account = yield* freshAccount
        const alert = yield* alertOf(account)
        assert.strictEqual(yield* store.raise(alert), "raised")
        assert.deepStrictEqual(yield* store.list(account, 50), [alert])
        const again = yield* alertOf(account, { message: "another text", created_at: "2026-11-24T00:00:00.000Z" })
        assert.strictEqual(yield* store.raise(again), "exists")
        assert.deepStrictEqual(yield* store.list(account, 50), [alert])
      }))

    it.effect("each part of the identity makes another alert: kind, target, period, point, account", () =>
      Effect.gen(function*() {
        const store = yield* AlertStore
        const [account, other] = [yield* freshAccount, yield* freshAccount]
        const variants: ReadonlyArray<Partial<AlertRecord>> = [
          {},
          { kind: "low_balance", point: 0 },
          { target: "key_1", kind: "key_monthly_limit_reached", point: 0 },
          { period: "2026-12" },
          { point: 100 },
          { point: 0 },
          { account_id: other }
        ]
        for (const v of variants) assert.strictEqual(yield* store.raise(yield* alertOf(account, v)), "raised", JSON.stringify(v))
        assert.strictEqual((yield* store.list(account, 50)).length, variants.length - 1)
        assert.strictEqual((yield* store.list(other, 50)).length, 1)
      }))

    it.effect("newest first (equal instants: greater id first), at most limit, only the account's", () =>
      Effect.gen(function*() {
        const store = yield* AlertStore
        const [account, other] = [yield* freshAccount, yield* freshAccount]
        const times = ["2026-11-02T00:00:00.000Z", "2026-11-01T00:00:00.000Z", "2026-11-03T00:00:00.000Z", "2026-11-02T00:00:00.000Z"]
        const raised: Array<AlertRecord> = []
        for (const [i, created_at] of times.entries()) {
          const alert = yield* alertOf(account, { point: i + 1, created_at })
          yield* store.raise(alert)
          raised.push(alert)
        }
        yield* store.raise(yield* alertOf(other, { created_at: "2026-12-01T00:00:00.000Z" }))
        const expected = [...raised].sort((a, b) => (a.created_at === b.created_at ? (a.id < b.id ? 1 : -1) : a.created_at < b.created_at ? 1 : -1))
        assert.deepStrictEqual(yield* store.list(account, 50), expected)
        assert.deepStrictEqual(yield* store.list(account, 2), expected.slice(0, 2))
        assert.deepStrictEqual(yield* store.list(yield* freshAccount, 50), [])
      }))

    it.effect("markSeen marks the account's own alerts once; others' and unknown ids are ignored", () =>
      Effect.gen(function*() {
        const store = yield* AlertStore
        const [account, other] = [yield* freshAccount, yield* freshAccount]
        const a = yield* alertOf(account, { point: 10 })
        const b = yield* alertOf(account, { point: 20 })
        const theirs = yield* alertOf(other)
        for (const x of [a, b, theirs]) yield* store.raise(x)
        assert.strictEqual(yield* store.markSeen(account, [a.id, theirs.id, "alrt_unknown", a.id]), 1)
        assert.strictEqual(yield* store.markSeen(account, [a.id]), 0)
        assert.strictEqual(yield* store.markSeen(account, []), 0)
        const seen = new Map((yield* store.list(account, 50)).map((x) => [x.id, x.seen]))
        assert.deepStrictEqual([seen.get(a.id), seen.get(b.id)], [true, false])
        assert.isFalse((yield* store.list(other, 50))[0]!.seen)
      }))

    it.effect("concurrent raises of one alert: exactly one is raised", () =>
      Effect.gen(function*() {
        const store = yield* AlertStore
        for (let round = 0; round < 5; round++) {
          const account = yield* freshAccount
          const copies = yield* Effect.all(Array.from({ length: 12 }, () => alertOf(account, { kind: "monthly_limit_reached", point: 0 })))
          const answers = yield* Effect.all(copies.map(store.raise), unbounded)
          assert.strictEqual(answers.filter((a) => a === "raised").length, 1)
          assert.strictEqual((yield* store.list(account, 50)).length, 1)
        }
      }))

    it.effect("broken alerts are defects and change nothing", () =>
      Effect.gen(function*() {
        const store = yield* AlertStore
        const account = yield* freshAccount
        const broken: ReadonlyArray<[string, Partial<AlertRecord>]> = [
          ["a point above 100", { point: 101 }],
          ["a negative point", { point: -1 }],
          ["a fractional point", { point: 12.5 }],
          ["a month 13", { period: "2026-13" }],
          ["a day as period", { period: "2026-11-01" }],
          ["an unknown kind", { kind: "weather" as AlertKind }],
          ["an empty target", { target: "" }]
        ]
        for (const [what, overrides] of broken) yield* assertDies(store.raise(yield* alertOf(account, overrides)), what)
        assert.deepStrictEqual(yield* store.list(account, 50), [])
      }))

    it.effect("property: after any raises the account holds one alert per identity, the first raised", () =>
      Effect.gen(function*() {
        const services = yield* Effect.context<AlertStore>()
        const run = Effect.runPromiseWith(services)
        const raiseArb = fc.record({
          kind: fc.constantFrom<AlertKind>("org_spend", "low_balance", "auto_reload_paid"),
          target: fc.constantFrom("account", "ord_1"),
          period: fc.constantFrom("2026-11", "2026-12"),
          point: fc.constantFrom(0, 50, 100)
        })
        yield* Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(fc.array(raiseArb, { maxLength: 12 }), (raises) =>
              run(Effect.gen(function*() {
                const store = yield* AlertStore
                const account = yield* freshAccount
                const first = new Map<string, AlertRecord>()
                for (const r of raises) {
                  const alert = yield* alertOf(account, r)
                  const key = JSON.stringify([r.kind, r.target, r.period, r.point])
                  const answer = yield* store.raise(alert)
                  assert.strictEqual(answer, first.has(key) ? "exists" : "raised")
                  if (!first.has(key)) first.set(key, alert)
                }
                const listed = yield* store.list(account, 200)
                assert.deepStrictEqual(new Set(listed.map((a) => a.id)), new Set([...first.values()].map((a) => a.id)))
              }))),
            { numRuns: 25 }
          )
        )
      }), 120_000)
  })

  describe("top-up state", () => {
    it.effect("none at first; the first swap expects none; each swap expects the version it follows", () =>
      Effect.gen(function*() {
        const store = yield* AlertStore
        const account = yield* freshAccount
        assert.strictEqual(yield* store.topUp(account), undefined)
        const first = stateOf(1, { phase: "charging", order_id: "ord_auto_1", charges_on_day: 1 })
        assert.isTrue(yield* store.swapTopUp(account, undefined, first))
        assert.deepStrictEqual(yield* store.topUp(account), first)
        assert.isFalse(yield* store.swapTopUp(account, undefined, stateOf(1)))
        const second = stateOf(2, { phase: "below", order_id: "ord_auto_1", last_error: "Your card was declined. «ü»", charges_on_day: 1 })
        assert.isTrue(yield* store.swapTopUp(account, 1, second))
        assert.isFalse(yield* store.swapTopUp(account, 1, stateOf(2)))
        assert.deepStrictEqual(yield* store.topUp(account), second)
        assert.strictEqual(yield* store.topUp(yield* freshAccount), undefined)
      }))

    it.effect("concurrent swaps from one version: exactly one lands", () =>
      Effect.gen(function*() {
        const store = yield* AlertStore
        for (let round = 0; round < 5; round++) {
          const account = yield* freshAccount
          const firsts = yield* Effect.all(
            Array.from({ length: 8 }, (_, i) => store.swapTopUp(account, undefined, stateOf(1, { order_id: `ord_${i}`, phase: "charging" }))),
            unbounded
          )
          assert.strictEqual(firsts.filter(Boolean).length, 1)
          const nexts = yield* Effect.all(
            Array.from({ length: 8 }, (_, i) => store.swapTopUp(account, 1, stateOf(2, { order_id: `ord_${i}`, phase: "below" }))),
            unbounded
          )
          assert.strictEqual(nexts.filter(Boolean).length, 1)
          assert.strictEqual((yield* store.topUp(account))?.version, 2)
        }
      }))

    it.effect("a swap whose version does not follow, or a charging state without its order, is a defect", () =>
      Effect.gen(function*() {
        const store = yield* AlertStore
        const account = yield* freshAccount
        yield* assertDies(store.swapTopUp(account, undefined, stateOf(2)), "version 2 from none")
        yield* assertDies(store.swapTopUp(account, 3, stateOf(3)), "version 3 from 3")
        yield* assertDies(store.swapTopUp(account, undefined, stateOf(1, { phase: "charging" })), "charging without order")
        assert.strictEqual(yield* store.topUp(account), undefined)
      }))
  })
}

/** Declares the alert store contract on `storeLayer` (built once for the suite). */
export const alertStoreContract = <E>(name: string, storeLayer: Layer.Layer<AlertStore, E>): void =>
  layer(storeLayer, layerOptions)(name, alertTests)
