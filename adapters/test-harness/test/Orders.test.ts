/**
 * Orders, payments and gift tickets (core/src/payments/OrderService.ts) on the memory stores, the memory
 * ledger, the test card processor and the simulated chain: every rule of docs/payments.md, then
 * property tests (fast-check) of the money invariants:
 *   - idempotency: replaying any card completion, transfer or redemption, any number of times and
 *     in any order, changes no balance, receipt, ticket or order;
 *   - conservation: the credits in every ledger are exactly the credits of the paid non-gift
 *     orders plus those of the redeemed tickets, in the right scopes; one receipt per paid order;
 *     purchased credits are the credits of the account's paid orders;
 *   - concurrency: concurrent completions, deliveries and redemptions grant once.
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { Clock, Effect, Layer, Schema } from "effect"
import { TestClock } from "effect/testing"
import { expect, it as vit } from "vitest"
import type { Caller } from "@model-platform/core/keys"
import {
  type CreateOrder,
  evaluateTestCard,
  formatUnits,
  generateTicketCode,
  luhnValid,
  normalizeTicketCode,
  Order,
  OrderList,
  type OrderRecord,
  Orders,
  OrderStore,
  parseUnits,
  PAYMENT_WINDOW_MS,
  type PayOrder,
  Quote,
  Receipt,
  TestCardProcessor,
  ticketCodeFor,
  Tickets,
  usdToBaseUnits
} from "@model-platform/core/payments"
import { Catalogue, chargingGate } from "@model-platform/core/catalogue"
import type { CatalogueConfig } from "@model-platform/core/catalogue"
import { Ledger, LedgerStore, RedeemResponse, Ticket, TicketList } from "@model-platform/core/ledger"
import { creditsToMicro, MICRO_PER_CREDIT, toTimestamp } from "@model-platform/core/kernel"
import type { CardDetails, Transfer } from "@model-platform/core/payments"
import { fixtureCatalogue } from "../src/Fixtures.ts"
import { LedgerStoreMemory } from "@model-platform/memory-stores/MemoryLedgerStore"
import { OrderStoreMemory } from "@model-platform/memory-stores/MemoryOrderStore"
import { PlanStoreMemory } from "@model-platform/memory-stores/MemoryPlanStore"
import { PlanStore } from "@model-platform/core/plans"
import { SimulatedChain, sendAndRecord } from "../src/SimulatedChain.ts"

// ---------------------------------------------------------------------------------------------
// fixtures

const T0 = Date.UTC(2026, 0, 15, 12, 0, 0, 0)
const HOUR = 60 * 60 * 1000
const BASE_URL = "https://platform.test"

const payments: CatalogueConfig["payments"] = {
  card: { processor: "test" },
  stablecoin: {
    processor: "simulated",
    options: [
      { chain: "base", token: "USDC", decimals: 6 },
      { chain: "base", token: "USDT", decimals: 6 },
      { chain: "eth", token: "DAI", decimals: 18 }
    ]
  },
  charging_starts_at: null
}

const config: CatalogueConfig = { ...fixtureCatalogue, payments }
const noCreditPrice: CatalogueConfig = { ...config, prices: { ...config.prices, credits_per_usd: null } }
const noRails: CatalogueConfig = { ...config, payments: { card: null, stablecoin: null, charging_starts_at: null } }

const stack = (catalogue: CatalogueConfig) =>
  Layer.mergeAll(Orders.layer, Tickets.layer).pipe(
    Layer.provideMerge(Ledger.layer),
    Layer.provideMerge(Layer.mergeAll(
      LedgerStoreMemory,
      OrderStoreMemory,
      PlanStoreMemory,
      Catalogue.layer(catalogue),
      TestCardProcessor.layer({ baseUrl: BASE_URL }),
      SimulatedChain.layer
    ))
  )

type Env = Layer.Success<ReturnType<typeof stack>>

/** Runs a test on a fresh stack, at T0 on the test clock. */
const run = <A, E>(effect: Effect.Effect<A, E, Env>, catalogue: CatalogueConfig = config) =>
  Effect.andThen(TestClock.setTime(T0), effect).pipe(Effect.provide(stack(catalogue)))

const makeCaller = (name: string): Caller => ({
  account: { id: `acct_${name}`, email: `${name}@orders.test`, created_at: toTimestamp(T0) },
  key: {
    id: `key_${name}`,
    account_id: `acct_${name}`,
    name,
    prefix: "mpk_test",
    secret_hash: `hash_${name}`,
    permissions: ["inference", "read", "manage"],
    machine_id: null,
    subscription_id: null,
    rental_id: null,
    agent_id: null,
    created_at: toTimestamp(T0),
    last_used_at: null,
    revoked_at: null
  }
})

const alice = makeCaller("alice")
const bob = makeCaller("bob")

const card = (number: string, overrides: Partial<CardDetails> = {}): CardDetails => ({
  number,
  exp_month: 12,
  exp_year: 2030,
  cvc: "123",
  ...overrides
})
const GOOD = card("4242424242424242")
const DECLINED = card("4000000000000002")

const credits = (n: number) => ({ type: "credits", amount_usd: n }) as const satisfies CreateOrder
const STABLE: PayOrder = { method: "stablecoin", chain: "base", token: "USDC" }

type Refusal =
  | { readonly _tag: string; readonly reason: string; readonly message: string }
  | { readonly error: { readonly code: string; readonly message: string } }

/** The error of a failing effect: its tag (a platform error's class), its reason (a platform error's code) and message. */
const failure = <A, E extends Refusal, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.map(Effect.flip(effect), (e: Refusal) =>
    "reason" in e
      ? { tag: e._tag, reason: e.reason, message: e.message }
      : { tag: e.constructor.name, reason: e.error.code, message: e.error.message })

const balanceOf = (caller: Caller) => Effect.gen(function*() {
  return yield* (yield* Ledger).balance(caller.account.id)
})

const sessionOf = (order: Order) => decodeURIComponent(order.pay_url.slice(`${BASE_URL}/checkout/`.length))

/** Creates an order and pays it with the good test card. */
const buyByCard = Effect.fnUntraced(function*(caller: Caller, body: CreateOrder) {
  const orders = yield* Orders
  const order = yield* orders.create(caller, body)
  const started = yield* orders.pay(caller, order.id, { method: "card" })
  const result = yield* orders.completeCardPayment(sessionOf(started), GOOD)
  assert.strictEqual(result._tag, "Paid")
  return yield* orders.get(caller, order.id)
})

const openDeposit = Effect.fnUntraced(function*(caller: Caller, body: CreateOrder, pay: PayOrder = STABLE) {
  const orders = yield* Orders
  const order = yield* orders.create(caller, body)
  const started = yield* orders.pay(caller, order.id, pay)
  if (started.payment.method !== "stablecoin") return yield* Effect.die(new Error("no deposit"))
  return { order: started, deposit: started.payment.deposit }
})

const send = (to: string, amount: string, overrides: { chain?: string; token?: string; at?: string } = {}) =>
  sendAndRecord({ chain: overrides.chain ?? "base", token: overrides.token ?? "USDC", to, amount, at: overrides.at })

// ---------------------------------------------------------------------------------------------
// pure rules

describe("amounts in token units", () => {
  vit("parseUnits and formatUnits round-trip every amount exactly", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 10n ** 30n }), fc.integer({ min: 0, max: 18 }), (base, decimals) => {
        expect(parseUnits(formatUnits(base, decimals), decimals)).toBe(base)
      }),
      { numRuns: 500 }
    )
  })

  vit("parseUnits accepts exact decimals only", () => {
    expect(parseUnits("25.000000", 6)).toBe(25_000_000n)
    expect(parseUnits("25", 6)).toBe(25_000_000n)
    expect(parseUnits("25.5", 6)).toBe(25_500_000n)
    expect(parseUnits("0.000001", 6)).toBe(1n)
    for (const bad of ["25.0000001", "-1", "1e3", "", ".5", "5.", " 5", "0x10", "25,00", "Infinity", "NaN"]) {
      expect(parseUnits(bad, 6), bad).toBeUndefined()
    }
  })

  vit("usdToBaseUnits: 1 token = 1 USD, exact at any decimals", () => {
    expect(usdToBaseUnits(2_500n, 6)).toBe(25_000_000n)
    expect(formatUnits(usdToBaseUnits(2_500n, 6), 6)).toBe("25.000000")
    expect(usdToBaseUnits(500_000n, 18)).toBe(5_000n * 10n ** 18n)
    expect(formatUnits(usdToBaseUnits(500_000n, 18), 18)).toBe("5000.000000000000000000")
  })
})

