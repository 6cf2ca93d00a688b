/**
 * The contract suite of the plan store port (core/src/plans/PlanStore.ts). Every implementation
 * runs it against its own layer: `planStoreContract("memory", PlanStoreMemory)`.
 *
 * The layer is built once per suite and shared by its tests, so every test works on fresh random
 * ids and never assumes an empty store. Times are explicit.
 */
import { assert, describe, layer, type Vitest } from "@effect/vitest"
import { Effect, type Layer } from "effect"
import { generateId } from "@model-platform/core/kernel"
import { type PlanRenewal, PlanStore, type RentalRecord, type SubscriptionRecord } from "@model-platform/core/plans"
import { assertDies } from "./ContractSupport.ts"
import { at } from "./SampleRecords.ts"

const layerOptions = { excludeTestServices: true, timeout: "60 seconds" } as const
const HOUR = 3_600_000
const DAY = 24 * HOUR
const unbounded = { concurrency: "unbounded" } as const

const makePlan = Effect.fnUntraced(function*(accountId: string, overrides: Partial<SubscriptionRecord> = {}) {
  const record: SubscriptionRecord = {
    id: yield* generateId("sub"),
    account_id: accountId,
    order_id: yield* generateId("ord"),
    machine_id: "eu-gpu-1",
    plan_id: "builder",
    paid_with: "card",
    auto_renews: true,
    cancel_at_period_end: false,
    current_period_start: at(0),
    current_period_end: at(30 * DAY),
    created_at: at(0),
    card_reference: "pm_test_4242_1230_x",
    renewal_error: null,
    ...overrides
  }
  return record
})

const makeRental = Effect.fnUntraced(function*(accountId: string, overrides: Partial<RentalRecord> = {}) {
  const record: RentalRecord = {
    id: yield* generateId("rent"),
    account_id: accountId,
    order_id: yield* generateId("ord"),
    machine_id: "eu-gpu-1",
    cpu_cores: 4,
    memory_gb: 16,
    gpu: 1,
    storage_gb: 0,
    hours: 10,
    starts_at: at(0),
    ends_at: at(10 * HOUR),
    created_at: at(0),
    ...overrides
  }
  return record
})

