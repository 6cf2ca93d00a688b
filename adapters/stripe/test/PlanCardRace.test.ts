/**
 * A plan bought on Stripe's page keeps its card for its renewals whichever path makes it: here the
 * webhook has marked the order paid and is held there (as a slow process would be), and the
 * person's return finds the order paid and makes the plan first (core/src/payments/Fulfilment.ts
 * `cardOf`). Its renewal is then charged to the card, as it is when the webhook makes it.
 */
import { OrderStore } from "@model-platform/core/payments"
import { OrderStoreMemory } from "@model-platform/memory-stores/MemoryOrderStore"
import { movableClock } from "@model-platform/test-harness/MovableClock"
import { startInProcess } from "@model-platform/test-harness/InProcess"
import { startStripeWorld, type StripeProcessorFor, type StripeWorld } from "@model-platform/test-harness/StripeCheckoutSuite"
import { Effect, Layer, Redacted } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { StripeCardProcessor } from "../src/StripeCardProcessor.ts"

const processorFor: StripeProcessorFor = (options) =>
  StripeCardProcessor.layer({
    secretKey: Redacted.make(options.secretKey),
    webhookSecret: Redacted.make(options.webhookSecret),
    client: options.client
  })

/** A latch the webhook's markPaid of one order waits at, after writing, until the test opens it. */
const latch = () => {
  let reached: () => void = () => {}
  let open: () => void = () => {}
  const reachedP = new Promise<void>((r) => (reached = r))
  const openP = new Promise<void>((r) => (open = r))
  return { reached, whenReached: reachedP, open, whenOpen: openP }
}

describe("a card plan made by the return page while the webhook settles it", () => {
  const clock = movableClock()
  let held: { readonly orderId: string; readonly gate: ReturnType<typeof latch> } | undefined
  const orderStore = Layer.effect(
    OrderStore,
    Effect.map(Effect.service(OrderStore), (store) =>
      OrderStore.of({
        ...store,
        markPaid: (orderId, paidWith, paidAt) =>
          Effect.tap(store.markPaid(orderId, paidWith, paidAt), (won) =>
            won && held?.orderId === orderId
              ? Effect.promise(() => {
                held!.gate.reached()
                return held!.gate.whenOpen
              })
              : Effect.void)
      }))
  ).pipe(Layer.provide(OrderStoreMemory))
  let world: StripeWorld
  beforeAll(async () => {
    world = await startStripeWorld(processorFor, ({ catalogue, cardProcessor }) =>
      startInProcess(catalogue, orderStore, { cardProcessor, clock: clock.clock, renewPlans: { intervalMs: 100 } }))
  }, 60_000)
  afterAll(async () => {
    await world?.stop()
  })

  const call = async (method: string, path: string, key: string, body?: unknown) => {
    const response = await world.platform.fetch(path, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    return { status: response.status, json: (await response.json()) as any }
  }

  it("renews on the card it was bought with", async () => {
    const key = await world.platform.newAccount!()
    const order = await call("POST", "/orders", key, { type: "subscription", machine_id: "m-eu-c", plan_id: "basic" })
    expect(order.status).toBe(200)
    const paying = await call("POST", `/orders/${order.json.id}/pay`, key, { method: "card" })
    held = { orderId: order.json.id, gate: latch() }
    world.fake.hold()
    const page = await world.fake.completeCheckout(paying.json.pay_url, "4242424242424242")
    if (page._tag !== "Redirected") throw new Error(`the checkout page refused the card: ${page.status}`)
    // The webhook marks the order paid and waits; the person comes back meanwhile.
    const delivered = world.fake.release()
    await held.gate.whenReached
    const back = await world.platform.fetch(new URL(page.location).pathname)
    expect(back.status).toBe(200)
    held.gate.open()
    await delivered
    const [plan] = (await call("GET", "/subscriptions", key)).json.data
    expect(plan).toMatchObject({ plan_id: "basic", status: "active", auto_renews: true })

    clock.advance(30 * 86_400_000 + 60_000)
    const deadline = Date.now() + 20_000
    let now = plan
    while (Date.now() < deadline && now.current_period_end === plan.current_period_end && now.renewal_error === null) {
      await new Promise((r) => setTimeout(r, 100))
      ;[now] = (await call("GET", "/subscriptions", key)).json.data
    }
    expect(now).toMatchObject({ status: "active", auto_renews: true, renewal_error: null })
    expect(Date.parse(now.current_period_end)).toBe(Date.parse(plan.current_period_end) + 30 * 86_400_000)
    // The purchase and the renewal, each with its receipt.
    expect((await call("GET", "/billing/receipts", key)).json.data.length).toBe(2)
  }, 60_000)
})