describe("ticket codes", () => {
  it.effect("4 groups of 5 Crockford base32 characters, all different", () =>
    Effect.gen(function*() {
      const codes = yield* Effect.forEach(Array.from({ length: 2000 }), () => generateTicketCode)
      for (const code of codes) assert.match(code, /^[0-9ABCDEFGHJKMNPQRSTVWXYZ]{5}(-[0-9ABCDEFGHJKMNPQRSTVWXYZ]{5}){3}$/)
      assert.strictEqual(new Set(codes).size, codes.length)
      // Every character of the alphabet shows up (the bits are uniform, not a fixed subset).
      assert.strictEqual(new Set(codes.join("").replace(/-/g, "")).size, 32)
    }))

  vit("typed codes are normalised: case, spaces, dashes, and I/L/O read as 1/1/0", () => {
    expect(normalizeTicketCode("7kq2m x9d4r-0hvtb s3ezn")).toBe("7KQ2M-X9D4R-0HVTB-S3EZN")
    expect(normalizeTicketCode("7KQ2MX9D4R0HVTBS3EZN")).toBe("7KQ2M-X9D4R-0HVTB-S3EZN")
    expect(normalizeTicketCode("ILO00-00000-00000-00000")).toBe("11000-00000-00000-00000")
    for (const bad of ["", "7KQ2M-X9D4R-0HVTB", "7KQ2M-X9D4R-0HVTB-S3EZNN", "UUUUU-00000-00000-00000", "7KQ2M-X9D4R-0HVTB-S3EZ!"]) {
      expect(normalizeTicketCode(bad), bad).toBeUndefined()
    }
  })
})

describe("ticket codes by permission", () => {
  it.effect("an unscoped manage key reads a code whole; any other key sees only its last 4 characters, which redeem nothing", () =>
    Effect.gen(function*() {
      const reader: Caller = { ...alice, key: { ...alice.key, permissions: ["inference", "read"] } }
      const scoped = (scope: Partial<Caller["key"]>): Caller => ({ ...alice, key: { ...alice.key, ...scope } })
      const others = [reader, scoped({ machine_id: "m-eu-a" }), scoped({ subscription_id: "sub_1" }), scoped({ rental_id: "rent_1" })]
      for (const code of yield* Effect.forEach(Array.from({ length: 200 }), () => generateTicketCode)) {
        assert.strictEqual(ticketCodeFor(code, alice), code)
        for (const other of others) {
          const masked = ticketCodeFor(code, other)
          assert.strictEqual(masked, `*****-*****-*****-*${code.slice(-4)}`)
          assert.isUndefined(normalizeTicketCode(masked))
        }
      }
    }))
})

describe("test card processor (pure)", () => {
  const now = T0

  vit("Luhn", () => {
    expect(luhnValid("4242424242424242")).toBe(true)
    expect(luhnValid("4242424242424241")).toBe(false)
    expect(luhnValid("79927398713")).toBe(true)
    expect(luhnValid("42a2")).toBe(false)
  })

  vit("Stripe's test numbers", () => {
    expect(evaluateTestCard(GOOD, now)).toEqual({ _tag: "Approved" })
    expect(evaluateTestCard(card("4242 4242 4242 4242"), now)).toEqual({ _tag: "Approved" })
    expect(evaluateTestCard(card("5555555555554444"), now)).toEqual({ _tag: "Approved" })
    expect(evaluateTestCard(DECLINED, now)).toMatchObject({ _tag: "Declined", reason: "card_declined" })
    expect(evaluateTestCard(card("4000000000009995"), now)).toMatchObject({ _tag: "Declined", reason: "insufficient_funds" })
    expect(evaluateTestCard(card("4000000000009987"), now)).toMatchObject({ _tag: "Declined", reason: "lost_card" })
    expect(evaluateTestCard(card("4000000000000069"), now)).toMatchObject({ _tag: "Declined", reason: "expired_card" })
    expect(evaluateTestCard(card("4000000000000127"), now)).toMatchObject({ _tag: "Declined", reason: "incorrect_cvc" })
    expect(evaluateTestCard(card("4000000000000119"), now)).toMatchObject({ _tag: "Declined", reason: "processing_error" })
  })

  vit("number, expiry and CVC checks", () => {
    expect(evaluateTestCard(card("4242424242424241"), now)).toMatchObject({ reason: "incorrect_number" })
    expect(evaluateTestCard(card("4242"), now)).toMatchObject({ reason: "incorrect_number" })
    // The expiry month is valid to its end: January 2026 is still good on 15 January 2026.
    expect(evaluateTestCard(card("4242424242424242", { exp_month: 1, exp_year: 2026 }), now)).toEqual({ _tag: "Approved" })
    expect(evaluateTestCard(card("4242424242424242", { exp_month: 12, exp_year: 2025 }), now)).toMatchObject({
      reason: "expired_card"
    })
    expect(evaluateTestCard(card("4242424242424242", { exp_month: 13 }), now)).toMatchObject({ reason: "invalid_expiry" })
    expect(evaluateTestCard(card("4242424242424242", { exp_month: 0 }), now)).toMatchObject({ reason: "invalid_expiry" })
    expect(evaluateTestCard(card("4242424242424242", { exp_year: 30 }), now)).toMatchObject({ reason: "invalid_expiry" })
    expect(evaluateTestCard(card("4242424242424242", { cvc: "12" }), now)).toMatchObject({ reason: "incorrect_cvc" })
    expect(evaluateTestCard(card("4242424242424242", { cvc: "1234" }), now)).toMatchObject({ reason: "incorrect_cvc" })
    expect(evaluateTestCard(card("4242424242424242", { cvc: "12a" }), now)).toMatchObject({ reason: "incorrect_cvc" })
    // A valid number that is not a test card: refused, as in Stripe's test mode.
    expect(evaluateTestCard(card("4111111111111111"), now)).toMatchObject({ _tag: "Declined", reason: "card_declined" })
  })
})

describe("charging gate", () => {
  const rail = { card: { processor: "test" }, stablecoin: null }
  vit("closed without a rail, open with one, scheduled when starts_at is ahead", () => {
    expect(chargingGate({ card: null, stablecoin: null, charging_starts_at: null }, T0)).toMatchObject({
      open: false,
      starts_at: null
    })
    expect(chargingGate({ card: null, stablecoin: null, charging_starts_at: null }, T0).reason).toMatch(/No payment rail/)
    expect(chargingGate({ ...rail, charging_starts_at: null }, T0)).toEqual({ open: true, reason: null, starts_at: null })
    expect(chargingGate({ ...payments, card: null }, T0).open).toBe(true)
    const later = "2026-02-01T00:00:00Z"
    const closed = chargingGate({ ...rail, charging_starts_at: later }, T0)
    expect(closed).toMatchObject({ open: false, starts_at: "2026-02-01T00:00:00.000Z" })
    expect(closed.reason).toMatch(/2026-02-01T00:00:00.000Z/)
    expect(chargingGate({ ...rail, charging_starts_at: later }, Date.parse(later))).toEqual({
      open: true,
      reason: null,
      starts_at: "2026-02-01T00:00:00.000Z"
    })
    expect(chargingGate({ ...rail, charging_starts_at: "soon" }, T0)).toMatchObject({ open: false, starts_at: null })
  })

  it.effect("Orders.charging follows the configuration and the clock", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* (yield* Orders).charging, { open: true, reason: null, starts_at: null })
    }).pipe(run))
})

// ---------------------------------------------------------------------------------------------
// quotes and orders

