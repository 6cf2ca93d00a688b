/**
 * The billing page end to end (issue 11, docs/billing.md "The billing page"), as a person meets it
 * in headless Chromium, on any shell (the shell's `start`, as for AccountsBrowserFlow.ts: the demo
 * catalogue on the reference machine started here, mail through the local SMTP server started here).
 *
 * A person signs up with a passkey, creates a key, buys credits, opens the billing page, saves the
 * test card 4242…, uses up the free allowance and the trial with calls (the page shows them used),
 * and turns automatic top-ups on with a threshold just below the balance; priced model calls cross it, and the page shows the top-up's receipt (automatic top-up) and
 * today's bar in the usage chart. Then the card 4000 0000 0000 0341 (saved, every later charge
 * declined) replaces it, the threshold is raised above the balance, a call crosses it, and the
 * page shows last_error. Screenshots go to the caller's `artifacts` directory.
 */
import type { Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type BrowserWorld, type FlowOptions, haveChromium, startBrowserWorld } from "./BrowserWorld.ts"

const waitFor = async <A>(what: string, probe: () => Promise<A | undefined>, ms = 20_000): Promise<A> => {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    const found = await probe()
    if (found !== undefined) return found
    await new Promise((r) => setTimeout(r, 200))
  }
  throw new Error(`waited ${ms} ms for ${what}`)
}

