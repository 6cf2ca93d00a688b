/**
 * The mailed link after a failed off-session charge (core/src/billing/PayLinks.ts), with the test
 * processor on memory stores: a top-up whose card wants its holder (3184) mails one link to the
 * platform's own checkout under PUBLIC_URL; paying it there pays that top-up's order once (its
 * credits, its receipt); another check neither charges again nor mails again. Without PUBLIC_URL
 * nothing is mailed and the alert says nothing of a link.
 */
import { assert, describe, it } from "@effect/vitest"
import { generateId, MICRO_PER_CREDIT, PublicAddress, Time } from "@model-platform/core/kernel"
import {
  Alerts,
  AlertStore,
  BillingSettingsStore,
  DEFAULT_BILLING_SETTINGS,
  PayLinks,
  TopUps
} from "@model-platform/core/billing"
import { Catalogue } from "@model-platform/core/catalogue"
import { AccountStore } from "@model-platform/core/keys"
import { Ledger, LedgerStore } from "@model-platform/core/ledger"
import { CardProcessor, Orders, StablecoinRail, TestCardProcessor } from "@model-platform/core/payments"
import { Effect, Layer } from "effect"
import { fixtureCatalogue } from "../src/Fixtures.ts"
import { AlertStoreMemory } from "@model-platform/memory-stores/MemoryAlertStore"
import { BillingSettingsStoreMemory } from "@model-platform/memory-stores/MemoryBillingSettingsStore"
import { LedgerStoreMemory } from "@model-platform/memory-stores/MemoryLedgerStore"
import { OrderStoreMemory } from "@model-platform/memory-stores/MemoryOrderStore"
import { MemoryOutbox } from "../src/MemoryOutbox.ts"
import { PlanStoreMemory } from "@model-platform/memory-stores/MemoryPlanStore"
import { MemoryStores } from "@model-platform/memory-stores/MemoryStores"

const THRESHOLD = 1_000n * MICRO_PER_CREDIT
const CARD_3184 = { number: "4000002760003184", exp_month: 12, exp_year: 2099, cvc: "123" }

const platform = (publicUrl: string | undefined) => {
  const processor = Layer.succeed(CardProcessor, TestCardProcessor.make({ baseUrl: "" }))
  const stores = Layer.mergeAll(MemoryStores, AlertStoreMemory, LedgerStoreMemory, OrderStoreMemory, PlanStoreMemory, BillingSettingsStoreMemory)
  const rails = Layer.mergeAll(processor, StablecoinRail.layerSimulated, Catalogue.layer(fixtureCatalogue))
  const mail = MemoryOutbox.layer
  const payLinks = PayLinks.layer.pipe(Layer.provide(Layer.mergeAll(processor, mail, Layer.succeed(PublicAddress, { publicUrl }))))
  return Layer.mergeAll(TopUps.layer, Orders.layer).pipe(
    Layer.provide(payLinks),
    Layer.provideMerge(Alerts.layer),
    Layer.provideMerge(Ledger.layer),
    Layer.provideMerge(rails),
    Layer.provideMerge(mail),
    Layer.provideMerge(stores)
  )
}

/** An account below the threshold, top-ups on, the 3184 card saved; its email. */
const accountBelow = Effect.gen(function*() {
  const account = yield* generateId("acct")
  const email = `${account}@test.local`
  yield* (yield* AccountStore).insert({ id: account, email, created_at: yield* Time.now })
  yield* (yield* Ledger).credit(account, { ref: "seed", machine_id: null, amount: THRESHOLD - 1n, type: "credit_added" })
  const saved = yield* (yield* CardProcessor).saveCard(account, CARD_3184)
  if (saved._tag !== "Saved") return yield* Effect.die(new Error("the card did not save"))
  const auto = {
    ...DEFAULT_BILLING_SETTINGS.auto_reload,
    enabled: true,
    threshold: THRESHOLD,
    amount_usd: 5,
    card: { processor: "test", reference: saved.reference, description: saved.description, saved_at: yield* Time.now }
  }
  yield* (yield* BillingSettingsStore).update(account, { auto_reload: auto })
  return { account, email, auto }
})

const posted = (account: string) => Effect.map(Effect.flatMap(LedgerStore, (l) => l.balances(account)), (bs) => bs.reduce((s, b) => s + b.posted, 0n))

describe("the link mailed after a failed automatic top-up", () => {
  it.effect("one link to the platform's checkout; paid there, the top-up is credited once; no retry, no second mail", () =>
    Effect.gen(function*() {
      const { account, auto, email } = yield* accountBelow
      const topUps = yield* TopUps
      yield* topUps.check(account, auto)
      assert.include((yield* topUps.state(account))?.last_error ?? "", "(authentication_required)")
      const mails = yield* (yield* MemoryOutbox).to(email)
      assert.strictEqual(mails.length, 1)
      const link = /https:\/\/platform\.test\/checkout\/(cs_test_\S+)/.exec(mails[0]!.text)
      assert.isNotNull(link)
      const [alert] = yield* (yield* AlertStore).list(account, 10)
      assert.include(alert!.message, "A link to pay it yourself was mailed")
      // More checks: nothing charged, nothing mailed.
      yield* topUps.check(account, auto)
      assert.strictEqual((yield* (yield* MemoryOutbox).to(email)).length, 1)
      // The person pays it on the platform's page (on-session, 3184 is approved there).
      const before = yield* posted(account)
      const paid = yield* (yield* Orders).completeCardPayment(link![1]!, CARD_3184)
      assert.strictEqual(paid._tag, "Paid")
      assert.strictEqual(yield* posted(account), before + 5_000n * MICRO_PER_CREDIT)
      const again = yield* (yield* Orders).completeCardPayment(link![1]!, CARD_3184)
      assert.strictEqual(again._tag, "Paid")
      assert.strictEqual(yield* posted(account), before + 5_000n * MICRO_PER_CREDIT)
    }).pipe(Effect.provide(platform("https://platform.test"))))

  it.effect("without PUBLIC_URL no link is mailed, and the alert says so by saying nothing of one", () =>
    Effect.gen(function*() {
      const { account, auto, email } = yield* accountBelow
      yield* (yield* TopUps).check(account, auto)
      assert.strictEqual((yield* (yield* MemoryOutbox).to(email)).length, 0)
      const [alert] = yield* (yield* AlertStore).list(account, 10)
      assert.notInclude(alert!.message, "link")
    }).pipe(Effect.provide(platform(undefined))))
})
