/**
 * The contract suite of the order store port (core/src/payments/OrderStore.ts). Every implementation
 * runs it against its own layer: `orderStoreContract("memory", OrderStoreMemory)`.
 *
 * The layer is built once per suite and shared by its tests, so every test works on fresh random
 * ids and never assumes an empty store (the suite can run against a persistent database that
 * earlier runs have written to). Times are explicit.
 */
import { assert, describe, layer, type Vitest } from "@effect/vitest"
import { Effect, Exit, type Layer } from "effect"
import { generateId } from "@model-platform/core/kernel"
import { type OrderRecord, OrderStore } from "@model-platform/core/payments"
import { assertDies } from "./ContractSupport.ts"
import {
  DAY,
  unbounded,
  makeOrder,
  makeDeposit,
  makeReceipt,
  saved
} from "./OrderContractSupport.ts"
import { at, randomHexOf } from "./SampleRecords.ts"
import { depositTests, receiptTests, ticketTests } from "./OrderRecordsContract.ts"

/** Store layers may open a database, which takes a few seconds on embedded Postgres. */
const layerOptions = { excludeTestServices: true, timeout: "60 seconds" } as const

// ---------------------------------------------------------------------------------------------
// orders

const orderTests = (it: Vitest.MethodsNonLive<OrderStore>) =>
  describe("orders", () => {
    it.effect("insert then get and findOrder return every field (nulls, bigints, deposit)", () =>
      Effect.gen(function*() {
        const store = yield* OrderStore
        const accountId = yield* generateId("acct")
        const plain = yield* makeOrder(accountId)
        const full = yield* makeOrder(accountId, {
          type: "package",
          title: "Gift: ünïcödé 'pack' \"x\"",
          amount_cents: 500_000n,
          credits: 9_007_199_254_740_993n,
          machine_id: "m-1",
          package_id: "starter",
          gift: true,
          status: "paid",
          payment_method: "stablecoin",
          card_session_id: `cs_${yield* randomHexOf(8)}`,
          checkout_url: "https://platform.example/checkout/cs_1",
          deposit: yield* makeDeposit({ memo: "memo-1", decimals: 18, amount: 5_000_000_000_000_000_000_000n }),
          created_at: at(1),
          expires_at: at(2),
          paid_at: at(3),
          paid_with: "stablecoin"
        })
        for (const order of [plain, full]) {
          yield* store.insertOrder(order)
          assert.deepStrictEqual(yield* store.getOrder(accountId, order.id), order)
          assert.deepStrictEqual(yield* store.findOrder(order.id), order)
        }
        assert.deepStrictEqual(yield* store.findByCardSession(full.card_session_id!), full)
        assert.deepStrictEqual(yield* store.findByDepositAddress(full.deposit!.address), full)
      }))

    it.effect("a rental or subscription order keeps what it buys (details), exactly", () =>
      Effect.gen(function*() {
        const store = yield* OrderStore
        const accountId = yield* generateId("acct")
        const rental = yield* makeOrder(accountId, {
          type: "rental", title: "Rent 4 cores", credits: 0n, machine_id: "m-1",
          details: { kind: "rental", cpu_cores: 4, memory_gb: 16, gpu: 1, storage_gb: 0, hours: 720 }
        })
        const plan = yield* makeOrder(accountId, {
          type: "subscription", title: "Builder plan", credits: 0n, machine_id: "m-1",
          details: { kind: "subscription", plan_id: "builder", period_days: 30, renew_subscription_id: null }
        })
        const renewal = yield* makeOrder(accountId, {
          type: "subscription", title: "Builder plan, 30 days more", credits: 0n, machine_id: "m-1",
          details: { kind: "subscription", plan_id: "builder", period_days: 30, renew_subscription_id: "sub_1" }
        })
        for (const order of [rental, plan, renewal]) {
          yield* store.insertOrder(order)
          assert.deepStrictEqual(yield* store.getOrder(accountId, order.id), order)
          assert.deepStrictEqual(yield* store.findOrder(order.id), order)
        }
        assert.deepStrictEqual((yield* store.listOrders(accountId, 10)).map((o) => o.details), [renewal, plan, rental].map((o) => o.details))
      }))

    it.effect("unknown ids, other accounts' orders, unknown sessions and addresses are undefined", () =>
      Effect.gen(function*() {
        const store = yield* OrderStore
        const order = yield* saved(yield* generateId("acct"))
        assert.isUndefined(yield* store.getOrder(yield* generateId("acct"), order.id))
        assert.isUndefined(yield* store.getOrder(order.account_id, yield* generateId("ord")))
        assert.isUndefined(yield* store.findOrder(yield* generateId("ord")))
        assert.isUndefined(yield* store.findByCardSession(yield* generateId("cs")))
        assert.isUndefined(yield* store.findByDepositAddress(`0x${yield* randomHexOf(20)}`))
      }))

    it.effect("a duplicate order id is a defect and leaves the first order", () =>
      Effect.gen(function*() {
        const store = yield* OrderStore
        const order = yield* saved(yield* generateId("acct"))
        yield* assertDies(store.insertOrder({ ...order, title: "other" }), "duplicate order id")
        assert.deepStrictEqual(yield* store.findOrder(order.id), order)
      }))

    it.effect("list is per account, newest first, ties last-inserted first, at most limit", () =>
      Effect.gen(function*() {
        const store = yield* OrderStore
        const accountId = yield* generateId("acct")
        const o1 = yield* saved(accountId, { created_at: at(1_000) })
        const o3 = yield* saved(accountId, { created_at: at(3_000) })
        const o2a = yield* saved(accountId, { created_at: at(2_000) })
        const o2b = yield* saved(accountId, { created_at: at(2_000) })
        const other = yield* saved(yield* generateId("acct"), { created_at: at(2_500) })
        assert.deepStrictEqual(yield* store.listOrders(accountId, 50), [o3, o2b, o2a, o1])
        assert.deepStrictEqual(yield* store.listOrders(accountId, 2), [o3, o2b])
        assert.deepStrictEqual(yield* store.listOrders(accountId, 1), [o3])
        assert.deepStrictEqual(yield* store.listOrders(other.account_id, 50), [other])
        assert.deepStrictEqual(yield* store.listOrders(yield* generateId("acct"), 50), [])
      }))

    it.effect("a card start sets method, session and window; a second start keeps the first session", () =>
      Effect.gen(function*() {
        const store = yield* OrderStore
        const order = yield* saved(yield* generateId("acct"))
        const s1 = { method: "card", session_id: `cs_${yield* randomHexOf(8)}`, checkout_url: "https://x/checkout/1" } as const
        const s2 = { method: "card", session_id: `cs_${yield* randomHexOf(8)}`, checkout_url: "https://x/checkout/2" } as const
        const first = yield* store.startPayment(order.id, s1, at(2 * DAY), at(10))
        const expected: OrderRecord = {
          ...order,
          payment_method: "card",
          card_session_id: s1.session_id,
          checkout_url: s1.checkout_url,
          expires_at: at(2 * DAY)
        }
        assert.deepStrictEqual(first, expected)
        const second = yield* store.startPayment(order.id, s2, at(3 * DAY), at(20))
        assert.deepStrictEqual(second, { ...expected, expires_at: at(3 * DAY) })
        assert.deepStrictEqual(yield* store.findByCardSession(s1.session_id), second)
        assert.isUndefined(yield* store.findByCardSession(s2.session_id))
      }))

    it.effect("concurrent card starts agree on one session", () =>
      Effect.gen(function*() {
        const store = yield* OrderStore
        const order = yield* saved(yield* generateId("acct"))
        const sessions = yield* Effect.forEach(Array.from({ length: 20 }), () =>
          Effect.map(randomHexOf(8), (hex) => ({ method: "card", session_id: `cs_${hex}`, checkout_url: `https://x/${hex}` } as const)))
        const results = yield* Effect.all(sessions.map((s) => store.startPayment(order.id, s, at(2 * DAY), at(10))), unbounded)
        const ids = new Set(results.map((r) => r?.card_session_id))
        assert.strictEqual(ids.size, 1)
        const winner = [...ids][0]
        assert.isTrue(sessions.some((s) => s.session_id === winner))
        assert.strictEqual((yield* store.findOrder(order.id))?.card_session_id, winner)
      }))

    it.effect("a stablecoin start sets the deposit once; the same asset keeps it, another asset is refused", () =>
      Effect.gen(function*() {
        const store = yield* OrderStore
        const order = yield* saved(yield* generateId("acct"))
        const deposit = yield* makeDeposit({ memo: "m" })
        const opened = yield* store.startPayment(order.id, { method: "stablecoin", deposit }, at(2 * DAY), at(10))
        const expected: OrderRecord = { ...order, payment_method: "stablecoin", deposit, expires_at: at(2 * DAY) }
        assert.deepStrictEqual(opened, expected)
        // Same chain and token, another address: the first address stays.
        const again = yield* store.startPayment(
          order.id,
          { method: "stablecoin", deposit: yield* makeDeposit({ memo: "m" }) },
          at(3 * DAY),
          at(20)
        )
        assert.deepStrictEqual(again, { ...expected, expires_at: at(3 * DAY) })
        // Another token: refused, nothing changes.
        const other = yield* store.startPayment(
          order.id,
          { method: "stablecoin", deposit: yield* makeDeposit({ token: "USDT" }) },
          at(4 * DAY),
          at(30)
        )
        assert.isUndefined(other)
        assert.deepStrictEqual(yield* store.findOrder(order.id), again)
        assert.deepStrictEqual(yield* store.findByDepositAddress(deposit.address), again)
        // Card after stablecoin: the deposit address stays with the order.
        const card = yield* store.startPayment(
          order.id,
          { method: "card", session_id: `cs_${yield* randomHexOf(8)}`, checkout_url: "https://x/c" },
          at(5 * DAY),
          at(40)
        )
        assert.strictEqual(card?.payment_method, "card")
        assert.deepStrictEqual(card?.deposit, deposit)
        assert.strictEqual((yield* store.findByDepositAddress(deposit.address))?.id, order.id)
      }))

    it.effect("a deposit address belongs to one order: reuse is a defect, and concurrent claims let one win", () =>
      Effect.gen(function*() {
        const store = yield* OrderStore
        const accountId = yield* generateId("acct")
        const a = yield* saved(accountId)
        const b = yield* saved(accountId)
        const deposit = yield* makeDeposit()
        assert.isDefined(yield* store.startPayment(a.id, { method: "stablecoin", deposit }, at(2 * DAY), at(10)))
        yield* assertDies(
          store.startPayment(b.id, { method: "stablecoin", deposit }, at(2 * DAY), at(10)),
          "an address of another order"
        )
        assert.deepStrictEqual(yield* store.findOrder(b.id), b)
        assert.strictEqual((yield* store.findByDepositAddress(deposit.address))?.id, a.id)

        const shared = yield* makeDeposit()
        const orders = yield* Effect.forEach(Array.from({ length: 20 }), () => saved(accountId))
        const exits = yield* Effect.all(
          orders.map((o) => Effect.exit(store.startPayment(o.id, { method: "stablecoin", deposit: shared }, at(2 * DAY), at(10)))),
          unbounded
        )
        assert.strictEqual(exits.filter(Exit.isSuccess).length, 1)
        const owner = yield* store.findByDepositAddress(shared.address)
        assert.isTrue(owner !== undefined && orders.some((o) => o.id === owner.id))
        const withDeposit = yield* Effect.forEach(orders, (o) => store.findOrder(o.id))
        assert.strictEqual(withDeposit.filter((o) => o?.deposit !== null).length, 1)
      }))

    it.effect("no start on a paid, expired or unknown order", () =>
      Effect.gen(function*() {
        const store = yield* OrderStore
        const accountId = yield* generateId("acct")
        const paid = yield* saved(accountId, { status: "paid", paid_at: at(5), paid_with: "card" })
        const pending = yield* saved(accountId, { expires_at: at(100) })
        const card = { method: "card", session_id: `cs_${yield* randomHexOf(8)}`, checkout_url: "https://x" } as const
        assert.isUndefined(yield* store.startPayment(paid.id, card, at(DAY), at(10)))
        // expires_at <= now: the window has closed.
        assert.isUndefined(yield* store.startPayment(pending.id, card, at(DAY), at(100)))
        assert.isUndefined(yield* store.startPayment(yield* generateId("ord"), card, at(DAY), at(10)))
        assert.deepStrictEqual(yield* store.findOrder(paid.id), paid)
        assert.deepStrictEqual(yield* store.findOrder(pending.id), pending)
        assert.isUndefined(yield* store.findByCardSession(card.session_id))
      }))

    it.effect("markPaid: exactly one of 20 concurrent calls wins, and the first paid_at stays", () =>
      Effect.gen(function*() {
        const store = yield* OrderStore
        const order = yield* saved(yield* generateId("acct"))
        const results = yield* Effect.all(
          Array.from({ length: 20 }, (_, i) => store.markPaid(order.id, i % 2 === 0 ? "card" : "stablecoin", at(100 + i))),
          unbounded
        )
        assert.strictEqual(results.filter((won) => won).length, 1)
        const winner = results.indexOf(true)
        assert.deepStrictEqual(yield* store.findOrder(order.id), {
          ...order,
          status: "paid",
          paid_at: at(100 + winner),
          paid_with: winner % 2 === 0 ? "card" : "stablecoin"
        })
        assert.isFalse(yield* store.markPaid(order.id, "card", at(500)))
      }))

    it.effect("markPaid refuses an instant at or after expires_at, and unknown orders", () =>
      Effect.gen(function*() {
        const store = yield* OrderStore
        const order = yield* saved(yield* generateId("acct"), { expires_at: at(1_000) })
        assert.isFalse(yield* store.markPaid(order.id, "card", at(1_000)))
        assert.isFalse(yield* store.markPaid(order.id, "card", at(2_000)))
        assert.deepStrictEqual(yield* store.findOrder(order.id), order)
        assert.isTrue(yield* store.markPaid(order.id, "stablecoin", at(999)))
        assert.isFalse(yield* store.markPaid(yield* generateId("ord"), "card", at(0)))
      }))

    it.effect("unfulfilled lists paid orders without a receipt", () =>
      Effect.gen(function*() {
        const store = yield* OrderStore
        const accountId = yield* generateId("acct")
        const paid = yield* saved(accountId)
        const pending = yield* saved(accountId)
        yield* store.markPaid(paid.id, "card", at(10))
        const ids = (rows: ReadonlyArray<OrderRecord>) => rows.map((o) => o.id)
        const before = ids(yield* store.unfulfilled(10_000))
        assert.include(before, paid.id)
        assert.notInclude(before, pending.id)
        yield* store.insertReceipt(yield* makeReceipt(accountId, { order_id: paid.id }))
        assert.notInclude(ids(yield* store.unfulfilled(10_000)), paid.id)
      }))
  })

// ---------------------------------------------------------------------------------------------

export const orderStoreContract = <E>(name: string, storeLayer: Layer.Layer<OrderStore, E>): void =>
  layer(storeLayer, layerOptions)(name, (it) => {
    orderTests(it)
    ticketTests(it)
    receiptTests(it)
    depositTests(it)
  })
