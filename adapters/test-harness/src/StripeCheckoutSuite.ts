/**
 * Paying orders through Stripe Checkout, on any shell (docs/payments.md "Card: Stripe's own
 * checkout", "Webhooks"): the shell runs the Stripe processor (the official client) against the
 * fake Stripe started here, whose webhooks reach the shell over HTTP (HttpForwarder.ts for shells
 * reached through `fetch`). A person pays on the fake's hosted page and comes back to the
 * platform's return page; the webhook may come first, later, twice, or at the same time, and the
 * order is paid once. Forged, tampered, stale and mismatching events change nothing.
 */
import type { CatalogueConfig } from "@model-platform/core/catalogue"
import type { CardProcessor } from "@model-platform/core/payments"
import type { DocumentStores } from "@model-platform/core/kernel"
import type { Layer } from "effect"
import { randomBytes } from "node:crypto"
import Stripe from "stripe"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FakeStripe, startFakeStripe } from "./FakeStripe.ts"
import { fixtureCatalogue } from "./Fixtures.ts"
import { type Forwarder, startForwarder } from "./HttpForwarder.ts"
import type { ShellUnderTest } from "./HttpSuite.ts"

/** How a shell's test makes the Stripe processor for the fake (adapters/stripe StripeCardProcessor.layer). */
export type StripeProcessorFor = (options: {
  readonly secretKey: string
  readonly webhookSecret: string
  readonly client: FakeStripe["clientOptions"]
}) => Layer.Layer<CardProcessor, never, DocumentStores>

export interface StripeShellSetup {
  readonly catalogue: CatalogueConfig
  /** PlatformOptions.cardProcessor */
  readonly cardProcessor: Layer.Layer<CardProcessor, never, DocumentStores>
}

export const stripeCatalogue: CatalogueConfig = {
  ...fixtureCatalogue,
  payments: { ...fixtureCatalogue.payments, card: { processor: "stripe" } }
}

/** The fake, the processor for it and the shell on it, with webhooks posted to the shell. */
export interface StripeWorld {
  readonly fake: FakeStripe
  readonly stripe: Stripe
  readonly webhookSecret: string
  readonly platform: ShellUnderTest
  readonly stop: () => Promise<void>
}

export const startStripeWorld = async (
  processorFor: StripeProcessorFor,
  start: (setup: StripeShellSetup) => Promise<ShellUnderTest>,
  catalogue: CatalogueConfig = stripeCatalogue
): Promise<StripeWorld> => {
  const fake = await startFakeStripe()
  const webhookSecret = `whsec_${randomBytes(24).toString("hex")}`
  const platform = await start({
    catalogue,
    cardProcessor: processorFor({ secretKey: fake.secretKey, webhookSecret, client: fake.clientOptions })
  })
  const forwarder: Forwarder = await startForwarder(platform.fetch)
  fake.addWebhook(`${forwarder.url}/webhooks/stripe`, webhookSecret)
  const stripe = new Stripe(fake.secretKey, { apiVersion: "2026-10-28.endive", ...fake.clientOptions })
  return {
    fake,
    stripe,
    webhookSecret,
    platform,
    stop: async () => {
      await fake.close()
      await forwarder.close()
      await platform.close()
    }
  }
}

