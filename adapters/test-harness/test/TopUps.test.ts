/**
 * Automatic top-ups after a crash (core/src/billing/TopUp.ts), on memory stores: a claim left
 * charging is taken over only once it is stale, and the takeover repeats the same charge (the
 * processor answers the first outcome: no second charge) and completes the order, credits and
 * receipt once; a charge whose answer was lost is run again by its process at once; Orders.healPaid
 * writes a top-up's missing receipt with auto_reload. And through billing's watch: top-ups turned
 * off in another process are not charged from the settings the watch keeps.
 */
import { assert, describe, it } from "@effect/vitest"
import {
  Alerts,
  AlertStore,
  BillingSettingsStore,
  BillingWatch,
  CHARGE_RETRY_MS,
  DEFAULT_BILLING_SETTINGS,
  STALE_CHARGE_MS,
  TopUps
} from "@model-platform/core/billing"
import { Catalogue } from "@model-platform/core/catalogue"
import { generateId, MICRO_PER_CREDIT, Time } from "@model-platform/core/kernel"
import { Ledger, LedgerStore } from "@model-platform/core/ledger"
import {
  AUTO_RELOAD_ORDER_KIND,
  CardProcessor,
  Orders,
  OrderStore,
  PAYMENT_WINDOW_MS,
  StablecoinRail,
  TestCardProcessor
} from "@model-platform/core/payments"
import { Clock, Effect, Fiber, Layer } from "effect"
import { TestClock } from "effect/testing"
import { fixtureCatalogue } from "../src/Fixtures.ts"
import { AlertStoreMemory } from "@model-platform/memory-stores/MemoryAlertStore"
import { BillingSettingsStoreMemory } from "@model-platform/memory-stores/MemoryBillingSettingsStore"
import { LedgerStoreMemory } from "@model-platform/memory-stores/MemoryLedgerStore"
import { OrderStoreMemory } from "@model-platform/memory-stores/MemoryOrderStore"
import { PlanStoreMemory } from "@model-platform/memory-stores/MemoryPlanStore"
import { MemoryStores } from "@model-platform/memory-stores/MemoryStores"

const THRESHOLD = 1_000n * MICRO_PER_CREDIT
const processor = TestCardProcessor.make({ baseUrl: "" })
const charges: Array<string> = []
const counting = CardProcessor.of({
  ...processor,
  chargeSaved: (charge) => Effect.tap(processor.chargeSaved(charge), () => Effect.sync(() => charges.push(charge.idempotency_key)))
})

/** Charges the card, then loses the answer the first time each key is charged (the connection dropped). */
const answered = new Set<string>()
const losing = CardProcessor.of({
  ...counting,
  chargeSaved: (charge) =>
    Effect.flatMap(counting.chargeSaved(charge), (outcome) => {
      if (answered.has(charge.idempotency_key)) return Effect.succeed(outcome)
      answered.add(charge.idempotency_key)
      return Effect.die(new Error("socket hang up"))
    })
})

const stores = Layer.mergeAll(MemoryStores, AlertStoreMemory, LedgerStoreMemory, OrderStoreMemory, PlanStoreMemory, BillingSettingsStoreMemory)
const servicesWith = (cards: CardProcessor["Service"]) =>
  Layer.mergeAll(TopUps.layer, Orders.layer).pipe(
    Layer.provideMerge(Alerts.layer),
    Layer.provideMerge(Ledger.layer),
    Layer.provide(Layer.mergeAll(Layer.succeed(CardProcessor, cards), StablecoinRail.layerSimulated, Catalogue.layer(fixtureCatalogue))),
    Layer.provideMerge(stores)
  )
const services = servicesWith(counting)
const withWatch = BillingWatch.layer.pipe(Layer.provide(Catalogue.layer(fixtureCatalogue)), Layer.provideMerge(services))

