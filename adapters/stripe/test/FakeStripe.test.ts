/**
 * The fake Stripe of the test harness (FakeStripe.ts), as the official client meets it: its
 * errors come back as the client's error classes, an Idempotency-Key replays the first answer and
 * refuses other parameters, an off-session charge of a card that wants its holder fails with
 * authentication_required, sessions expire, and webhooks are signed so that
 * `stripe.webhooks.constructEvent` accepts them with the endpoint's secret and no other.
 */
import { type FakeStripe, startFakeStripe } from "@model-platform/test-harness/FakeStripe"
import { createServer } from "node:http"
import type * as Net from "node:net"
import Stripe from "stripe"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

let fake: FakeStripe
let stripe: Stripe
let now = Date.now()

beforeAll(async () => {
  fake = await startFakeStripe({ now: () => now })
  stripe = new Stripe(fake.secretKey, { apiVersion: "2026-10-28.endive", ...fake.clientOptions })
})
afterAll(() => fake.close())

/** A customer with a saved card, saved on the hosted setup page. */
const customerWithCard = async (number: string) => {
  const customer = await stripe.customers.create({ metadata: { account_id: "acct_x" } })
  const session = await stripe.checkout.sessions.create({
    mode: "setup",
    currency: "usd",
    customer: customer.id,
    metadata: { account_id: "acct_x" },
    success_url: "http://127.0.0.1:9/done?session_id={CHECKOUT_SESSION_ID}"
  })
  const page = await fake.completeCheckout(session.url!, number)
  expect(page._tag).toBe("Redirected")
  const done = await stripe.checkout.sessions.retrieve(session.id, { expand: ["setup_intent"] })
  return { customer: customer.id, method: (done.setup_intent as Stripe.SetupIntent).payment_method as string }
}

describe("the fake Stripe, through the official client", () => {
  it("a wrong key is an authentication error", async () => {
    const wrong = new Stripe("sk_test_wrong", { apiVersion: "2026-10-28.endive", ...fake.clientOptions })
    await expect(wrong.customers.create({})).rejects.toBeInstanceOf(Stripe.errors.StripeAuthenticationError)
  })

  it("an Idempotency-Key replays the first answer, and refuses other parameters", async () => {
    const { customer, method } = await customerWithCard("4242424242424242")
    const params = { amount: 500, currency: "usd", customer, payment_method: method, off_session: true, confirm: true }
    const before = fake.all("charge").length
    const first = await stripe.paymentIntents.create(params, { idempotencyKey: "key-1" })
    const again = await stripe.paymentIntents.create(params, { idempotencyKey: "key-1" })
    expect(again.id).toBe(first.id)
    expect(fake.all("charge").length).toBe(before + 1)
    await expect(stripe.paymentIntents.create({ ...params, amount: 600 }, { idempotencyKey: "key-1" })).rejects.toBeInstanceOf(
      Stripe.errors.StripeIdempotencyError
    )
  })

  it("off-session, 3184 needs its holder (authentication_required) and 0341 is declined; neither charges", async () => {
    for (const [number, code] of [["4000002760003184", "authentication_required"], ["4000000000000341", "card_declined"]] as const) {
      const { customer, method } = await customerWithCard(number)
      const before = fake.all("charge").length
      const failed = await stripe.paymentIntents.create({ amount: 500, currency: "usd", customer, payment_method: method, off_session: true, confirm: true })
        .then(() => undefined, (error: unknown) => error)
      expect(failed).toBeInstanceOf(Stripe.errors.StripeCardError)
      expect((failed as Stripe.errors.StripeCardError).code).toBe(code)
      expect((failed as Stripe.errors.StripeCardError).payment_intent?.status).toBe("requires_payment_method")
      expect(fake.all("charge").length).toBe(before)
    }
  })

  it("a card not attached to the customer is refused (invalid request, param payment_method)", async () => {
    const { method } = await customerWithCard("4242424242424242")
    const other = await stripe.customers.create({})
    const refused = await stripe.paymentIntents.create({ amount: 500, currency: "usd", customer: other.id, payment_method: method, off_session: true, confirm: true })
      .then(() => undefined, (error: unknown) => error)
    expect(refused).toBeInstanceOf(Stripe.errors.StripeInvalidRequestError)
    expect((refused as Stripe.errors.StripeInvalidRequestError).param).toBe("payment_method")
  })

  it("a session whose expires_at has passed is expired, and its page refuses cards", async () => {
    const session = await stripe.checkout.sessions.create({
      mode: "payment",
      line_items: [{ quantity: 1, price_data: { currency: "usd", unit_amount: 2500, product_data: { name: "x" } } }],
      success_url: "http://127.0.0.1:9/ok",
      expires_at: Math.floor(now / 1000) + 3600
    })
    now += 3601_000
    expect((await stripe.checkout.sessions.retrieve(session.id)).status).toBe("expired")
    expect(await fake.completeCheckout(session.url!, "4242424242424242")).toMatchObject({ _tag: "Refused", status: 410 })
  })

  it("events are signed for each endpoint's secret: constructEvent accepts them with it, refuses them with another", async () => {
    const received: Array<{ body: string; signature: string }> = []
    const server = createServer((request, response) => {
      let body = ""
      request.on("data", (chunk: Buffer) => (body += chunk.toString()))
      request.on("end", () => {
        received.push({ body, signature: String(request.headers["stripe-signature"]) })
        response.end("ok")
      })
    })
    await new Promise<void>((listening) => server.listen(0, "127.0.0.1", listening))
    const secret = fake.addWebhook(`http://127.0.0.1:${(server.address() as Net.AddressInfo).port}/hook`)
    try {
      // Saving a card is a setup session completed: setup_intent.succeeded, checkout.session.completed.
      await customerWithCard("4242424242424242")
      await fake.settled()
      expect(received.map((r) => (JSON.parse(r.body) as { type: string }).type)).toEqual(
        expect.arrayContaining(["setup_intent.succeeded", "checkout.session.completed"])
      )
      for (const { body, signature } of received) {
        const event = stripe.webhooks.constructEvent(body, signature, secret, 300, undefined, now)
        expect(event.object).toBe("event")
        expect(() => stripe.webhooks.constructEvent(body, signature, "whsec_other", 300, undefined, now)).toThrow(Stripe.errors.StripeSignatureVerificationError)
      }
    } finally {
      fake.removeWebhooks()
      server.close()
    }
  })
})