describe("quote", () => {
  it.effect("credits: amount_usd x credits_per_usd, optionally pinned, gift flag", () =>
    Effect.gen(function*() {
      const orders = yield* Orders
      const quote = yield* orders.quote(credits(25))
      assert.deepStrictEqual(quote, {
        type: "credits",
        amount_usd: 25,
        currency: "USD",
        details: { credits: 25_000, machine_id: null, gift: false }
      })
      Schema.decodeUnknownSync(Quote)(quote)
      assert.deepStrictEqual(
        (yield* orders.quote({ type: "credits", amount_usd: 5000, machine_id: "m-eu-a", gift: true })).details,
        { credits: 5_000_000, machine_id: "m-eu-a", gift: true }
      )
      assert.deepStrictEqual(
        yield* failure(orders.quote({ type: "credits", amount_usd: 5, machine_id: "nope" })),
        { tag: "OrderError", reason: "machine_not_found", message: "No machine \"nope\"." }
      )
    }).pipe(run))

  it.effect("credits are refused with 400 invalid_request while no credit price is set; packages are not", () =>
    Effect.gen(function*() {
      const orders = yield* Orders
      const error = yield* failure(orders.quote(credits(25)))
      assert.strictEqual(error.tag, "OrderError")
      assert.strictEqual(error.reason, "credit_price_unset")
      assert.match(error.message, /no credit price/)
      assert.strictEqual((yield* failure(orders.create(alice, credits(25)))).reason, "credit_price_unset")
      assert.strictEqual((yield* orders.quote({ type: "package", package_id: "starter" })).amount_usd, 10)
    }).pipe((effect) => run(effect, noCreditPrice)))

  it.effect("package: price and credits from the catalogue; unknown -> 404", () =>
    Effect.gen(function*() {
      const orders = yield* Orders
      assert.deepStrictEqual(yield* orders.quote({ type: "package", package_id: "eu-a-offer", gift: true }), {
        type: "package",
        amount_usd: 20,
        currency: "USD",
        details: { credits: 25_000, machine_id: "m-eu-a", package_id: "eu-a-offer", gift: true }
      })
      assert.deepStrictEqual(yield* failure(orders.quote({ type: "package", package_id: "nope" })), {
        tag: "OrderError",
        reason: "package_not_found",
        message: "No package \"nope\"."
      })
    }).pipe(run))

  it.effect("paying a rental or plan order makes the rental or the plan, once, from the payment", () =>
    Effect.gen(function*() {
      const orders = yield* Orders
      const plans = yield* PlanStore
      const rental = { type: "rental", machine_id: "m-us-b", cpu_cores: 2, memory_gb: 4, hours: 3 } as const
      // (2 x 0.02 + 4 x 0.004) x 3 = 0.168, charged 0.17
      const rented = yield* buyByCard(alice, rental)
      assert.strictEqual(rented.amount_usd, 0.17)
      assert.strictEqual(rented.status, "paid")
      const [made] = yield* plans.rentals(alice.account.id)
      assert.deepStrictEqual(made && {
        order_id: made.order_id, machine_id: made.machine_id, cpu_cores: made.cpu_cores, memory_gb: made.memory_gb, gpu: made.gpu,
        storage_gb: made.storage_gb, hours: made.hours, starts_at: made.starts_at, ends_at: made.ends_at
      }, {
        order_id: rented.id, machine_id: "m-us-b", cpu_cores: 2, memory_gb: 4, gpu: 0, storage_gb: 0, hours: 3,
        starts_at: rented.paid_at!, ends_at: new Date(Date.parse(rented.paid_at!) + 3 * HOUR).toISOString()
      })
      const bought = yield* buyByCard(alice, { type: "subscription", machine_id: "m-eu-c", plan_id: "basic" })
      assert.strictEqual(bought.amount_usd, 9.99)
      const [plan] = yield* plans.subscriptions(alice.account.id)
      assert.deepStrictEqual(plan && [plan.order_id, plan.plan_id, plan.paid_with, plan.auto_renews, plan.current_period_start, plan.current_period_end], [
        bought.id, "basic", "card", true, bought.paid_at!, new Date(Date.parse(bought.paid_at!) + 30 * 24 * HOUR).toISOString()
      ])
      // Replayed payments and the healing pass make nothing twice; neither grants credits.
      yield* orders.completeCardPayment(sessionOf(bought), GOOD)
      yield* orders.healPaid
      assert.strictEqual((yield* plans.subscriptions(alice.account.id)).length, 1)
      assert.strictEqual((yield* plans.rentals(alice.account.id)).length, 1)
      assert.strictEqual((yield* balanceOf(alice)).total_credits, 0)
      // Not for another account, and never before payment.
      assert.deepStrictEqual(yield* plans.rentals(bob.account.id), [])
      yield* orders.create(bob, rental)
      assert.deepStrictEqual(yield* plans.rentals(bob.account.id), [])
      // Renewal orders come later (docs/plans.md).
      const renewal = yield* failure(orders.create(alice, { type: "subscription", machine_id: "m-eu-c", plan_id: "basic", renew_subscription_id: plan!.id }))
      assert.strictEqual(renewal.reason, "renewal_not_stablecoin")
      assert.match(renewal.message, /renew_subscription_id/)
    }).pipe(run))
})

describe("create, list, get", () => {
  it.effect("a created order is pending and unpaid, in the spec's shape", () =>
    Effect.gen(function*() {
      const orders = yield* Orders
      const order = yield* orders.create(alice, { type: "credits", amount_usd: 25, machine_id: "m-eu-a" })
      Schema.decodeUnknownSync(Order)(order)
      assert.deepStrictEqual({ ...order, id: "x" }, {
        id: "x",
        type: "credits",
        title: "25,000 credits on EU A",
        amount_usd: 25,
        currency: "USD",
        status: "pending",
        machine_id: "m-eu-a",
        payment: { method: null },
        pay_url: "",
        created_at: toTimestamp(T0),
        paid_at: null
      })
      assert.match(order.id, /^ord_/)
      const pkg = yield* orders.create(alice, { type: "package", package_id: "starter", gift: true })
      assert.strictEqual(pkg.title, "Gift: Starter")
      assert.strictEqual(pkg.amount_usd, 10)
      assert.deepStrictEqual(yield* orders.get(alice, order.id), { ...order, ticket: null })
      // Nothing is charged or granted until payment completes.
      assert.deepStrictEqual(yield* balanceOf(alice), { total_credits: 0, by_scope: [{ machine_id: null, credits: 0 }] })
    }).pipe(run))

  it.effect("unknown machine or package -> 404; another account's order -> 404 order_not_found", () =>
    Effect.gen(function*() {
      const orders = yield* Orders
      assert.strictEqual(
        (yield* failure(orders.create(alice, { type: "credits", amount_usd: 5, machine_id: "ghost" }))).reason,
        "machine_not_found"
      )
      assert.strictEqual(
        (yield* failure(orders.create(alice, { type: "package", package_id: "ghost" }))).reason,
        "package_not_found"
      )
      const order = yield* orders.create(alice, credits(5))
      assert.deepStrictEqual(yield* failure(orders.get(bob, order.id)), {
        tag: "OrderError",
        reason: "order_not_found",
        message: `No order "${order.id}".`
      })
      assert.strictEqual((yield* failure(orders.pay(bob, order.id, { method: "card" }))).reason, "order_not_found")
    }).pipe(run))

  it.effect("list: the caller's orders, newest first; limit 1 to 200, default 50", () =>
    Effect.gen(function*() {
      const orders = yield* Orders
      const made: Array<Order> = []
      for (let i = 0; i < 55; i++) {
        made.push(yield* orders.create(alice, credits(5 + i)))
        yield* TestClock.adjust(1000)
      }
      yield* orders.create(bob, credits(5))
      const page = yield* orders.list(alice)
      Schema.decodeUnknownSync(OrderList)(page)
      assert.strictEqual(page.data.length, 50)
      assert.deepStrictEqual(page.data.map((o) => o.id), made.slice(5).reverse().map((o) => o.id))
      assert.deepStrictEqual((yield* orders.list(alice, 200)).data.length, 55)
      assert.deepStrictEqual((yield* orders.list(alice, 1)).data.map((o) => o.id), [made[54]!.id])
      for (const bad of [0, 201, 1.5, -1, Number.NaN]) {
        const error = yield* failure(orders.list(alice, bad))
        assert.strictEqual(error.reason, "invalid_limit")
        assert.match(error.message, /1 to 200/)
      }
    }).pipe(run))
})

// ---------------------------------------------------------------------------------------------
// card

