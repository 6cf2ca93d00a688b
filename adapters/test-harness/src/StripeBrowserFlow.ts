/**
 * Card payments through Stripe end to end in headless Chromium, on any shell (the shell's
 * `start`, as for BillingPageFlow.ts), with the fake Stripe started once for the file and its
 * hosted pages completed in the browser (docs/payments.md "Going live with Stripe"):
 *
 * a person signs up, buys credits on Stripe's page and comes back paid; saves a card on Stripe's
 * setup page from the billing page; turns automatic top-ups on and a priced call crosses the
 * threshold: charged once off-session, its receipt and alert on the page; replaces the card with
 * one whose bank wants its holder (4000 0027 6000 3184, authenticated on Stripe's page), and the
 * next crossing fails with authentication_required: last_error on the page, an alert, and a mail
 * whose link the person opens and pays on Stripe's page, authenticating; removes the card, buys
 * credits from the billing page keeping the card paid with; buys a plan on Stripe's page, and when
 * its period ends it renews off-session.
 */
import type { CatalogueConfig } from "@model-platform/core/catalogue"
import type { CardProcessor } from "@model-platform/core/payments"
import type { DocumentStores } from "@model-platform/core/kernel"
import type { Layer } from "effect"
import { randomBytes } from "node:crypto"
import type { Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type BrowserWorld, type FlowOptions, type FlowSetup, haveChromium, type PlatformUnderTest, startBrowserWorld } from "./BrowserWorld.ts"
import { type FakeStripe, startFakeStripe } from "./FakeStripe.ts"
import type { StripeProcessorFor } from "./StripeCheckoutSuite.ts"

/** The flow's catalogue with Stripe taking cards. */
export const withStripeCards = (catalogue: CatalogueConfig): CatalogueConfig => ({
  ...catalogue,
  payments: { ...catalogue.payments, card: { processor: "stripe" } }
})

export interface StripeFlowSetup extends FlowSetup {
  /** PlatformOptions.cardProcessor: Stripe on the fake. */
  readonly cardProcessor: Layer.Layer<CardProcessor, never, DocumentStores>
}

export interface StripeFlowOptions extends Omit<FlowOptions, "start"> {
  readonly processorFor: StripeProcessorFor
  /** Starts the shell with `withStripeCards` of its flow catalogue, the card processor, PUBLIC_URL set and plans renewing. */
  readonly start: (setup: StripeFlowSetup) => Promise<PlatformUnderTest>
}

const waitFor = async <A>(what: string, probe: () => Promise<A | undefined>, ms = 30_000): Promise<A> => {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    const found = await probe()
    if (found !== undefined) return found
    await new Promise((r) => setTimeout(r, 200))
  }
  throw new Error(`waited ${ms} ms for ${what}`)
}