const planTests = (it: Vitest.MethodsNonLive<PlanStore>) => {
  describe("plans", () => {
    it.effect("insert then read: every field, exactly; the account's plans newest first, then by id", () =>
      Effect.gen(function*() {
        const store = yield* PlanStore
        const account = yield* generateId("acct")
        const first = yield* makePlan(account, {
          paid_with: "stablecoin", auto_renews: false, plan_id: "scale ✓", card_reference: null, renewal_error: "declined ✓"
        })
        const second = yield* makePlan(account, { created_at: at(1), current_period_start: at(1) })
        const tieA = yield* makePlan(account, { id: `sub_a${yield* generateId("x")}`, created_at: at(2), current_period_start: at(2) })
        const tieB = yield* makePlan(account, { id: `sub_b${yield* generateId("x")}`, created_at: at(2), current_period_start: at(2) })
        for (const r of [first, second, tieB, tieA]) assert.deepStrictEqual(yield* store.insertSubscription(r), r)
        assert.deepStrictEqual(yield* store.subscription(first.id), first)
        assert.deepStrictEqual(yield* store.subscriptions(account), [tieA, tieB, second, first])
        assert.deepStrictEqual(yield* store.subscriptions(yield* generateId("acct")), [])
        assert.isUndefined(yield* store.subscription(yield* generateId("sub")))
      }))

    it.effect("one plan per order: a replayed insert answers the stored plan and changes nothing, also concurrently", () =>
      Effect.gen(function*() {
        const store = yield* PlanStore
        const account = yield* generateId("acct")
        const plan = yield* makePlan(account)
        assert.deepStrictEqual(yield* store.insertSubscription(plan), plan)
        const replay = { ...plan, id: yield* generateId("sub"), plan_id: "scale" }
        assert.deepStrictEqual(yield* store.insertSubscription(replay), plan)
        assert.isUndefined(yield* store.subscription(replay.id))
        const order = yield* generateId("ord")
        const racers = yield* Effect.forEach(Array.from({ length: 8 }, (_, i) => i), () => makePlan(account, { order_id: order }))
        const answers = yield* Effect.forEach(racers, (r) => store.insertSubscription(r), unbounded)
        assert.strictEqual(new Set(answers.map((a) => a.id)).size, 1)
        assert.deepStrictEqual((yield* store.subscriptions(account)).filter((r) => r.order_id === order), [answers[0]!])
      }))

    it.effect("setRenewal changes the two flags of the account's plan only; another account's or an unknown plan: undefined", () =>
      Effect.gen(function*() {
        const store = yield* PlanStore
        const account = yield* generateId("acct")
        const plan = yield* makePlan(account)
        yield* store.insertSubscription(plan)
        const cancelled = { ...plan, auto_renews: false, cancel_at_period_end: true }
        assert.deepStrictEqual(yield* store.setRenewal(account, plan.id, { auto_renews: false, cancel_at_period_end: true }), cancelled)
        assert.deepStrictEqual(yield* store.subscription(plan.id), cancelled)
        assert.isUndefined(yield* store.setRenewal(yield* generateId("acct"), plan.id, { auto_renews: true, cancel_at_period_end: false }))
        assert.isUndefined(yield* store.setRenewal(account, yield* generateId("sub"), { auto_renews: true, cancel_at_period_end: false }))
        assert.deepStrictEqual(yield* store.subscription(plan.id), cancelled)
        assert.deepStrictEqual(yield* store.setRenewal(account, plan.id, { auto_renews: true, cancel_at_period_end: false }), plan)
      }))

    it.effect("a broken plan is a defect and stores nothing", () =>
      Effect.gen(function*() {
        const store = yield* PlanStore
        const account = yield* generateId("acct")
        const backwards = yield* makePlan(account, { current_period_end: at(0) })
        yield* assertDies(store.insertSubscription(backwards), "period ends before it starts")
        assert.isUndefined(yield* store.subscription(backwards.id))
        const stored = yield* makePlan(account)
        yield* store.insertSubscription(stored)
        yield* assertDies(store.insertSubscription({ ...stored, order_id: yield* generateId("ord") }), "duplicate id")
      }))
  })
}