describe("card payments", () => {
  it.effect("pay -> pay_url on the hosted checkout; the good card pays once, grants credits, writes a receipt", () =>
    Effect.gen(function*() {
      const orders = yield* Orders
      const ledger = yield* Ledger
      const order = yield* orders.create(alice, credits(25))
      const started = yield* orders.pay(alice, order.id, { method: "card" })
      assert.deepStrictEqual(started.payment, { method: "card" })
      assert.match(started.pay_url, /^https:\/\/platform\.test\/checkout\/cs_test_/)
      assert.strictEqual(started.status, "pending")
      // Paying again keeps the session (one checkout per order).
      assert.strictEqual((yield* orders.pay(alice, order.id, { method: "card" })).pay_url, started.pay_url)

      const session = sessionOf(started)
      assert.deepStrictEqual(yield* orders.checkout(session), {
        session_id: session,
        order_id: order.id,
        title: "25,000 credits",
        amount_text: "$25.00",
        status: "open",
        paid_at: null
      })

      yield* TestClock.adjust(5_000)
      const result = yield* orders.completeCardPayment(session, GOOD)
      assert.strictEqual(result._tag, "Paid")
      const paid = yield* orders.get(alice, order.id)
      assert.strictEqual(paid.status, "paid")
      assert.strictEqual(paid.paid_at, toTimestamp(T0 + 5_000))
      assert.isNull(paid.ticket)
      assert.deepStrictEqual(yield* balanceOf(alice), { total_credits: 25_000, by_scope: [{ machine_id: null, credits: 25_000 }] })
      const activity = yield* ledger.activity(alice.account.id)
      assert.deepStrictEqual(activity.data.map((a) => [a.type, a.credits]), [["credit_added", 25_000]])

      const receipts = yield* orders.receipts(alice)
      assert.strictEqual(receipts.data.length, 1)
      const receipt = receipts.data[0]!
      Schema.decodeUnknownSync(Receipt)(receipt)
      assert.deepStrictEqual({ ...receipt, id: "x" }, {
        id: "x",
        kind: "credits",
        title: "25,000 credits",
        status: "paid",
        paid_at: toTimestamp(T0 + 5_000),
        amount: { value: 25, currency: "USD", text: "$25.00" },
        credits: 25_000,
        paid_with: "card",
        auto_reload: false
      })
      assert.deepStrictEqual(yield* orders.receipt(alice, receipt.id), receipt)
      assert.strictEqual((yield* failure(orders.receipt(bob, receipt.id))).reason, "receipt_not_found")
      assert.strictEqual(yield* orders.purchasedCredits(alice.account.id), 25_000n * MICRO_PER_CREDIT)
      assert.strictEqual((yield* orders.checkout(session)).status, "paid")

      // Paying a paid order: 409.
      for (const body of [{ method: "card" }, STABLE] as const) {
        assert.deepStrictEqual(yield* failure(orders.pay(alice, order.id, body)), {
          tag: "OrderError",
          reason: "order_already_paid",
          message: `Order ${order.id} is already paid.`
        })
      }
    }).pipe(run))

  it.effect("replaying the completion (any card) changes nothing", () =>
    Effect.gen(function*() {
      const orders = yield* Orders
      const paid = yield* buyByCard(alice, credits(10))
      const store = yield* OrderStore
      const before = {
        balance: yield* balanceOf(alice),
        receipts: yield* orders.receipts(alice),
        order: yield* store.findOrder(paid.id)
      }
      const session = sessionOf(paid)
      for (const c of [GOOD, DECLINED, GOOD, card("1")]) {
        const again = yield* orders.completeCardPayment(session, c)
        assert.strictEqual(again._tag, "Paid")
      }
      assert.deepStrictEqual({
        balance: yield* balanceOf(alice),
        receipts: yield* orders.receipts(alice),
        order: yield* store.findOrder(paid.id)
      }, before)
    }).pipe(run))

  it.effect("a declined card leaves everything unchanged; another card may then pay", () =>
    Effect.gen(function*() {
      const orders = yield* Orders
      const order = yield* orders.create(alice, credits(25))
      const session = sessionOf(yield* orders.pay(alice, order.id, { method: "card" }))
      for (const [number, reason] of [["4000000000000002", "card_declined"], ["4000000000009995", "insufficient_funds"]]) {
        const result = yield* orders.completeCardPayment(session, card(number!))
        assert.strictEqual(result._tag, "Declined")
        if (result._tag === "Declined") {
          assert.strictEqual(result.reason, reason)
          assert.strictEqual(result.checkout.status, "open")
        }
      }
      assert.strictEqual((yield* orders.get(alice, order.id)).status, "pending")
      assert.strictEqual((yield* balanceOf(alice)).total_credits, 0)
      assert.deepStrictEqual((yield* orders.receipts(alice)).data, [])
      assert.strictEqual(yield* orders.purchasedCredits(alice.account.id), 0n)
      assert.strictEqual((yield* orders.completeCardPayment(session, GOOD))._tag, "Paid")
      assert.strictEqual((yield* balanceOf(alice)).total_credits, 25_000)
    }).pipe(run))

  it.effect("pinned credits and packages land in their scope", () =>
    Effect.gen(function*() {
      yield* buyByCard(alice, { type: "credits", amount_usd: 5, machine_id: "m-us-b" })
      yield* buyByCard(alice, { type: "package", package_id: "eu-a-offer" })
      yield* buyByCard(alice, { type: "package", package_id: "starter" })
      assert.deepStrictEqual(yield* balanceOf(alice), {
        total_credits: 40_000,
        by_scope: [
          { machine_id: null, credits: 10_000 },
          { machine_id: "m-eu-a", credits: 25_000 },
          { machine_id: "m-us-b", credits: 5_000 }
        ]
      })
      const receipts = (yield* (yield* Orders).receipts(alice)).data
      assert.deepStrictEqual(receipts.map((r) => [r.kind, r.credits]).sort(), [["credits", 5000], ["package", 10000], [
        "package",
        25000
      ]])
    }).pipe(run))

  it.effect("the payment window: 24 h from creation, renewed by pay; after it the order is expired", () =>
    Effect.gen(function*() {
      const orders = yield* Orders
      const order = yield* orders.create(alice, credits(25))
      yield* TestClock.adjust(23 * HOUR)
      const session = sessionOf(yield* orders.pay(alice, order.id, { method: "card" }))
      // Renewed: still payable 23 h after pay, i.e. 46 h after creation.
      yield* TestClock.adjust(23 * HOUR)
      assert.strictEqual((yield* orders.get(alice, order.id)).status, "pending")
      yield* TestClock.adjust(HOUR)
      assert.strictEqual((yield* orders.get(alice, order.id)).status, "expired")
      assert.strictEqual((yield* orders.list(alice)).data[0]!.status, "expired")
      assert.strictEqual((yield* failure(orders.pay(alice, order.id, { method: "card" }))).reason, "order_expired")
      assert.strictEqual((yield* orders.checkout(session)).status, "expired")
      const late = yield* orders.completeCardPayment(session, GOOD)
      assert.deepStrictEqual(late._tag === "Declined" ? late.reason : late._tag, "checkout_expired")
      assert.strictEqual((yield* balanceOf(alice)).total_credits, 0)
      assert.deepStrictEqual((yield* orders.receipts(alice)).data, [])
      assert.strictEqual(PAYMENT_WINDOW_MS, 24 * HOUR)
    }).pipe(run))

  it.effect("unknown sessions are 404 checkout_not_found; no card rail -> 400", () =>
    Effect.gen(function*() {
      const orders = yield* Orders
      assert.strictEqual((yield* failure(orders.checkout("cs_nope"))).reason, "checkout_not_found")
      assert.strictEqual((yield* failure(orders.completeCardPayment("cs_nope", GOOD))).reason, "checkout_not_found")
    }).pipe(run))

  it.effect("no payment rail configured: both methods are refused with 400 and the gate is closed", () =>
    Effect.gen(function*() {
      const orders = yield* Orders
      const order = yield* orders.create(alice, credits(25))
      for (const body of [{ method: "card" }, STABLE] as const) {
        const error = yield* failure(orders.pay(alice, order.id, body))
        assert.strictEqual(error.reason, body.method === "card" ? "card_payments_off" : "stablecoin_payments_off")
        assert.match(error.message, /not set up/)
      }
      assert.isFalse((yield* orders.charging).open)
    }).pipe((effect) => run(effect, noRails)))

  it.effect("20 concurrent completions of one checkout grant once", () =>
    Effect.gen(function*() {
      const orders = yield* Orders
      const order = yield* orders.create(alice, credits(25))
      const session = sessionOf(yield* orders.pay(alice, order.id, { method: "card" }))
      const results = yield* Effect.all(
        Array.from({ length: 20 }, () => orders.completeCardPayment(session, GOOD)),
        { concurrency: "unbounded" }
      )
      assert.isTrue(results.every((r) => r._tag === "Paid"))
      assert.strictEqual((yield* balanceOf(alice)).total_credits, 25_000)
      assert.strictEqual((yield* orders.receipts(alice)).data.length, 1)
    }).pipe(run))
})

// ---------------------------------------------------------------------------------------------
// stablecoin