export const stripeCheckoutSuite = (
  shell: string,
  processorFor: StripeProcessorFor,
  start: (setup: StripeShellSetup) => Promise<ShellUnderTest>
) =>
  describe(`card payments through Stripe Checkout on ${shell}`, () => {
    let world: StripeWorld
    beforeAll(async () => {
      world = await startStripeWorld(processorFor, start)
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
    const newKey = async () => (world.platform.newAccount === undefined ? world.platform.ownerSecret : await world.platform.newAccount())
    const credits = async (key: string): Promise<number> => (await call("GET", "/credits", key)).json.total_credits
    const receipts = async (key: string): Promise<number> => (await call("GET", "/billing/receipts", key)).json.data.length
    const orderStatus = async (key: string, id: string): Promise<string> => (await call("GET", `/orders/${id}`, key)).json.status

    /** An order of `usd` and its Stripe checkout. */
    const checkout = async (key: string, usd = 25) => {
      const created = await call("POST", "/orders", key, { type: "credits", amount_usd: usd })
      expect(created.status).toBe(200)
      const paying = await call("POST", `/orders/${created.json.id}/pay`, key, { method: "card" })
      expect(paying.status).toBe(200)
      const payUrl = paying.json.pay_url as string
      const sessionId = new URL(payUrl).pathname.split("/").pop()!
      return { id: created.json.id as string, payUrl, sessionId }
    }

    /** The person pays on Stripe's page; answers the return address it sends them to. */
    const payOnPage = async (payUrl: string, card = "4242424242424242") => {
      const page = await world.fake.completeCheckout(payUrl, card)
      if (page._tag !== "Redirected") throw new Error(`the checkout page refused the card: ${page.status} ${page.page.slice(0, 300)}`)
      return page.location
    }

    /** The person's browser at the return address. */
    const returnTo = async (location: string) => {
      const response = await world.platform.fetch(new URL(location).pathname)
      return { status: response.status, html: await response.text() }
    }

    /** Deliveries of the events about one Stripe object (a session, a payment), with their answers. */
    const deliveriesAbout = (objectId: string, type?: string) => {
      const events = new Set(
        world.fake.events.filter((e) => e["data"]["object"]["id"] === objectId && (type === undefined || e["type"] === type)).map((e) => e["id"])
      )
      return world.fake.deliveries.filter((d) => events.has(d.event_id)).map((d) => ({ type: d.type, status: d.status, body: JSON.parse(d.body) }))
    }

    const signed = (payload: string, options: { secret?: string; timestamp?: number } = {}) =>
      Stripe.webhooks.generateTestHeaderString({
        payload,
        secret: options.secret ?? world.webhookSecret,
        ...(options.timestamp === undefined ? {} : { timestamp: options.timestamp })
      })

    const postEvent = async (payload: string, signature: string | undefined) => {
      const response = await world.platform.fetch("/webhooks/stripe", {
        method: "POST",
        headers: { "content-type": "application/json", ...(signature === undefined ? {} : { "stripe-signature": signature }) },
        body: payload
      })
      return { status: response.status, json: (await response.json()) as any }
    }

    it("GET /payment-methods names Stripe; pay opens one Checkout Session for the order's exact amount, the order as its reference, one customer per account", async () => {
      expect((await world.platform.fetch("/payment-methods").then((r) => r.json()))).toMatchObject({ card: { available: true, processor: "stripe" } })
      const key = await newKey()
      const first = await checkout(key, 25)
      const second = await checkout(key, 7)
      expect(first.payUrl.startsWith(`${world.fake.url}/c/pay/`)).toBe(true)
      const a = world.fake.get(first.sessionId)!
      const b = world.fake.get(second.sessionId)!
      expect(a).toMatchObject({ mode: "payment", amount_total: 2500, currency: "usd", client_reference_id: first.id, metadata: { order_id: first.id } })
      expect(b).toMatchObject({ amount_total: 700, client_reference_id: second.id })
      expect(a["customer"]).toMatch(/^cus_/)
      expect(b["customer"]).toBe(a["customer"])
      expect(b["metadata"]["account_id"]).toBe(a["metadata"]["account_id"])
      const other = await checkout(await newKey(), 5)
      if (world.platform.newAccount !== undefined) expect(world.fake.get(other.sessionId)!["customer"]).not.toBe(a["customer"])
      // Paying again answers the same page.
      expect((await call("POST", `/orders/${first.id}/pay`, key, { method: "card" })).json.pay_url).toBe(first.payUrl)
    })

    it("the person's return pays the order before the webhook; the webhook then finds it paid: credited once, one receipt", async () => {
      const key = await newKey()
      const [before, receiptsBefore] = [await credits(key), await receipts(key)]
      const { id, payUrl, sessionId } = await checkout(key)
      world.fake.hold()
      const location = await payOnPage(payUrl)
      expect(new URL(location).pathname).toBe(`/checkout/${sessionId}`)
      const back = await returnTo(location)
      expect(back.status, back.html).toBe(200)
      expect(back.html).toContain(`data-testid="paid"`)
      expect(await credits(key)).toBe(before + 25_000)
      await world.fake.release()
      const completed = deliveriesAbout(sessionId, "checkout.session.completed")
      expect(completed).toEqual([expect.objectContaining({ status: 200, body: expect.objectContaining({ received: true, outcome: "already_paid" }) })])
      expect(await credits(key)).toBe(before + 25_000)
      expect(await receipts(key)).toBe(receiptsBefore + 1)
      expect(await orderStatus(key, id)).toBe("paid")
      // Back again later: still paid, nothing more.
      expect((await returnTo(location)).status).toBe(200)
      expect(await credits(key)).toBe(before + 25_000)
    })

    it("the webhook alone pays the order (the person never comes back)", async () => {
      const key = await newKey()
      const before = await credits(key)
      const { id, payUrl, sessionId } = await checkout(key, 10)
      await payOnPage(payUrl)
      await world.fake.settled()
      const intent = world.fake.get(world.fake.get(sessionId)!["payment_intent"])!
      // checkout.session.completed and payment_intent.succeeded race: one pays, the other finds it paid.
      const answers = [...deliveriesAbout(sessionId, "checkout.session.completed"), ...deliveriesAbout(intent["id"], "payment_intent.succeeded")]
      expect(answers.map((a) => a.status)).toEqual([200, 200])
      expect(answers.map((a) => a.body.outcome).sort()).toEqual(["already_paid", "paid"])
      expect(await orderStatus(key, id)).toBe("paid")
      expect(await credits(key)).toBe(before + 10_000)
      // A purchase of credits keeps no card.
      expect(intent["setup_future_usage"]).toBeNull()
    })

    it("concurrent pays answer one page; concurrent deliveries, replays and returns credit once", async () => {
      const key = await newKey()
      const [before, receiptsBefore] = [await credits(key), await receipts(key)]
      const created = await call("POST", "/orders", key, { type: "credits", amount_usd: 20 })
      const pays = await Promise.all(Array.from({ length: 4 }, () => call("POST", `/orders/${created.json.id}/pay`, key, { method: "card" })))
      expect(new Set(pays.map((p) => p.json.pay_url)).size).toBe(1)
      const payUrl = pays[0]!.json.pay_url as string
      world.fake.hold()
      const location = await payOnPage(payUrl)
      const sessionId = new URL(location).pathname.split("/").pop()!
      const completed = world.fake.events.find((e) => e["type"] === "checkout.session.completed" && e["data"]["object"]["id"] === sessionId)!
      await Promise.all([
        world.fake.release(),
        world.fake.redeliver(completed["id"]),
        world.fake.redeliver(completed["id"]),
        returnTo(location),
        returnTo(location),
        returnTo(location)
      ])
      expect(await credits(key)).toBe(before + 20_000)
      expect(await receipts(key)).toBe(receiptsBefore + 1)
      const answers = deliveriesAbout(sessionId, "checkout.session.completed").map((d) => d.body.outcome)
      expect(answers.length).toBe(3)
      expect(answers.filter((o) => o === "paid").length).toBeLessThanOrEqual(1)
      for (const outcome of answers) expect(["paid", "already_paid", "duplicate"]).toContain(outcome)
    })

    it("an event id delivered again is answered duplicate and changes nothing", async () => {
      const key = await newKey()
      const { payUrl, sessionId } = await checkout(key, 5)
      await payOnPage(payUrl)
      await world.fake.settled()
      const before = await credits(key)
      const completed = world.fake.events.find((e) => e["type"] === "checkout.session.completed" && e["data"]["object"]["id"] === sessionId)!
      await world.fake.redeliver(completed["id"])
      const answers = deliveriesAbout(sessionId, "checkout.session.completed")
      expect(answers.map((a) => a.status)).toEqual([200, 200])
      expect(["paid", "already_paid"]).toContain(answers[0]!.body.outcome)
      expect(answers[1]!.body.outcome).toBe("duplicate")
      expect(await credits(key)).toBe(before)
    })

    it("a tampered body, a wrong secret, an old timestamp or no signature is refused (400 invalid_signature) and changes nothing", async () => {
      const key = await newKey()
      const before = await credits(key)
      const { id, payUrl, sessionId } = await checkout(key, 15)
      world.fake.hold()
      await payOnPage(payUrl)
      const completed = world.fake.events.find((e) => e["type"] === "checkout.session.completed" && e["data"]["object"]["id"] === sessionId)!
      const payload = JSON.stringify(completed, null, 2)
      const now = Math.floor(Date.now() / 1000)
      const refused = [
        await postEvent(payload.replace(`"amount_total": 1500`, `"amount_total": 150000`), signed(payload)),
        await postEvent(payload, signed(payload, { secret: "whsec_someone_else" })),
        await postEvent(payload, signed(payload, { timestamp: now - 301 })),
        await postEvent(payload, undefined),
        await postEvent(payload, "t=1,v1=deadbeef")
      ]
      for (const answer of refused) expect(answer).toMatchObject({ status: 400, json: { error: { code: "invalid_signature" } } })
      expect(await orderStatus(key, id)).toBe("pending")
      expect(await credits(key)).toBe(before)
      // The same event, signed as Stripe signs it, is applied.
      expect(await postEvent(payload, signed(payload, { timestamp: now }))).toMatchObject({ status: 200, json: { outcome: "paid" } })
      expect(await credits(key)).toBe(before + 15_000)
      await world.fake.release()
    })

    it("an event for another account's order, for another amount, or for no order changes nothing and is answered 200", async () => {
      if (world.platform.newAccount === undefined) return
      const victim = await newKey()
      const mallory = await newKey()
      const target = await checkout(victim, 30)
      const own = await checkout(mallory, 5)
      const malloryAccount = world.fake.get(own.sessionId)!["metadata"]["account_id"] as string
      const victimAccount = world.fake.get(target.sessionId)!["metadata"]["account_id"] as string
      const [victimBefore, malloryBefore] = [await credits(victim), await credits(mallory)]
      const forge = async (orderId: string, accountId: string, cents: number) => {
        const session = await world.stripe.checkout.sessions.create({
          mode: "payment",
          client_reference_id: orderId,
          metadata: { order_id: orderId, account_id: accountId },
          line_items: [{ quantity: 1, price_data: { currency: "usd", unit_amount: cents, product_data: { name: "forged" } } }],
          success_url: "http://127.0.0.1:9/checkout/{CHECKOUT_SESSION_ID}"
        })
        await payOnPage(session.url!)
        await world.fake.settled()
        return deliveriesAbout(session.id, "checkout.session.completed").map((d) => [d.status, d.body.outcome])
      }
      const cases = [
        [target.id, malloryAccount, 3000],
        [target.id, victimAccount, 100],
        ["ord_no_such_order", malloryAccount, 3000]
      ] as const
      expect(await forge(...cases[0])).toEqual([[200, "mismatch"]])
      expect(await forge(...cases[1])).toEqual([[200, "mismatch"]])
      expect(await forge(...cases[2])).toEqual([[200, "unknown_order"]])
      expect(await orderStatus(victim, target.id)).toBe("pending")
      expect(await credits(victim)).toBe(victimBefore)
      expect(await credits(mallory)).toBe(malloryBefore)
    })

    it("a second session paid for a paid order is not credited again", async () => {
      const key = await newKey()
      const before = await credits(key)
      const { id, payUrl, sessionId } = await checkout(key, 12)
      const original = world.fake.get(sessionId)!
      await payOnPage(payUrl)
      await world.fake.settled()
      const twin = await world.stripe.checkout.sessions.create({
        mode: "payment",
        client_reference_id: id,
        metadata: { ...original["metadata"] },
        line_items: [{ quantity: 1, price_data: { currency: "usd", unit_amount: 1200, product_data: { name: "twin" } } }],
        success_url: "http://127.0.0.1:9/checkout/{CHECKOUT_SESSION_ID}"
      })
      await payOnPage(twin.url!)
      await world.fake.settled()
      expect(deliveriesAbout(twin.id, "checkout.session.completed").map((d) => d.body.outcome)).toEqual(["already_paid"])
      expect(await credits(key)).toBe(before + 12_000)
    })

    it("back without paying: the page says not paid and leads back to Stripe; an expired session shows expired", async () => {
      const key = await newKey()
      const { id, payUrl, sessionId } = await checkout(key, 8)
      const left = await returnTo(`http://platform.test/checkout/${sessionId}`)
      expect(left.status).toBe(402)
      expect(left.html).toContain(`data-testid="not-paid"`)
      expect(left.html).toContain(`href="${payUrl}"`)
      await world.stripe.checkout.sessions.expire(sessionId)
      const expired = await returnTo(`http://platform.test/checkout/${sessionId}`)
      expect(expired.status).toBe(410)
      expect(expired.html).toContain(`data-testid="expired"`)
      expect(await orderStatus(key, id)).toBe("pending")
      expect((await returnTo("http://platform.test/checkout/cs_test_nothing_here")).status).toBe(404)
    })

    it("a webhook body over 512 KiB is refused (413) before it is read", async () => {
      const big = JSON.stringify({ id: "evt_big", padding: "x".repeat(600 * 1024) })
      const answer = await postEvent(big, signed(big))
      expect(answer).toMatchObject({ status: 413, json: { error: { code: "payload_too_large" } } })
    })

    it("the platform's own card form is not served, nor a webhook for another processor", async () => {
      const key = await newKey()
      const { sessionId } = await checkout(key, 5)
      const posted = await world.platform.fetch(`/checkout/${sessionId}`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: "card_number=4242424242424242&expiry=12/34&cvc=123"
      })
      expect(posted.status).toBe(404)
      const other = await world.platform.fetch("/webhooks/test", { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })
      expect(other.status).toBe(404)
      expect(((await other.json()) as any).error.code).toBe("not_found")
      expect((await world.platform.fetch("/webhooks/stripe")).status).toBe(405)
    })
  })