const renewalTests = (it: Vitest.MethodsNonLive<PlanStore>) => {
  describe("renewals", () => {
    /** A plan ending at `end`, stored, and a renewal of it to the next 30 days by a fresh order. */
    const stored = Effect.fnUntraced(function*(end: number, overrides: Partial<SubscriptionRecord> = {}) {
      const store = yield* PlanStore
      const plan = yield* makePlan(yield* generateId("acct"), { current_period_start: at(end - 30 * DAY), current_period_end: at(end), ...overrides })
      yield* store.insertSubscription(plan)
      const renewal: PlanRenewal = {
        subscription_id: plan.id,
        order_id: yield* generateId("ord"),
        after_period_end: plan.current_period_end,
        current_period_start: plan.current_period_end,
        current_period_end: at(end + 30 * DAY)
      }
      return { plan, renewal }
    })

    it.effect("renew moves the period once per order and clears renewal_error; from another period it is stale", () =>
      Effect.gen(function*() {
        const store = yield* PlanStore
        const { plan, renewal } = yield* stored(30 * DAY, { renewal_error: "declined" })
        assert.strictEqual(yield* store.renew(renewal), "renewed")
        const renewed = { ...plan, current_period_start: renewal.current_period_start, current_period_end: renewal.current_period_end, renewal_error: null }
        assert.deepStrictEqual(yield* store.subscription(plan.id), renewed)
        // The same order again, even computed from the new period: nothing more.
        assert.strictEqual(yield* store.renew(renewal), "already_renewed")
        assert.strictEqual(yield* store.renew({ ...renewal, after_period_end: renewal.current_period_end, current_period_end: at(90 * DAY) }), "already_renewed")
        // Another order computed from the old period: stale.
        assert.strictEqual(yield* store.renew({ ...renewal, order_id: yield* generateId("ord") }), "stale")
        assert.deepStrictEqual(yield* store.subscription(plan.id), renewed)
        // Another order from the current period renews again.
        const next = { ...renewal, order_id: yield* generateId("ord"), after_period_end: renewal.current_period_end, current_period_start: renewal.current_period_end, current_period_end: at(90 * DAY) }
        assert.strictEqual(yield* store.renew(next), "renewed")
        assert.strictEqual((yield* store.subscription(plan.id))?.current_period_end, at(90 * DAY))
        assert.strictEqual(yield* store.renew({ ...renewal, subscription_id: yield* generateId("sub"), order_id: yield* generateId("ord") }), "not_found")
      }))

    it.effect("concurrent renewals of one period: exactly one renews (one order or many)", () =>
      Effect.gen(function*() {
        const store = yield* PlanStore
        const many = yield* stored(31 * DAY)
        const orders = yield* Effect.forEach(Array.from({ length: 8 }, (_, i) => i), () => generateId("ord"))
        const answers = yield* Effect.forEach(orders, (order_id) => store.renew({ ...many.renewal, order_id }), unbounded)
        assert.deepStrictEqual(answers.filter((a) => a === "renewed").length, 1)
        assert.deepStrictEqual(answers.filter((a) => a !== "renewed"), Array(7).fill("stale"))
        assert.strictEqual((yield* store.subscription(many.plan.id))?.current_period_end, many.renewal.current_period_end)
        const one = yield* stored(32 * DAY)
        const same = yield* Effect.forEach(Array.from({ length: 8 }, (_, i) => i), () => store.renew(one.renewal), unbounded)
        assert.deepStrictEqual(same.filter((a) => a === "renewed").length, 1)
        assert.deepStrictEqual(same.filter((a) => a !== "renewed"), Array(7).fill("already_renewed"))
      }))

    it.effect("failRenewal stops the plan renewing, only from the period it failed for", () =>
      Effect.gen(function*() {
        const store = yield* PlanStore
        const { plan } = yield* stored(33 * DAY)
        assert.isFalse(yield* store.failRenewal(plan.id, at(0), "stale"))
        assert.deepStrictEqual(yield* store.subscription(plan.id), plan)
        assert.isTrue(yield* store.failRenewal(plan.id, plan.current_period_end, "Your card was declined. ✓"))
        assert.deepStrictEqual(yield* store.subscription(plan.id), { ...plan, auto_renews: false, renewal_error: "Your card was declined. ✓" })
        assert.isFalse(yield* store.failRenewal(yield* generateId("sub"), plan.current_period_end, "x"))
      }))

    it.effect("dueRenewals: the renewing plans ended by then, earliest end first, at most limit", () =>
      Effect.gen(function*() {
        const store = yield* PlanStore
        // Ends before any other test's, and before any earlier run's (a store kept between runs):
        // the later the run, the earlier its base, so this test's plans come first.
        const base = -Date.now() - Math.floor(Math.random() * 1000) * HOUR
        const late = yield* stored(base + 3 * HOUR)
        const early = yield* stored(base + HOUR)
        const tieA = yield* stored(base + 2 * HOUR, { id: `sub_a${yield* generateId("x")}` })
        const tieB = yield* stored(base + 2 * HOUR, { id: `sub_b${yield* generateId("x")}` })
        const stopped = yield* stored(base + HOUR, { auto_renews: false, paid_with: "stablecoin" })
        const ids = (rs: ReadonlyArray<SubscriptionRecord>) => rs.map((r) => r.id)
        assert.deepStrictEqual(ids(yield* store.dueRenewals(at(base + 2 * HOUR), 10)), [early.plan.id, tieA.plan.id, tieB.plan.id])
        assert.deepStrictEqual(yield* store.dueRenewals(at(base + 3 * HOUR), 2), [early.plan, tieA.plan])
        assert.deepStrictEqual(yield* store.dueRenewals(at(base), 10), [])
        assert.notInclude(ids(yield* store.dueRenewals(at(base + 3 * HOUR), 10)), stopped.plan.id)
        // Renewed, cancelled or failed: no longer due.
        yield* store.renew(early.renewal)
        yield* store.setRenewal(tieA.plan.account_id, tieA.plan.id, { auto_renews: false, cancel_at_period_end: true })
        yield* store.failRenewal(tieB.plan.id, tieB.plan.current_period_end, "declined")
        assert.deepStrictEqual(ids(yield* store.dueRenewals(at(base + 3 * HOUR), 10)), [late.plan.id])
      }))

    it.effect("a broken renewal is a defect and changes nothing", () =>
      Effect.gen(function*() {
        const store = yield* PlanStore
        const { plan, renewal } = yield* stored(34 * DAY)
        yield* assertDies(store.renew({ ...renewal, current_period_end: renewal.current_period_start }), "period ends before it starts")
        yield* assertDies(store.renew({ ...renewal, order_id: "" }), "empty order id")
        assert.deepStrictEqual(yield* store.subscription(plan.id), plan)
      }))
  })
}