describe("stablecoin payments", () => {
  it.effect("pay -> payment.deposit: chain, token, exact amount, an address unique to the order, memo", () =>
    Effect.gen(function*() {
      const orders = yield* Orders
      const { order, deposit } = yield* openDeposit(alice, credits(25))
      Schema.decodeUnknownSync(Order)(order)
      assert.deepStrictEqual({ ...deposit, address: "x" }, {
        chain: "base",
        token: "USDC",
        amount: "25.000000",
        address: "x",
        memo: null
      })
      assert.match(deposit.address, /^0x[0-9a-f]{40}$/)
      // Paying again in the same asset keeps the address; another order gets another one.
      assert.deepStrictEqual((yield* orders.pay(alice, order.id, STABLE)).payment, order.payment)
      const other = yield* openDeposit(alice, credits(25))
      assert.notStrictEqual(other.deposit.address, deposit.address)
      const dai = yield* openDeposit(alice, credits(5000), { method: "stablecoin", chain: "eth", token: "DAI" })
      assert.strictEqual(dai.deposit.amount, "5000.000000000000000000")
      // Another asset for an order that has an address: 409.
      assert.strictEqual(
        (yield* failure(orders.pay(alice, order.id, { method: "stablecoin", chain: "base", token: "USDT" }))).reason,
        "deposit_already_opened"
      )
    }).pipe(run))

  it.effect("chain and token must be given and among the options (400); no stablecoin rail -> 400", () =>
    Effect.gen(function*() {
      const orders = yield* Orders
      const order = yield* orders.create(alice, credits(25))
      for (
        const body of [
          { method: "stablecoin" },
          { method: "stablecoin", chain: "base" },
          { method: "stablecoin", chain: "base", token: "EURC" },
          { method: "stablecoin", chain: "solana", token: "USDC" }
        ] as const
      ) {
        const error = yield* failure(orders.pay(alice, order.id, body))
        assert.strictEqual(error.reason, "stablecoin_option_invalid")
        assert.match(error.message, /USDC on base/)
      }
    }).pipe(run))

  it.effect("no stablecoin rail -> 400", () =>
    Effect.gen(function*() {
      const orders = yield* Orders
      const order = yield* orders.create(alice, credits(25))
      assert.strictEqual((yield* failure(orders.pay(alice, order.id, STABLE))).reason, "stablecoin_payments_off")
    }).pipe((effect) => run(effect, { ...fixtureCatalogue, payments: { ...fixtureCatalogue.payments, stablecoin: null } })))

  it.effect("the exact deposit pays the order once, at the chain time it arrived", () =>
    Effect.gen(function*() {
      const orders = yield* Orders
      const { order, deposit } = yield* openDeposit(alice, credits(25))
      const arrived = toTimestamp(T0 + 60_000)
      yield* TestClock.adjust(120_000)
      const { result, transfer } = yield* send(deposit.address, "25.000000", { at: arrived })
      assert.deepStrictEqual(result.outcome, "counted")
      assert.isTrue(result.recorded)
      assert.deepStrictEqual(
        { ...result.order!, deposits: [] },
        {
          order_id: order.id,
          status: "paid",
          address: deposit.address,
          chain: "base",
          token: "USDC",
          amount_due: "25.000000",
          received: "25.000000",
          remaining: "0.000000",
          refund_due: "0.000000",
          other_assets: [],
          deposits: []
        }
      )
      const paid = yield* orders.get(alice, order.id)
      assert.strictEqual(paid.status, "paid")
      assert.strictEqual(paid.paid_at, arrived)
      assert.strictEqual((yield* balanceOf(alice)).total_credits, 25_000)
      assert.strictEqual((yield* orders.receipts(alice)).data[0]!.paid_with, "stablecoin")
      // The same transfer delivered again: nothing new.
      const before = yield* balanceOf(alice)
      const replay = yield* orders.recordDeposit(transfer)
      assert.isFalse(replay.recorded)
      assert.strictEqual(replay.outcome, "counted")
      assert.deepStrictEqual(yield* balanceOf(alice), before)
      assert.strictEqual((yield* orders.receipts(alice)).data.length, 1)
    }).pipe(run))

  it.effect("a short deposit leaves the order pending and is recorded; a top-up reaching the total pays it", () =>
    Effect.gen(function*() {
      const orders = yield* Orders
      const { order, deposit } = yield* openDeposit(alice, credits(25))
      const first = yield* send(deposit.address, "10")
      assert.strictEqual(first.result.outcome, "counted")
      assert.strictEqual(first.result.order?.status, "pending")
      assert.strictEqual(first.result.order?.received, "10.000000")
      assert.strictEqual(first.result.order?.remaining, "15.000000")
      assert.strictEqual(first.result.order?.refund_due, "0.000000")
      assert.strictEqual((yield* balanceOf(alice)).total_credits, 0)
      // Switching to card after part was paid by deposit: refused.
      assert.strictEqual((yield* failure(orders.pay(alice, order.id, { method: "card" }))).reason, "deposit_in_progress")
      const second = yield* send(deposit.address, "14.999999")
      assert.strictEqual(second.result.order?.remaining, "0.000001")
      assert.strictEqual((yield* orders.get(alice, order.id)).status, "pending")
      const third = yield* send(deposit.address, "0.000001")
      assert.strictEqual(third.result.order?.status, "paid")
      assert.strictEqual(third.result.order?.refund_due, "0.000000")
      assert.strictEqual((yield* balanceOf(alice)).total_credits, 25_000)
      assert.deepStrictEqual(yield* orders.deposits(order.id), third.result.order!)
    }).pipe(run))

  it.effect("an excess deposit pays the order and the excess is owed back", () =>
    Effect.gen(function*() {
      const orders = yield* Orders
      const { order, deposit } = yield* openDeposit(alice, credits(25))
      const { result } = yield* send(deposit.address, "30.5")
      assert.strictEqual(result.order?.status, "paid")
      assert.strictEqual(result.order?.received, "30.500000")
      assert.strictEqual(result.order?.refund_due, "5.500000")
      assert.strictEqual((yield* balanceOf(alice)).total_credits, 25_000)
      assert.strictEqual((yield* orders.get(alice, order.id)).status, "paid")
    }).pipe(run))

  it.effect("a late deposit (after payment, or after the window closed) is recorded and not credited", () =>
    Effect.gen(function*() {
      const orders = yield* Orders
      // After payment.
      const paid = yield* openDeposit(alice, credits(25))
      yield* send(paid.deposit.address, "25")
      const late = yield* send(paid.deposit.address, "25")
      assert.strictEqual(late.result.outcome, "late")
      assert.strictEqual(late.result.order?.refund_due, "25.000000")
      assert.strictEqual((yield* balanceOf(alice)).total_credits, 25_000)

      // After the window closed: a part before, the rest after; all of it is owed back.
      const expiring = yield* openDeposit(alice, credits(10))
      const part = yield* send(expiring.deposit.address, "4")
      assert.strictEqual(part.result.outcome, "counted")
      yield* TestClock.adjust(PAYMENT_WINDOW_MS)
      const rest = yield* send(expiring.deposit.address, "6")
      assert.strictEqual(rest.result.outcome, "late")
      assert.deepStrictEqual(
        [rest.result.order?.status, rest.result.order?.received, rest.result.order?.remaining, rest.result.order?.refund_due],
        ["expired", "10.000000", "0.000000", "10.000000"]
      )
      assert.strictEqual((yield* orders.get(alice, expiring.order.id)).status, "expired")
      assert.strictEqual((yield* balanceOf(alice)).total_credits, 25_000)
      assert.strictEqual((yield* orders.receipts(alice)).data.length, 1)
    }).pipe(run))

  it.effect("a deposit that arrived in time pays even when recorded after the window closed", () =>
    Effect.gen(function*() {
      const orders = yield* Orders
      const { order, deposit } = yield* openDeposit(alice, credits(25))
      yield* TestClock.adjust(PAYMENT_WINDOW_MS + HOUR)
      const { result } = yield* send(deposit.address, "25", { at: toTimestamp(T0 + PAYMENT_WINDOW_MS - 1) })
      assert.strictEqual(result.outcome, "counted")
      assert.strictEqual((yield* orders.get(alice, order.id)).status, "paid")
    }).pipe(run))

  it.effect("a card payment makes later deposits late; wrong assets and unknown addresses are not credited", () =>
    Effect.gen(function*() {
      const orders = yield* Orders
      const { order, deposit } = yield* openDeposit(alice, credits(25))
      const wrong = yield* send(deposit.address, "25", { token: "USDT" })
      assert.strictEqual(wrong.result.outcome, "wrong_asset")
      assert.strictEqual(wrong.result.order?.status, "pending")
      assert.deepStrictEqual(wrong.result.order?.other_assets, [{
        chain: "base",
        token: "USDT",
        amount: "25000000",
        tx: wrong.transfer.tx
      }])
      const session = sessionOf(yield* orders.pay(alice, order.id, { method: "card" }))
      assert.strictEqual((yield* orders.completeCardPayment(session, GOOD))._tag, "Paid")
      const after = yield* send(deposit.address, "25")
      assert.strictEqual(after.result.outcome, "late")
      assert.strictEqual(after.result.order?.refund_due, "25.000000")
      const stray = yield* send("0x000000000000000000000000000000000000dead", "25")
      assert.deepStrictEqual(stray.result, { outcome: "unmatched", recorded: true, order: null })
      assert.strictEqual((yield* balanceOf(alice)).total_credits, 25_000)
    }).pipe(run))

  it.effect("malformed transfers are refused (400) and record nothing", () =>
    Effect.gen(function*() {
      const orders = yield* Orders
      const { order, deposit } = yield* openDeposit(alice, credits(25))
      const chain = yield* SimulatedChain
      for (const amount of ["25.0000001", "-25", "2.5e1", "0", "0.000000", "", "25 "]) {
        const transfer = yield* chain.send({ chain: "base", token: "USDC", to: deposit.address, amount })
        assert.strictEqual((yield* failure(orders.recordDeposit(transfer))).reason, "invalid_transfer", amount)
      }
      const unknownAsset = yield* chain.send({ chain: "base", token: "DOGE", to: deposit.address, amount: "1" })
      assert.strictEqual((yield* failure(orders.recordDeposit(unknownAsset))).reason, "invalid_transfer")
      const badTime: Transfer = { ...unknownAsset, token: "USDC", at: "yesterday" }
      assert.strictEqual((yield* failure(orders.recordDeposit(badTime))).reason, "invalid_transfer")
      assert.deepStrictEqual((yield* orders.deposits(order.id)).deposits, [])
    }).pipe(run))

  it.effect("20 concurrent deliveries of one transfer, and 20 concurrent exact deposits, pay once", () =>
    Effect.gen(function*() {
      const orders = yield* Orders
      const chain = yield* SimulatedChain
      const one = yield* openDeposit(alice, credits(25))
      const transfer = yield* chain.send({ chain: "base", token: "USDC", to: one.deposit.address, amount: "25" })
      const results = yield* Effect.all(Array.from({ length: 20 }, () => orders.recordDeposit(transfer)), {
        concurrency: "unbounded"
      })
      assert.strictEqual(results.filter((r) => r.recorded).length, 1)
      const many = yield* openDeposit(alice, credits(25))
      const transfers = yield* Effect.forEach(
        Array.from({ length: 20 }),
        () => chain.send({ chain: "base", token: "USDC", to: many.deposit.address, amount: "25" })
      )
      yield* Effect.all(transfers.map((t) => orders.recordDeposit(t)), { concurrency: "unbounded" })
      const summary = yield* orders.deposits(many.order.id)
      assert.strictEqual(summary.status, "paid")
      assert.strictEqual(summary.received, "500.000000")
      assert.strictEqual(summary.refund_due, "475.000000")
      assert.strictEqual((yield* balanceOf(alice)).total_credits, 50_000)
      assert.strictEqual((yield* orders.receipts(alice)).data.length, 2)
    }).pipe(run))
})

