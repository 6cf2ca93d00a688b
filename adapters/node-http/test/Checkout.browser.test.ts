/**
 * The card checkout as a person meets it, in a real browser: the real Node server with the demo
 * catalogue (the built-in "test" card processor), a credits order created and paid over HTTP,
 * its `pay_url` opened in headless Chromium (Debian's, driven by playwright-core; installed by
 * scripts/ensure-chromium.sh), the card form filled and submitted.
 *
 * - 4242 4242 4242 4242: the paid page; the order is paid, the balance rises by exactly the order's
 *   credits, and the activity lists the credit.
 * - 4000 0000 0000 0002: the decline is shown; order status, balance and activity are unchanged.
 *
 * Skipped (with a message) when no Chromium is installed at CHROMIUM_PATH or /usr/bin/chromium.
 */
import { parseCatalogue } from "@model-platform/core/catalogue"
import { MemoryPlatformStores } from "@model-platform/memory-stores/MemoryPlatformStores"
import { Effect } from "effect"
import { existsSync, readFileSync } from "node:fs"
import { resolve } from "node:path"
import { type Browser, chromium, type Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startNodeServer } from "./support.ts"

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium"
const haveChromium = existsSync(CHROMIUM)
if (!haveChromium) console.warn(`Checkout.browser.test: no Chromium at ${CHROMIUM}; run scripts/ensure-chromium.sh`)

const catalogue = Effect.runSync(parseCatalogue(readFileSync(resolve(import.meta.dirname, "../catalogue.demo.json"), "utf8")))
const AMOUNT_USD = 10
const CREDITS = AMOUNT_USD * catalogue.prices.credits_per_usd!

describe.skipIf(!haveChromium)("card checkout in a headless browser (node-http, memory stores)", () => {
  let server: Awaited<ReturnType<typeof startNodeServer>>
  let browser: Browser

  beforeAll(async () => {
    server = await startNodeServer(catalogue, MemoryPlatformStores)
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run", "--disable-sync"]
    })
  })

  afterAll(async () => {
    await browser?.close()
    await server?.close()
  })

  let requests = 0
  /** A JSON call with the owner's key (and a fresh Idempotency-Key on writes). */
  const call = async (method: string, path: string, body?: unknown) => {
    const headers: Record<string, string> = { authorization: `Bearer ${server.ownerSecret}` }
    if (body !== undefined) {
      headers["content-type"] = "application/json"
      headers["idempotency-key"] = `browser-test-${Date.now()}-${requests++}`
    }
    const response = await server.fetch(path, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) })
    const json = await response.json()
    if (response.status >= 400) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(json)}`)
    return json
  }

  const balance = async (): Promise<number> => (await call("GET", "/credits")).total_credits
  const activity = async (): Promise<ReadonlyArray<{ id: string; type: string; credits: number; machine_id: string | null }>> =>
    (await call("GET", "/credits/activity?limit=500")).data

  /** A new credits order with an open card checkout; returns the order and its pay_url. */
  const orderWithCheckout = async () => {
    const order = await call("POST", "/orders", { type: "credits", amount_usd: AMOUNT_USD })
    expect(order.status).toBe("pending")
    const paying = await call("POST", `/orders/${order.id}/pay`, { method: "card" })
    expect(paying.id).toBe(order.id)
    expect(paying.pay_url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/checkout\/[^/]+$/)
    return paying as { id: string; status: string; pay_url: string }
  }

  /** Fills the form, submits it, and returns the HTTP status of the page the POST answered. */
  const fillCard = async (page: Page, number: string): Promise<number> => {
    await page.getByTestId("card-number").fill(number)
    await page.getByTestId("expiry").fill("12/34")
    await page.getByTestId("cvc").fill("123")
    const [response] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === "POST" && new URL(r.url()).pathname.startsWith("/checkout/")),
      page.getByTestId("pay").click()
    ])
    await page.waitForLoadState("load")
    return response.status()
  }

  it("pays with 4242 4242 4242 4242: paid page, order paid, credits added once", async () => {
    const before = await balance()
    const activityBefore = await activity()
    const order = await orderWithCheckout()

    const page = await browser.newPage()
    try {
      const opened = await page.goto(order.pay_url)
      expect(opened?.status()).toBe(200)
      await expect(page.getByTestId("amount").textContent()).resolves.toContain("$10.00")
      expect(await fillCard(page, "4242 4242 4242 4242")).toBe(200)
      await page.getByTestId("paid").waitFor({ timeout: 15_000 })
      expect(await page.getByTestId("paid").textContent()).toContain(order.id)
      // The page never echoes the card number back.
      expect(await page.content()).not.toContain("4242 4242 4242 4242")
    } finally {
      await page.close()
    }

    const paid = await call("GET", `/orders/${order.id}`)
    expect(paid.status).toBe("paid")
    expect(paid.paid_at).not.toBeNull()
    expect(await balance()).toBe(before + CREDITS)
    const after = await activity()
    expect(after.length).toBe(activityBefore.length + 1)
    const added = after.filter((a) => !activityBefore.some((b) => b.id === a.id))
    expect(added).toEqual([expect.objectContaining({ type: "credit_added", credits: CREDITS, machine_id: null })])

    // Opening the checkout again shows it paid; nothing more is credited.
    const again = await browser.newPage()
    try {
      await again.goto(order.pay_url)
      await again.getByTestId("paid").waitFor({ timeout: 15_000 })
    } finally {
      await again.close()
    }
    expect(await balance()).toBe(before + CREDITS)
  })

  it("declines 4000 0000 0000 0002: the decline is shown, nothing changes", async () => {
    const order = await orderWithCheckout()
    const before = await balance()
    const activityBefore = await activity()

    const page = await browser.newPage()
    try {
      await page.goto(order.pay_url)
      expect(await fillCard(page, "4000 0000 0000 0002")).toBe(402)
      await page.getByTestId("declined").waitFor({ timeout: 15_000 })
      expect(await page.getByTestId("declined").textContent()).toMatch(/declined/i)
      expect(await page.getByTestId("decline-reason").textContent()).toBe("card_declined")
      // The form is offered again for another card.
      expect(await page.getByTestId("checkout-form").count()).toBe(1)
    } finally {
      await page.close()
    }

    const unpaid = await call("GET", `/orders/${order.id}`)
    expect(unpaid.status).toBe(order.status)
    expect(unpaid.paid_at).toBeNull()
    expect(await balance()).toBe(before)
    expect(await activity()).toEqual(activityBefore)
  })
})