const rentalTests = (it: Vitest.MethodsNonLive<PlanStore>) => {
  describe("rentals", () => {
    it.effect("insert then read: every field, exactly; newest first; one rental per order, also concurrently", () =>
      Effect.gen(function*() {
        const store = yield* PlanStore
        const account = yield* generateId("acct")
        const first = yield* makeRental(account, { gpu: 0, storage_gb: 1800, hours: 720, ends_at: at(720 * HOUR) })
        const second = yield* makeRental(account, { created_at: at(5), starts_at: at(5), ends_at: at(5 + HOUR), hours: 1 })
        for (const r of [first, second]) assert.deepStrictEqual(yield* store.insertRental(r), r)
        assert.deepStrictEqual(yield* store.rental(first.id), first)
        assert.deepStrictEqual(yield* store.rentals(account), [second, first])
        assert.deepStrictEqual(yield* store.insertRental({ ...first, id: yield* generateId("rent"), hours: 2 }), first)
        const order = yield* generateId("ord")
        const racers = yield* Effect.forEach(Array.from({ length: 8 }, (_, i) => i), () => makeRental(account, { order_id: order }))
        const answers = yield* Effect.forEach(racers, (r) => store.insertRental(r), unbounded)
        assert.strictEqual(new Set(answers.map((a) => a.id)).size, 1)
        assert.strictEqual((yield* store.rentals(account)).length, 3)
        assert.deepStrictEqual(yield* store.rentals(yield* generateId("acct")), [])
        assert.isUndefined(yield* store.rental(yield* generateId("rent")))
      }))

    it.effect("a broken rental is a defect and stores nothing", () =>
      Effect.gen(function*() {
        const store = yield* PlanStore
        const account = yield* generateId("acct")
        for (const broken of [{ cpu_cores: 0 }, { hours: 1.5 }, { gpu: -1 }, { ends_at: at(0) }]) {
          const r = yield* makeRental(account, broken)
          yield* assertDies(store.insertRental(r), JSON.stringify(broken))
          assert.isUndefined(yield* store.rental(r.id))
        }
      }))
  })
}

/** Declares the plan store contract on `storeLayer` (built once for the suite). */
export const planStoreContract = <E>(name: string, storeLayer: Layer.Layer<PlanStore, E>): void =>
  layer(storeLayer, layerOptions)(name, (it) => {
    planTests(it)
    renewalTests(it)
    rentalTests(it)
  })