// ---------------------------------------------------------------------------------------------
// tickets

describe("gift tickets", () => {
  it.effect("a paid gift order issues a ticket instead of crediting the buyer", () =>
    Effect.gen(function*() {
      const orders = yield* Orders
      const tickets = yield* Tickets
      const order = yield* buyByCard(alice, { type: "credits", amount_usd: 25, gift: true })
      assert.strictEqual(order.title, "Gift: 25,000 credits")
      const ticket = order.ticket
      assert.isDefined(ticket)
      assert.isNotNull(ticket)
      if (ticket === null || ticket === undefined) return
      Schema.decodeUnknownSync(Ticket)(ticket)
      assert.match(ticket.code, /^[0-9A-Z]{5}(-[0-9A-Z]{5}){3}$/)
      assert.deepStrictEqual({ ...ticket, code: "x" }, {
        code: "x",
        credits: 25_000,
        machine_id: null,
        redeemed: false,
        redeemed_by_you: false
      })
      assert.strictEqual((yield* balanceOf(alice)).total_credits, 0)
      // The buyer paid: the receipt and the purchased credits are the buyer's.
      assert.strictEqual((yield* orders.receipts(alice)).data.length, 1)
      assert.strictEqual(yield* orders.purchasedCredits(alice.account.id), 25_000n * MICRO_PER_CREDIT)
      const listed = yield* tickets.list(alice)
      Schema.decodeUnknownSync(TicketList)(listed)
      assert.deepStrictEqual(listed.data, [ticket])
      assert.deepStrictEqual((yield* tickets.list(bob)).data, [])
    }).pipe(run))

  it.effect("redeemed once, by anyone; refused the second time; unknown or malformed codes are 404", () =>
    Effect.gen(function*() {
      const orders = yield* Orders
      const tickets = yield* Tickets
      const order = yield* buyByCard(alice, { type: "credits", amount_usd: 10, gift: true })
      const code = order.ticket!.code
      // Typed loosely: lower case, spaces instead of dashes.
      const redeemed = yield* tickets.redeem(bob, code.toLowerCase().replace(/-/g, " "))
      Schema.decodeUnknownSync(RedeemResponse)(redeemed)
      assert.deepStrictEqual(redeemed, { redeemed: true, credits: 10_000, machine_id: null })
      assert.strictEqual((yield* balanceOf(bob)).total_credits, 10_000)
      assert.strictEqual((yield* balanceOf(alice)).total_credits, 0)
      assert.strictEqual(yield* orders.purchasedCredits(bob.account.id), 0n)

      for (const who of [bob, alice]) {
        assert.deepStrictEqual(yield* failure(tickets.redeem(who, code)), {
          tag: "TicketError",
          reason: "ticket_already_redeemed",
          message: who === bob ? "You have already redeemed this ticket." : "This ticket has already been redeemed."
        })
      }
      assert.strictEqual((yield* balanceOf(bob)).total_credits, 10_000)
      // The buyer sees it redeemed, not by them; the order shows the same.
      assert.deepStrictEqual((yield* tickets.list(alice)).data, [{
        code,
        credits: 10_000,
        machine_id: null,
        redeemed: true,
        redeemed_by_you: false
      }])
      assert.deepStrictEqual((yield* orders.get(alice, order.id)).ticket?.redeemed, true)
      for (const bad of ["00000-00000-00000-00000", "nope", ""]) {
        assert.deepStrictEqual(yield* failure(tickets.redeem(bob, bad)), {
          tag: "TicketError",
          reason: "ticket_not_found",
          message: "No ticket has this code."
        })
      }
    }).pipe(run))

  it.effect("a pinned ticket grants pinned credits; a buyer redeeming their own ticket sees redeemed_by_you", () =>
    Effect.gen(function*() {
      const orders = yield* Orders
      const tickets = yield* Tickets
      const pinned = yield* buyByCard(alice, { type: "package", package_id: "eu-a-offer", gift: true })
      assert.deepStrictEqual(yield* tickets.redeem(alice, pinned.ticket!.code), {
        redeemed: true,
        credits: 25_000,
        machine_id: "m-eu-a"
      })
      assert.deepStrictEqual(yield* balanceOf(alice), {
        total_credits: 25_000,
        by_scope: [{ machine_id: null, credits: 0 }, { machine_id: "m-eu-a", credits: 25_000 }]
      })
      assert.deepStrictEqual((yield* orders.get(alice, pinned.id)).ticket, {
        code: pinned.ticket!.code,
        credits: 25_000,
        machine_id: "m-eu-a",
        redeemed: true,
        redeemed_by_you: true
      })
      const activity = yield* (yield* Ledger).activity(alice.account.id)
      assert.deepStrictEqual(activity.data.map((a) => [a.type, a.credits, a.machine_id]), [["credit_added", 25_000, "m-eu-a"]])
    }).pipe(run))

  it.effect("a gift paid by stablecoin issues its ticket too; an unpaid gift order has none", () =>
    Effect.gen(function*() {
      const orders = yield* Orders
      const { order, deposit } = yield* openDeposit(alice, { type: "credits", amount_usd: 5, gift: true })
      assert.isNull((yield* orders.get(alice, order.id)).ticket)
      yield* send(deposit.address, "5")
      assert.strictEqual((yield* orders.get(alice, order.id)).ticket?.credits, 5_000)
      assert.strictEqual((yield* (yield* Tickets).list(alice)).data.length, 1)
    }).pipe(run))

  it.effect("20 concurrent redemptions by 20 accounts: one wins, 19 are refused, credits granted once", () =>
    Effect.gen(function*() {
      const tickets = yield* Tickets
      const order = yield* buyByCard(alice, { type: "credits", amount_usd: 5, gift: true })
      const callers = Array.from({ length: 20 }, (_, i) => makeCaller(`r${i}`))
      const exits = yield* Effect.all(callers.map((c) => Effect.exit(tickets.redeem(c, order.ticket!.code))), {
        concurrency: "unbounded"
      })
      assert.strictEqual(exits.filter((e) => e._tag === "Success").length, 1)
      let total = 0
      for (const c of callers) total += (yield* balanceOf(c)).total_credits
      assert.strictEqual(total, 5_000)
    }).pipe(run))
})

// ---------------------------------------------------------------------------------------------
// crash recovery