export const billingPageFlow = (options: FlowOptions) => {
  describe.skipIf(!haveChromium("billing page flow"))(`the billing page in a headless browser (${options.shell})`, () => {
    let world: BrowserWorld | undefined
    let url = ""
    let accounts = ""

    beforeAll(async () => {
      world = await startBrowserWorld({ ...options, recoveryDelayMs: 60_000 })
      url = world.url
      accounts = world.accounts
    }, 120_000)

    afterAll(async () => {
      await world?.stop()
    })

    const shot = (page: Page, name: string) => world!.shot(page, name)
    const api = (secret: string, path: string) => world!.api(secret, "GET", path)
    const buy = (page: Page, amountUsd: number) => world!.buy(page, amountUsd)

    const call = async (secret: string) => {
      const response = await fetch(`${url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "ref-chat", machine: "ref-local", messages: [{ role: "user", content: "Hello there" }], max_tokens: 16 })
      })
      const body = await response.text()
      expect(response.status, body).toBe(200)
    }

    /**
     * Priced calls, a few a second, until `probe` sees what they should cause. Only a settlement
     * checks the top-up, and a settings change made in another process (on Lambda the accounts
     * function saves them, the API function settles) is seen there within SETTINGS_CACHE_MS
     * (core/src/billing/Watch.ts): calls made before then cross the threshold unnoticed, and a
     * later one makes good (the check is level-triggered).
     */
    const callUntil = async (secret: string, probe: () => Promise<unknown>, ms = 30_000) => {
      const deadline = Date.now() + ms
      while (Date.now() < deadline && (await probe()) === undefined) {
        await call(secret)
        await new Promise((r) => setTimeout(r, 250))
      }
    }

    const balance = async (secret: string): Promise<number> => (await api(secret, "/credits")).body.total_credits

    const saveCard = async (page: Page, number: string) => {
      await page.fill("#card-number", number)
      await page.fill("#card-expiry", "12/34")
      await page.fill("#card-cvc", "123")
      await page.click("#save-card")
      await page.locator("#notice").waitFor()
    }

    const setAutoReload = async (page: Page, threshold: number, amountUsd: number) => {
      await page.check("#auto-reload-enabled")
      await page.fill("#auto-reload-threshold", String(threshold))
      await page.fill("#auto-reload-amount", String(amountUsd))
      await page.click("#save-auto-reload")
      await page.locator("#notice").waitFor()
      expect(await page.locator("#notice").textContent()).toContain("on")
    }

    it("a card, automatic top-ups, their receipt, the usage chart and a failed top-up's error", async () => {
      const started = Date.now()
      const { context, page } = await world!.device()
      const secret = await world!.signUp(page, `billing-${Date.now()}@test.local`)
      await buy(page, 10)
      expect(await balance(secret)).toBe(10_000)

      // The manage page links to the billing page.
      await page.goto(`${accounts}/manage`)
      await page.click("#billing-link")
      await page.waitForURL(/\/accounts\/billing$/)
      expect(await page.locator("#balance").textContent()).toContain("10,000 credits")
      expect(await page.locator("#receipts li").count()).toBe(1)
      expect(await page.locator("#usage-chart rect.day").count()).toBe(0)
      await shot(page, "01-billing-new")

      // Enabling without a card is refused on the page.
      await page.check("#auto-reload-enabled")
      await page.fill("#auto-reload-threshold", "9000")
      await page.fill("#auto-reload-amount", "5")
      await page.click("#save-auto-reload")
      await page.locator("#settings-error").waitFor()
      expect(await page.locator("#settings-error").textContent()).toContain("Save a card")
      await shot(page, "02-auto-reload-needs-card")

      // A card number the processor refuses, then the good one.
      await page.fill("#card-number", "4000 0000 0000 0002")
      await page.fill("#card-expiry", "12/34")
      await page.fill("#card-cvc", "123")
      await page.click("#save-card")
      await page.locator("#card-error").waitFor()
      await shot(page, "03-card-declined")
      await saveCard(page, "4242 4242 4242 4242")
      expect(await page.locator("#saved-card").textContent()).toContain("4242")

      // Calls use the free allowance and the trial first (cut to 0.05 credits each for the flow:
      // flowCatalogue), then credits; the page shows them used up.
      await callUntil(secret, async () => (await balance(secret)) < 10_000 ? true : undefined)
      const paying = await waitFor("the first charge in credits", async () => {
        const b = await balance(secret)
        return b < 10_000 ? b : undefined
      })
      await page.goto(`${accounts}/billing`)
      const chat = page.locator(`#grants tr[data-service="chat"]`)
      expect(await chat.textContent()).toContain("0.05 of 0.05 credits used")
      await shot(page, "04-allowance-used")
      // A priced call (settled in the background: its charge is waited for) tells what a call
      // costs, a few thousandths of a credit; the threshold goes a few calls below the balance.
      await call(secret)
      const afterOne = await waitFor("the next call's charge", async () => {
        const b = await balance(secret)
        return b < paying ? b : undefined
      })
      const perCall = paying - afterOne
      await page.goto(`${accounts}/billing`)
      await setAutoReload(page, Math.round((afterOne - perCall * 2.5) * 1e6) / 1e6, 5)
      await shot(page, "04-auto-reload-on")

      // Calls cross the threshold: one automatic top-up, its receipt on the page.
      const topUpReceipt = async () => {
        const receipts = (await api(secret, "/billing/receipts")).body.data as Array<{ auto_reload: boolean }>
        return receipts.some((r) => r.auto_reload) ? true : undefined
      }
      await callUntil(secret, topUpReceipt)
      await waitFor("the automatic top-up's receipt", topUpReceipt).catch(async (error) => {
        await page.goto(`${accounts}/billing`)
        await shot(page, "05-no-top-up")
        const state = await Promise.all(["/billing/alerts", "/billing/auto-reload", "/credits"].map((p) => api(secret, p)))
        throw new Error(`${error}\n${JSON.stringify(state.map((s) => s.body))}`)
      })
      await page.goto(`${accounts}/billing`)
      const topUp = page.locator(`#receipts li[data-auto-reload="true"]`)
      expect(await topUp.count()).toBe(1)
      expect(await topUp.textContent()).toContain("$5.00")
      const today = new Date().toISOString().slice(0, 10)
      expect(await page.locator(`#usage-chart rect.day[data-day="${today}"]`).count()).toBe(1)
      expect(await page.locator("#usage-chart title").first().textContent()).toContain("Usage by day")
      expect(await page.locator(`#alerts li[data-kind="auto_reload_paid"] .badge.new`).count()).toBe(1)
      await shot(page, "05-topped-up")
      // Seen once shown: the next view lists it without "new".
      await page.reload()
      expect(await page.locator(`#alerts li[data-kind="auto_reload_paid"]`).count()).toBe(1)
      expect(await page.locator("#alerts .badge.new").count()).toBe(0)
      expect((await api(secret, "/billing/alerts")).body.data.every((a: { seen: boolean }) => a.seen)).toBe(true)

      // Its printable receipt.
      await topUp.getByRole("link", { name: "receipt" }).click()
      await page.locator("#receipt-amount").waitFor()
      expect(await page.locator("#receipt-title").textContent()).toContain("Automatic top-up")
      expect(await page.locator("#receipt-kind").textContent()).toContain("automatic top-up")
      await shot(page, "06-receipt")
      await page.emulateMedia({ media: "print" })
      await shot(page, "07-receipt-print")
      await page.emulateMedia({ media: "screen" })

      // The card whose charges fail; a threshold above the balance; the next call's crossing fails.
      await page.goto(`${accounts}/billing`)
      await saveCard(page, "4000 0000 0000 0341")
      expect(await page.locator("#saved-card").textContent()).toContain("0341")
      await setAutoReload(page, Math.ceil((await balance(secret)) + 1_000), 5)
      const lastError = async () => (await api(secret, "/billing/auto-reload")).body.last_error ?? undefined
      await callUntil(secret, lastError)
      await waitFor("last_error", lastError)
      await page.goto(`${accounts}/billing`)
      await page.locator("#auto-reload-error").waitFor()
      expect(await page.locator(`#alerts li[data-kind="auto_reload_failed"]`).count()).toBe(1)
      expect(await page.locator(`#receipts li[data-auto-reload="true"]`).count()).toBe(1)
      await shot(page, "08-top-up-failed")

      // A form posted without the session's CSRF token changes nothing.
      const refused = await page.evaluate(async (base: string) => {
        const r = await fetch(`${base}/billing/auto-reload`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: "enabled=false&threshold_credits=1&amount_usd=5&csrf=wrong"
        })
        return r.status
      }, accounts)
      expect(refused).toBe(403)
      expect((await api(secret, "/billing/auto-reload")).body.enabled).toBe(true)
      console.log(`billing page flow (${options.shell}): ${Date.now() - started} ms`)
      await context.close()
    }, 180_000)
  })
}