/** An account below the threshold with top-ups on and a saved 4242 card. */
const accountBelow = Effect.gen(function*() {
  const account = yield* generateId("acct")
  yield* (yield* Ledger).credit(account, { ref: "seed", machine_id: null, amount: THRESHOLD - 1n, type: "credit_added" })
  const saved = yield* processor.saveCard(account, { number: "4242424242424242", exp_month: 12, exp_year: 2099, cvc: "123" })
  if (saved._tag !== "Saved") return yield* Effect.die(new Error("the card did not save"))
  const auto = {
    ...DEFAULT_BILLING_SETTINGS.auto_reload,
    enabled: true,
    threshold: THRESHOLD,
    amount_usd: 5,
    card: { processor: "test", reference: saved.reference, description: saved.description, saved_at: yield* Time.now }
  }
  yield* (yield* BillingSettingsStore).update(account, { auto_reload: auto })
  return { account, auto, reference: saved.reference }
})

const posted = (account: string) =>
  Effect.gen(function*() {
    return (yield* (yield* LedgerStore).balances(account)).reduce((s, b) => s + b.posted, 0n)
  })

describe("automatic top-ups after a crash", () => {
  it.effect("a claim left charging: untouched while fresh, then taken over once, charging the same key once", () =>
    Effect.gen(function*() {
      const { account, auto, reference } = yield* accountBelow
      const topUps = yield* TopUps
      const alertStore = yield* AlertStore
      const orderId = yield* generateId(AUTO_RELOAD_ORDER_KIND)
      const now = yield* Clock.currentTimeMillis
      // A process claimed the crossing and charged the card, then died before recording anything.
      const claim = { version: 1, phase: "charging" as const, order_id: orderId, day: Time.toTimestamp(now).slice(0, 10), charges_on_day: 1, last_error: null }
      assert.isTrue(yield* alertStore.swapTopUp(account, undefined, { ...claim, updated_at: Time.toTimestamp(now - STALE_CHARGE_MS + 60_000) }))
      yield* counting.chargeSaved({ reference, account_id: account, amount_cents: 500n, currency: "USD", description: "x", idempotency_key: orderId })
      assert.deepStrictEqual(charges.filter((c) => c === orderId).length, 1)

      yield* topUps.check(account, auto)
      assert.strictEqual((yield* topUps.state(account))?.version, 1, "a fresh claim is left to its process")

      assert.isTrue(yield* alertStore.swapTopUp(account, 1, { ...claim, version: 2, updated_at: Time.toTimestamp(now - STALE_CHARGE_MS) }))
      yield* topUps.check(account, auto)
      yield* topUps.check(account, auto)
      const receipts = (yield* (yield* OrderStore).listReceipts(account)).filter((r) => r.auto_reload)
      assert.deepStrictEqual(receipts.map((r) => r.order_id), [orderId])
      assert.strictEqual(yield* posted(account), THRESHOLD - 1n + 5_000n * MICRO_PER_CREDIT)
      assert.strictEqual((yield* (yield* OrderStore).findOrder(orderId))?.status, "paid")
      // Bought credits: the top-up counts toward the usage tier, once.
      assert.strictEqual(yield* (yield* OrderStore).purchasedCredits(account), 5_000n * MICRO_PER_CREDIT)
      // The processor was asked again with the same key: it answered the first charge, made no other.
      assert.strictEqual(new Set(charges.filter((c) => c === orderId)).size, 1)
      const state = yield* topUps.state(account)
      assert.strictEqual(state?.phase, "armed")
      assert.strictEqual(state?.charges_on_day, 1)
    }).pipe(Effect.provide(services)))

  it.effect("a charge whose answer was lost is run again by its process at once: paid at that check, charged once", () =>
    Effect.gen(function*() {
      const { account, auto } = yield* accountBelow
      const topUps = yield* TopUps
      const before = charges.length
      const check = yield* Effect.forkChild(topUps.check(account, auto))
      yield* TestClock.adjust(CHARGE_RETRY_MS)
      yield* Fiber.join(check)
      const keys = charges.slice(before)
      assert.strictEqual(keys.length, 2, "asked twice")
      assert.strictEqual(new Set(keys).size, 1, "with one key: one charge")
      const receipts = (yield* (yield* OrderStore).listReceipts(account)).filter((r) => r.auto_reload)
      assert.deepStrictEqual(receipts.map((r) => r.order_id), [keys[0]])
      assert.strictEqual(yield* posted(account), THRESHOLD - 1n + 5_000n * MICRO_PER_CREDIT)
      assert.deepStrictEqual((yield* (yield* AlertStore).list(account, 10)).map((a) => a.kind), ["auto_reload_paid"])
      assert.strictEqual((yield* topUps.state(account))?.phase, "armed")
    }).pipe(Effect.provide(servicesWith(losing))))

  it.effect("Orders.healPaid completes a paid top-up without its receipt, with auto_reload", () =>
    Effect.gen(function*() {
      const orders = yield* OrderStore
      const account = yield* generateId("acct")
      const id = yield* generateId(AUTO_RELOAD_ORDER_KIND)
      const now = yield* Clock.currentTimeMillis
      yield* orders.insertOrder({
        id, account_id: account, type: "credits", title: "Automatic top-up: 5,000 credits", amount_cents: 500n, currency: "USD",
        credits: 5_000n * MICRO_PER_CREDIT, machine_id: null, package_id: null, gift: false, details: null, status: "pending", payment_method: "card",
        card_session_id: null, checkout_url: null, deposit: null, created_at: Time.toTimestamp(now),
        expires_at: Time.toTimestamp(now + PAYMENT_WINDOW_MS), paid_at: null, paid_with: null
      })
      assert.isTrue(yield* orders.markPaid(id, "card", Time.toTimestamp(now)))
      assert.isAtLeast(yield* (yield* Orders).healPaid, 1)
      const receipt = (yield* orders.listReceipts(account))[0]
      assert.strictEqual(receipt?.auto_reload, true)
      assert.strictEqual(yield* posted(account), 5_000n * MICRO_PER_CREDIT)
    }).pipe(Effect.provide(services)))
})