describe("interrupted fulfilment is completed", () => {
  it.effect("healPaid fulfils paid orders without a receipt, once", () =>
    Effect.gen(function*() {
      const orders = yield* Orders
      const store = yield* OrderStore
      const order = yield* orders.create(alice, credits(25))
      const gift = yield* orders.create(alice, { type: "credits", amount_usd: 5, gift: true })
      // As if the process died right after marking them paid.
      assert.isTrue(yield* store.markPaid(order.id, "card", toTimestamp(T0)))
      assert.isTrue(yield* store.markPaid(gift.id, "card", toTimestamp(T0)))
      assert.strictEqual((yield* balanceOf(alice)).total_credits, 0)
      assert.strictEqual(yield* orders.healPaid, 2)
      assert.strictEqual((yield* balanceOf(alice)).total_credits, 25_000)
      assert.strictEqual((yield* orders.receipts(alice)).data.length, 2)
      assert.isNotNull((yield* orders.get(alice, gift.id)).ticket)
      assert.strictEqual(yield* orders.healPaid, 0)
      assert.strictEqual((yield* balanceOf(alice)).total_credits, 25_000)
    }).pipe(run))

  it.effect("a redemption cut short before its grant is completed when the redeemer asks again", () =>
    Effect.gen(function*() {
      const tickets = yield* Tickets
      const store = yield* OrderStore
      const order = yield* buyByCard(alice, { type: "credits", amount_usd: 5, gift: true })
      const code = order.ticket!.code
      // As if the process died between marking the ticket redeemed and posting the credits.
      assert.strictEqual((yield* store.redeemTicket(code, bob.account.id, toTimestamp(T0)))._tag, "Redeemed")
      assert.strictEqual((yield* balanceOf(bob)).total_credits, 0)
      assert.strictEqual((yield* failure(tickets.redeem(bob, code))).reason, "ticket_already_redeemed")
      assert.strictEqual((yield* balanceOf(bob)).total_credits, 5_000)
      yield* failure(tickets.redeem(bob, code))
      assert.strictEqual((yield* balanceOf(bob)).total_credits, 5_000)
    }).pipe(run))
})

// ---------------------------------------------------------------------------------------------
// properties

const ACCOUNTS = [makeCaller("p0"), makeCaller("p1"), makeCaller("p2")] as const
const MACHINE_IDS = [null, "m-eu-a", "m-us-b"] as const

type Op =
  | {
    readonly _tag: "Create"
    readonly account: number
    readonly body: CreateOrder
  }
  | { readonly _tag: "Card"; readonly slot: number; readonly card: "good" | "declined" | "funds" }
  | { readonly _tag: "Stable"; readonly slot: number }
  /** cents, or "rest": exactly what the order still needs (its whole amount once nothing remains). */
  | { readonly _tag: "Deposit"; readonly slot: number; readonly cents: number | "rest"; readonly token: "USDC" | "USDT" }
  | { readonly _tag: "Redeem"; readonly slot: number; readonly account: number; readonly sloppy: boolean }
  | { readonly _tag: "Tick"; readonly hours: number }
  | { readonly _tag: "Replay"; readonly slot: number }

const bodyArb: fc.Arbitrary<CreateOrder> = fc.oneof(
  fc.record({
    type: fc.constant("credits" as const),
    amount_usd: fc.integer({ min: 5, max: 60 }),
    machine_id: fc.constantFrom(...MACHINE_IDS),
    gift: fc.boolean()
  }),
  fc.record({
    type: fc.constant("package" as const),
    package_id: fc.constantFrom("starter", "eu-a-offer"),
    gift: fc.boolean()
  })
)

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: fc.record({ _tag: fc.constant("Create" as const), account: fc.nat(2), body: bodyArb }), weight: 4 },
  {
    arbitrary: fc.record({
      _tag: fc.constant("Card" as const),
      slot: fc.nat(),
      card: fc.constantFrom("good" as const, "good" as const, "declined" as const, "funds" as const)
    }),
    weight: 3
  },
  { arbitrary: fc.record({ _tag: fc.constant("Stable" as const), slot: fc.nat() }), weight: 2 },
  {
    arbitrary: fc.record({
      _tag: fc.constant("Deposit" as const),
      slot: fc.nat(),
      cents: fc.oneof(
        { arbitrary: fc.constant("rest" as const), weight: 3 },
        { arbitrary: fc.integer({ min: 1, max: 6_000 }), weight: 2 },
        { arbitrary: fc.constantFrom(500, 1_000, 2_000, 2_500), weight: 1 }
      ),
      token: fc.constantFrom("USDC" as const, "USDC" as const, "USDC" as const, "USDT" as const)
    }),
    weight: 4
  },
  {
    arbitrary: fc.record({ _tag: fc.constant("Redeem" as const), slot: fc.nat(), account: fc.nat(2), sloppy: fc.boolean() }),
    weight: 3
  },
  {
    arbitrary: fc.record({
      _tag: fc.constant("Tick" as const),
      hours: fc.oneof({ arbitrary: fc.integer({ min: 1, max: 6 }), weight: 4 }, { arbitrary: fc.constant(25), weight: 1 })
    }),
    weight: 1
  },
  { arbitrary: fc.record({ _tag: fc.constant("Replay" as const), slot: fc.nat() }), weight: 3 }
)

const CARDS = { good: GOOD, declined: DECLINED, funds: card("4000000000009995") } as const

/** Everything money-related the stores hold, for every account of the scenario. */
const snapshot = Effect.gen(function*() {
  const ledgerStore = yield* LedgerStore
  const store = yield* OrderStore
  return yield* Effect.forEach(ACCOUNTS, (c) =>
    Effect.all({
      balances: ledgerStore.balances(c.account.id),
      entries: ledgerStore.entries(c.account.id),
      orders: store.listOrders(c.account.id, 1000),
      receipts: store.listReceipts(c.account.id),
      tickets: store.ticketsBoughtBy(c.account.id),
      purchased: store.purchasedCredits(c.account.id)
    }))
})

/**
 * Runs the ops; after each replay, checks that nothing changed. Returns the transfers sent per
 * address, for the final checks.
 */
const runScenario = (ops: ReadonlyArray<Op>) =>
  Effect.gen(function*() {
    const orders = yield* Orders
    const tickets = yield* Tickets
    const store = yield* OrderStore
    const chain = yield* SimulatedChain
    const created: Array<{ readonly id: string; readonly caller: Caller }> = []
    /** Re-deliverable events: a completion, a transfer or a redemption, as first delivered. */
    const events: Array<Effect.Effect<unknown>> = []
    const sent = new Map<string, bigint>()

    const pick = <T>(xs: ReadonlyArray<T>, slot: number): T | undefined => xs.length === 0 ? undefined : xs[slot % xs.length]

    for (const op of ops) {
      switch (op._tag) {
        case "Create": {
          const caller = ACCOUNTS[op.account]!
          const order = yield* orders.create(caller, op.body)
          created.push({ id: order.id, caller })
          break
        }
        case "Card": {
          const target = pick(created, op.slot)
          if (target === undefined) break
          const started = yield* Effect.exit(orders.pay(target.caller, target.id, { method: "card" }))
          if (started._tag === "Failure") break
          const complete = orders.completeCardPayment(sessionOf(started.value), CARDS[op.card])
          yield* complete
          events.push(Effect.ignore(complete))
          break
        }
        case "Stable": {
          const target = pick(created, op.slot)
          if (target === undefined) break
          yield* Effect.ignore(orders.pay(target.caller, target.id, STABLE))
          break
        }
        case "Deposit": {
          const withAddress: Array<OrderRecord> = []
          for (const c of created) {
            const record = yield* store.findOrder(c.id)
            if (record?.deposit != null) withAddress.push(record)
          }
          const target = pick(withAddress, op.slot)
          if (target === undefined || target.deposit === null) break
          const rest = parseUnits((yield* orders.deposits(target.id)).remaining, 6)!
          const base = op.cents === "rest"
            ? (rest > 0n ? rest : target.deposit.amount)
            : usdToBaseUnits(BigInt(op.cents), 6)
          const transfer = yield* chain.send({
            chain: "base",
            token: op.token,
            to: target.deposit.address,
            amount: formatUnits(base, 6)
          })
          const result = yield* orders.recordDeposit(transfer)
          // The oracle: the wrong token is never counted; the right one only while the order is payable.
          const now = yield* Clock.currentTimeMillis
          const payable = target.status === "pending" && now < Date.parse(target.expires_at)
          expect(result.outcome).toBe(op.token === "USDT" ? "wrong_asset" : payable ? "counted" : "late")
          if (op.token === "USDC") sent.set(target.deposit.address, (sent.get(target.deposit.address) ?? 0n) + base)
          events.push(Effect.ignore(orders.recordDeposit(transfer)))
          break
        }
        case "Redeem": {
          const all: Array<string> = []
          for (const c of ACCOUNTS) for (const t of yield* store.ticketsBoughtBy(c.account.id)) all.push(t.code)
          const code = pick(all.sort(), op.slot)
          if (code === undefined) break
          const typed = op.sloppy ? code.toLowerCase().replace(/-/g, "") : code
          const redeem = tickets.redeem(ACCOUNTS[op.account]!, typed)
          yield* Effect.ignore(redeem)
          events.push(Effect.ignore(redeem))
          break
        }
        case "Tick":
          yield* TestClock.adjust(op.hours * HOUR)
          break
        case "Replay": {
          if (events.length === 0) break
          const before = yield* snapshot
          // The chosen event, then every event again in reverse order.
          yield* events[op.slot % events.length]!
          for (const event of [...events].reverse()) yield* event
          expect(yield* snapshot).toEqual(before)
          break
        }
      }
    }
    return { created, events, sent }
  })