export const stripeBrowserFlow = (options: StripeFlowOptions) => {
  describe.skipIf(!haveChromium("Stripe flow"))(`card payments through Stripe in a headless browser (${options.shell})`, () => {
    let world: BrowserWorld | undefined
    let fake: FakeStripe | undefined
    let now: () => number = Date.now

    beforeAll(async () => {
      fake = await startFakeStripe({ now: () => now() })
      const webhookSecret = `whsec_${randomBytes(24).toString("hex")}`
      const cardProcessor = options.processorFor({ secretKey: fake.secretKey, webhookSecret, client: fake.clientOptions })
      world = await startBrowserWorld({
        ...options,
        recoveryDelayMs: 60_000,
        start: (setup) => {
          now = () => setup.clock.currentTimeMillisUnsafe()
          return options.start({ ...setup, cardProcessor })
        }
      })
      fake.addWebhook(`${world.url}/webhooks/stripe`, webhookSecret)
    }, 180_000)

    afterAll(async () => {
      await world?.stop()
      await fake?.close()
    })

    const shot = (page: Page, name: string) => world!.shot(page, name)
    const api = (secret: string, path: string) => world!.api(secret, "GET", path)

    const call = async (secret: string) => {
      const response = await fetch(`${world!.url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "ref-chat", machine: "ref-local", messages: [{ role: "user", content: "Hello there" }], max_tokens: 16 })
      })
      await response.text()
      return response.status
    }

    /** Priced calls, a few a second, until `probe` sees what they should cause (BillingPageFlow.ts callUntil). */
    const callUntil = async <A>(what: string, secret: string, probe: () => Promise<A | undefined>) =>
      waitFor(what, async () => {
        const found = await probe()
        if (found !== undefined) return found
        await call(secret)
        return undefined
      }, 60_000)

    /** Types a card on Stripe's page; authenticates when its bank asks. */
    const payOnStripe = async (page: Page, card: string, name: string) => {
      await page.getByTestId("card-number").waitFor()
      expect(page.url().startsWith(fake!.url)).toBe(true)
      await page.getByTestId("card-number").fill(card)
      await page.getByTestId("expiry").fill("12/34")
      await page.getByTestId("cvc").fill("123")
      await shot(page, `${name}-stripe`)
      await page.getByTestId("pay").click()
      if (card === "4000002760003184" || card === "4000002500003155") {
        await page.getByTestId("authenticate-complete").waitFor()
        await shot(page, `${name}-authenticate`)
        await page.getByTestId("authenticate-complete").click()
      }
    }

    const balance = async (secret: string): Promise<number> => (await api(secret, "/credits")).body.total_credits

    it("buy credits, save a card, an automatic top-up, a card wanting its holder paid by the mailed link, a plan renewing", async () => {
      const started = Date.now()
      const { context, page } = await world!.device()
      const email = `stripe-${Date.now()}@test.local`
      const secret = await world!.signUp(page, email, { manage: true })
      expect((await api(secret, "/payment-methods")).body.card).toEqual({ available: true, processor: "stripe" })

      // Credits bought on Stripe's page: back on the platform's page, paid.
      await page.goto(`${world!.accounts}/manage`)
      await page.fill("#buy-amount", "10")
      await page.click("#buy-credits")
      await page.locator("#pay-link").waitFor()
      await page.click("#pay-link")
      await payOnStripe(page, "4242424242424242", "01-buy")
      await page.getByTestId("paid").waitFor({ timeout: 15_000 })
      await shot(page, "01-buy-paid")
      expect(await balance(secret)).toBe(10_000)

      // A card saved on Stripe's setup page from the billing page.
      await page.goto(`${world!.accounts}/billing`)
      expect(await page.locator("#saved-card").textContent()).toContain("No card saved")
      await page.click("#save-card")
      await page.click("#card-setup-link")
      await payOnStripe(page, "4242424242424242", "02-save-card")
      await page.waitForURL(/\/accounts\/billing\/card\?session_id=/)
      expect(await page.locator("#notice").textContent()).toContain("Card saved: Visa •••• 4242")
      expect(await page.locator("#saved-card").textContent()).toContain("4242")
      await shot(page, "02-card-saved")

      // Automatic top-ups at the current balance: the first priced call crosses it, charged once.
      await page.check("#auto-reload-enabled")
      await page.fill("#auto-reload-threshold", "10000")
      await page.fill("#auto-reload-amount", "5")
      await page.click("#save-auto-reload")
      await page.locator("#notice").waitFor()
      const topUps = async () => {
        const receipts = (await api(secret, "/billing/receipts")).body.data as Array<{ auto_reload: boolean }>
        return receipts.some((r) => r.auto_reload) ? receipts.filter((r) => r.auto_reload) : undefined
      }
      await callUntil("the automatic top-up", secret, topUps)
      await page.goto(`${world!.accounts}/billing`)
      expect(await page.locator(`#receipts li[data-auto-reload="true"]`).count()).toBe(1)
      await page.locator(`#alerts li[data-kind="auto_reload_paid"]`).waitFor()
      await shot(page, "03-topped-up")
      const offSession = fake!.all("payment_intent").filter((pi) => pi["metadata"]["off_session"] === "true")
      expect(offSession.map((pi) => [pi["status"], pi["amount"]])).toEqual([["succeeded", 500]])

      // The card replaced by one whose bank always wants its holder; the next crossing fails.
      await page.click("#save-card")
      await page.click("#card-setup-link")
      await payOnStripe(page, "4000002760003184", "04-card-3184")
      await page.waitForURL(/\/accounts\/billing\/card\?session_id=/)
      expect(await page.locator("#saved-card").textContent()).toContain("3184")
      const mailsBefore = world!.mailbox.received.length
      await page.fill("#auto-reload-threshold", String(Math.ceil((await balance(secret)) + 1_000)))
      await page.click("#save-auto-reload")
      await page.locator("#notice").waitFor()
      const lastError = async () => ((await api(secret, "/billing/auto-reload")).body.last_error as string | null) ?? undefined
      expect(await callUntil("the failed top-up", secret, lastError)).toContain("authentication_required")
      await page.goto(`${world!.accounts}/billing`)
      await page.locator("#auto-reload-error").waitFor()
      await page.locator(`#alerts li[data-kind="auto_reload_failed"]`).waitFor()
      await shot(page, "05-top-up-needs-you")

      // The mailed link, opened and paid on Stripe's page with the bank's authentication.
      const link = await world!.linkIn(email, /https?:\/\/\S+\/c\/pay\/cs_\S+/, mailsBefore)
      const before = await balance(secret)
      await page.goto(link)
      await payOnStripe(page, "4000002760003184", "06-pay-link")
      await page.getByTestId("paid").waitFor({ timeout: 15_000 })
      await shot(page, "06-pay-link-paid")
      expect(await balance(secret)).toBeGreaterThan(before + 4_990)
      expect((await topUps())!.length).toBe(2)

      // The card removed; then credits bought from the billing page keep the card they are paid with.
      await page.goto(`${world!.accounts}/billing`)
      await page.click("#remove-card")
      await page.locator("#notice").waitFor()
      expect(await page.locator("#saved-card").textContent()).toContain("No card saved")
      expect((await api(secret, "/billing/auto-reload")).body).toMatchObject({ enabled: false, card: null })
      await page.fill("#buy-keep-amount", "5")
      await page.click("#buy-keep-card")
      await page.click("#pay-link")
      await payOnStripe(page, "5555555555554444", "07-buy-keep-card")
      await page.getByTestId("paid").waitFor({ timeout: 15_000 })
      await page.goto(`${world!.accounts}/billing`)
      expect(await page.locator("#saved-card").textContent()).toContain("Mastercard •••• 4444")
      await shot(page, "07-card-kept")

      // A plan bought on Stripe's page renews off-session when its period ends.
      await page.goto(`${world!.accounts}/plans`)
      await page.locator(`#offers tr[data-offer="eu-gpu-1/builder"]`).getByRole("button", { name: "Buy" }).click()
      await page.locator("#pay-link").waitFor()
      await page.click("#pay-link")
      await payOnStripe(page, "4242424242424242", "08-plan")
      await page.getByTestId("paid").waitFor({ timeout: 15_000 })
      const [plan] = (await api(secret, "/subscriptions")).body.data
      expect(plan).toMatchObject({ plan_id: "builder", status: "active", auto_renews: true })
      world!.advanceClock(30 * 86_400_000 + 60_000)
      const renewed = await waitFor("the plan's renewal", async () => {
        const [now] = (await api(secret, "/subscriptions")).body.data
        return now.current_period_end > plan.current_period_end ? now : undefined
      })
      expect(renewed).toMatchObject({ status: "active", auto_renews: true })
      console.log(`Stripe flow (${options.shell}): ${Date.now() - started} ms`)
      await context.close()
    }, 300_000)
  })
}
