/**
 * One charge per checkout, through a shell's HTTP (docs/payments.md "Card"): a person pressing
 * "Pay" on several tabs of one checkout at once is charged once. The shell runs on a card
 * processor the suite gives it: the test processor, answering after a network round trip, that
 * keeps the charge ids it approved.
 */
import { Effect, Layer } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { CardProcessor, TestCardProcessor } from "@model-platform/core/payments"
import type { ShellUnderTest } from "./HttpSuite.ts"

const EXPIRY = `12/${String((new Date().getUTCFullYear() + 5) % 100).padStart(2, "0")}`
/** Concurrent submissions of one checkout. */
const SUBMISSIONS = 8

export const checkoutOnceSuite = (
  shell: string,
  start: (platform: { readonly cardProcessor: Layer.Layer<CardProcessor> }) => Promise<ShellUnderTest>
) =>
  describe(`one charge per checkout on ${shell}`, () => {
    const charged = new Set<string>()
    const base = TestCardProcessor.make({ baseUrl: "https://platform.test" })
    const processor = Layer.succeed(
      CardProcessor,
      CardProcessor.of({
        ...base,
        charge: (...args) =>
          Effect.sleep("50 millis").pipe(
            Effect.andThen(base.charge(...args)),
            Effect.tap((outcome) => Effect.sync(() => outcome._tag === "Approved" && charged.add(outcome.charge_id)))
          )
      })
    )
    let platform: ShellUnderTest
    beforeAll(async () => {
      platform = await start({ cardProcessor: processor })
    })
    afterAll(async () => {
      await platform?.close()
    })

    const call = async (method: string, path: string, key: string, body?: unknown) => {
      const response = await platform.fetch(path, {
        method,
        headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) })
      })
      return { status: response.status, json: (await response.json()) as any }
    }

    it(`${SUBMISSIONS} concurrent card submissions of one checkout: one charge, the order paid once, one receipt`, async () => {
      const key = platform.newAccount === undefined ? platform.ownerSecret : await platform.newAccount()
      const creditsBefore = (await call("GET", "/credits", key)).json.total_credits
      const receiptsBefore = (await call("GET", "/billing/receipts", key)).json.data.length
      const created = await call("POST", "/orders", key, { type: "credits", amount_usd: 25 })
      expect(created.status).toBe(200)
      const paying = await call("POST", `/orders/${created.json.id}/pay`, key, { method: "card" })
      expect(paying.status).toBe(200)
      const path = new URL(paying.json.pay_url).pathname

      const pages = await Promise.all(Array.from({ length: SUBMISSIONS }, (_, i) =>
        platform.fetch(path, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          // Two approved cards: paying on two tabs with two cards is still one charge.
          body: new URLSearchParams({
            card_number: i % 2 === 0 ? "4242 4242 4242 4242" : "5555 5555 5555 4444",
            expiry: EXPIRY,
            cvc: "123"
          }).toString()
        }).then(async (response) => ({ status: response.status, html: await response.text() }))))

      for (const page of pages) {
        expect(page.status, page.html).toBe(200)
        expect(page.html).toContain(`data-testid="paid"`)
      }
      expect(charged.size).toBe(1)
      const order = await call("GET", `/orders/${created.json.id}`, key)
      expect(order.json).toMatchObject({ status: "paid", payment: { method: "card" } })
      expect((await call("GET", "/credits", key)).json.total_credits).toBe(creditsBefore + 25_000)
      const receipts = (await call("GET", "/billing/receipts", key)).json.data as Array<{ title: string }>
      expect(receipts.length).toBe(receiptsBefore + 1)
      expect(receipts[0]).toMatchObject({ title: "25,000 credits", paid_with: "card" })
    })
  })