/** Conservation and bookkeeping after any scenario. */
const checkInvariants = (sent: ReadonlyMap<string, bigint>) =>
  Effect.gen(function*() {
    const store = yield* OrderStore
    const ledger = yield* Ledger
    const ledgerStore = yield* LedgerStore
    const orders = yield* Orders
    const expected = new Map<string, bigint>()
    const add = (accountId: string, machineId: string | null, amount: bigint) => {
      const key = `${accountId}|${machineId ?? ""}`
      expected.set(key, (expected.get(key) ?? 0n) + amount)
    }
    for (const caller of ACCOUNTS) {
      const records = yield* store.listOrders(caller.account.id, 1000)
      const receipts = yield* store.listReceipts(caller.account.id)
      const paid = records.filter((o) => o.status === "paid")
      // One receipt per paid order, none for the others, each matching its order.
      expect(receipts.map((r) => r.order_id).sort()).toEqual(paid.map((o) => o.id).sort())
      for (const r of receipts) {
        const o = paid.find((x) => x.id === r.order_id)!
        expect([r.credits, r.amount_cents, r.paid_with, r.paid_at]).toEqual([o.credits, o.amount_cents, o.paid_with, o.paid_at])
      }
      // Purchased credits: the account's paid orders, gifts included.
      expect(yield* store.purchasedCredits(caller.account.id)).toBe(paid.reduce((s, o) => s + o.credits, 0n))
      expect(yield* orders.purchasedCredits(caller.account.id)).toBe(paid.reduce((s, o) => s + o.credits, 0n))
      // A ticket per paid gift order, none for the rest.
      const bought = yield* store.ticketsBoughtBy(caller.account.id)
      expect(bought.map((t) => t.order_id).sort()).toEqual(paid.filter((o) => o.gift).map((o) => o.id).sort())
      for (const o of paid) {
        if (!o.gift) add(caller.account.id, o.machine_id, o.credits)
      }
      for (const t of bought) {
        const o = paid.find((x) => x.id === t.order_id)!
        expect([t.credits, t.machine_id]).toEqual([o.credits, o.machine_id])
        if (t.redeemed_by !== null) add(t.redeemed_by, t.machine_id, t.credits)
      }
      // Stablecoin accounting: what the address received is what was sent to it, and an order
      // paid by stablecoin had its amount covered by deposits in time.
      for (const o of records) {
        if (o.deposit === null) continue
        const summary = yield* orders.deposits(o.id)
        const received = parseUnits(summary.received, 6)!
        expect(received).toBe(sent.get(o.deposit.address) ?? 0n)
        const refund = parseUnits(summary.refund_due, 6)!
        if (o.status === "paid" && o.paid_with === "stablecoin") expect(refund).toBe(received - o.deposit.amount)
        if (o.status === "paid" && o.paid_with === "card") expect(refund).toBe(received)
      }
    }
    // Conservation: every ledger holds exactly the credits of the paid non-gift orders and the
    // redeemed tickets, scope by scope; no other credit exists.
    for (const caller of ACCOUNTS) {
      const balances = yield* ledgerStore.balances(caller.account.id)
      for (const machineId of MACHINE_IDS) {
        const posted = balances.find((b) => b.machine_id === machineId)?.posted ?? 0n
        expect(posted).toBe(expected.get(`${caller.account.id}|${machineId ?? ""}`) ?? 0n)
      }
      expect(balances.every((b) => (MACHINE_IDS as ReadonlyArray<string | null>).includes(b.machine_id))).toBe(true)
      expect(yield* ledger.audit(caller.account.id)).toEqual([])
      const json = yield* ledger.balance(caller.account.id)
      expect(creditsToMicro(json.total_credits)).toBe(balances.reduce((s, b) => s + b.posted - b.held, 0n))
    }
  })

const runProperty = <A, E>(effect: Effect.Effect<A, E, Env | TestClock.TestClock>) =>
  Effect.runPromise(
    Effect.andThen(TestClock.setTime(T0), effect).pipe(
      Effect.provide(stack(config).pipe(Layer.provideMerge(TestClock.layer())))
    )
  )

describe("money invariants (property, memory stores)", () => {
  vit("replaying any completion, transfer or redemption, any number of times in any order, changes nothing", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 40, size: "max" }), (ops) =>
        runProperty(Effect.gen(function*() {
          const { events, sent } = yield* runScenario(ops)
          const before = yield* snapshot
          // Everything again, twice, in two orders.
          for (const event of events) yield* event
          for (const event of [...events].reverse()) yield* event
          expect(yield* snapshot).toEqual(before)
          yield* checkInvariants(sent)
        }))),
      { numRuns: 150 }
    )
  }, 120_000)

  vit("conservation: credits granted are exactly those of the paid orders and redeemed tickets", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 5, maxLength: 60, size: "max" }), fc.nat(), (ops, seed) =>
        runProperty(Effect.gen(function*() {
          const { sent } = yield* runScenario(ops)
          yield* checkInvariants(sent)
          // Fulfilment healing finds nothing to do after a clean run.
          expect(yield* (yield* Orders).healPaid).toBe(0)
          expect(seed).toBeGreaterThanOrEqual(0)
        }))),
      { numRuns: 150 }
    )
  }, 120_000)

  vit("interleaved concurrent completions, deliveries and redemptions grant once (fast-check scheduler)", async () => {
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), fc.integer({ min: 1, max: 6 }), (s, copies) =>
        runProperty(Effect.gen(function*() {
          const orders = yield* Orders
          const tickets = yield* Tickets
          const chain = yield* SimulatedChain
          const [buyer, other] = [ACCOUNTS[0], ACCOUNTS[1]]
          const byCard = yield* orders.create(buyer, credits(25))
          const session = sessionOf(yield* orders.pay(buyer, byCard.id, { method: "card" }))
          const { deposit, order: byCoin } = yield* openDeposit(buyer, credits(10))
          const gift = yield* buyByCard(buyer, { type: "credits", amount_usd: 5, gift: true })
          // Two transfers that together pay the coin order, one that is excess.
          const transfers = yield* Effect.forEach(
            ["4", "6", "6"],
            (amount) => chain.send({ chain: "base", token: "USDC", to: deposit.address, amount })
          )
          const tasks: Array<Effect.Effect<unknown>> = []
          for (let i = 0; i < copies; i++) {
            tasks.push(Effect.ignore(orders.completeCardPayment(session, i % 2 === 0 ? GOOD : DECLINED)))
            for (const t of transfers) tasks.push(Effect.ignore(orders.recordDeposit(t)))
            tasks.push(Effect.ignore(tickets.redeem(i % 2 === 0 ? other : buyer, gift.ticket!.code)))
          }
          // The scheduler decides the order in which the tasks start; they then interleave at
          // every store operation.
          const gates = tasks.map((_, i) => s.schedule(Promise.resolve(i)))
          yield* Effect.all([
            Effect.all(tasks.map((task, i) => Effect.andThen(Effect.promise(() => gates[i]!), task)), {
              concurrency: "unbounded"
            }),
            Effect.promise(() => s.waitAll())
          ], { concurrency: "unbounded" })

          const buyerCredits = (yield* balanceOf(buyer)).total_credits
          const otherCredits = (yield* balanceOf(other)).total_credits
          // The card order (paid: at least one good completion ran), the coin order, the gift once.
          expect(buyerCredits + otherCredits).toBe(25_000 + 10_000 + 5_000)
          expect((yield* orders.get(buyer, byCard.id)).status).toBe("paid")
          expect((yield* orders.deposits(byCoin.id)).refund_due).toBe("6.000000")
          expect((yield* orders.receipts(buyer)).data.length).toBe(3)
          yield* checkInvariants(new Map([[deposit.address, 16_000_000n]]))
        }))),
      { numRuns: 60 }
    )
  }, 120_000)
})