describe("automatic top-ups through billing's watch", () => {
  it.effect("turned off through another process: a crossing here charges nothing, whatever settings the watch kept", () =>
    Effect.gen(function*() {
      const { account, auto } = yield* accountBelow
      const ledger = yield* Ledger
      const watch = yield* BillingWatch
      yield* ledger.credit(account, { ref: "more", machine_id: null, amount: 10n * MICRO_PER_CREDIT, type: "credit_added" })
      // Above the threshold: the watch reads the settings (top-ups on) and keeps them.
      yield* watch.settled([account])
      // Turned off in another process: straight into the store; this process is not told.
      yield* (yield* BillingSettingsStore).update(account, { auto_reload: { ...auto, enabled: false } })
      // A settlement here takes the balance below the threshold.
      const expiresAt = Time.toTimestamp((yield* Clock.currentTimeMillis) + 3_600_000)
      const reserved = yield* ledger.reserve(account, null, 20n * MICRO_PER_CREDIT, expiresAt)
      if (reserved._tag !== "Reserved") return yield* Effect.die(new Error(`reserve: ${reserved._tag}`))
      yield* ledger.settle(reserved.ref, 20n * MICRO_PER_CREDIT)
      const before = charges.length
      yield* watch.settled([account])
      assert.strictEqual(charges.length, before, "no charge at the processor")
      assert.deepStrictEqual((yield* (yield* OrderStore).listReceipts(account)).filter((r) => r.auto_reload), [])
      const alerts = yield* (yield* AlertStore).list(account, 10)
      assert.deepStrictEqual(alerts.map((a) => a.kind), ["low_balance"])
      assert.include(alerts[0]!.message, "Automatic top-ups are off.")
    }).pipe(Effect.provide(withWatch)))
})
