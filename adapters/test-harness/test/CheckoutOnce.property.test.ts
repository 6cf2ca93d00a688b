/**
 * One charge per checkout (docs/payments.md "Card"): however many submissions of one checkout run
 * at once, and in whatever order the card processor answers them, the card is charged once (one
 * charge id at the processor), the order is paid once, with one receipt and its credits once.
 * Orders on the memory stores and the test card processor, its answers ordered by fast-check's
 * scheduler as a processor's network round trips would be.
 */
import fc from "fast-check"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { expect, it } from "vitest"
import type { Caller } from "@model-platform/core/keys"
import { Catalogue } from "@model-platform/core/catalogue"
import { Ledger } from "@model-platform/core/ledger"
import { type CardDetails, CardProcessor, Orders, TestCardProcessor } from "@model-platform/core/payments"
import { toTimestamp } from "@model-platform/core/kernel"
import { fixtureCatalogue } from "../src/Fixtures.ts"
import { LedgerStoreMemory } from "@model-platform/memory-stores/MemoryLedgerStore"
import { OrderStoreMemory } from "@model-platform/memory-stores/MemoryOrderStore"
import { PlanStoreMemory } from "@model-platform/memory-stores/MemoryPlanStore"
import { SimulatedChain } from "../src/SimulatedChain.ts"

const T0 = Date.UTC(2026, 0, 15, 12, 0, 0, 0)
const BASE_URL = "https://platform.test"

const buyer: Caller = {
  account: { id: "acct_buyer", email: "buyer@orders.test", created_at: toTimestamp(T0) },
  key: {
    id: "key_buyer",
    account_id: "acct_buyer",
    name: "buyer",
    prefix: "mpk_test",
    secret_hash: "hash_buyer",
    permissions: ["inference", "read", "manage"],
    machine_id: null,
    subscription_id: null,
    rental_id: null,
    agent_id: null,
    created_at: toTimestamp(T0),
    last_used_at: null,
    revoked_at: null
  }
}

const card = (number: string): CardDetails => ({ number, exp_month: 12, exp_year: 2030, cvc: "123" })
/** Two approved test cards (a person paying twice with two cards is still one charge) and a declined one. */
const CARDS = [card("4242424242424242"), card("5555555555554444"), card("4000000000000002")]

/** The test processor, its charge answered when the scheduler says; every approved charge id is kept. */
const scheduledProcessor = (s: fc.Scheduler, charged: Set<string>) => {
  const base = TestCardProcessor.make({ baseUrl: BASE_URL })
  return CardProcessor.of({
    ...base,
    charge: (sessionId, request, details, idempotencyKey) =>
      Effect.promise(() => s.schedule(Promise.resolve(), `charge ${details.number}`)).pipe(
        Effect.andThen(base.charge(sessionId, request, details, idempotencyKey)),
        Effect.tap((outcome) => Effect.sync(() => outcome._tag === "Approved" && charged.add(outcome.charge_id)))
      )
  })
}

const stack = (processor: CardProcessor["Service"]) =>
  Orders.layer.pipe(
    Layer.provideMerge(Ledger.layer),
    Layer.provideMerge(Layer.mergeAll(
      LedgerStoreMemory,
      OrderStoreMemory,
      PlanStoreMemory,
      Catalogue.layer(fixtureCatalogue),
      Layer.succeed(CardProcessor, processor),
      SimulatedChain.layer
    )),
    Layer.provideMerge(TestClock.layer())
  )

it("N concurrent submissions of one checkout charge the card once, pay the order once, one receipt (fast-check scheduler)", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.scheduler(),
      fc.array(fc.integer({ min: 0, max: CARDS.length - 1 }), { minLength: 2, maxLength: 8 }),
      async (s, picks) => {
        const charged = new Set<string>()
        await Effect.runPromise(Effect.gen(function*() {
          yield* TestClock.setTime(T0)
          const orders = yield* Orders
          const ledger = yield* Ledger
          const order = yield* orders.create(buyer, { type: "credits", amount_usd: 25 })
          const session = decodeURIComponent(
            (yield* orders.pay(buyer, order.id, { method: "card" })).pay_url.slice(`${BASE_URL}/checkout/`.length)
          )
          const results = yield* Effect.all([
            Effect.all(picks.map((i) => orders.completeCardPayment(session, CARDS[i]!)), { concurrency: "unbounded" }),
            Effect.promise(() => s.waitAll())
          ], { concurrency: "unbounded" }).pipe(Effect.map(([results]) => results))

          const approvedAny = picks.some((i) => i < 2)
          expect(charged.size).toBe(approvedAny ? 1 : 0)
          expect((yield* orders.get(buyer, order.id)).status).toBe(approvedAny ? "paid" : "pending")
          expect((yield* orders.receipts(buyer)).data.length).toBe(approvedAny ? 1 : 0)
          expect((yield* ledger.balance(buyer.account.id)).total_credits).toBe(approvedAny ? 25_000 : 0)
          // Every submission that was approved answers paid; a decline answers declined.
          results.forEach((result, n) => {
            if (picks[n]! < 2) expect(result._tag).toBe("Paid")
          })
        }).pipe(Effect.provide(stack(scheduledProcessor(s, charged)))))
      }
    ),
    { numRuns: 100 }
  )
}, 120_000)
