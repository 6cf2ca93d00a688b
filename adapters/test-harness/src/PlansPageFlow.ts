/**
 * The plans page end to end (issue 13, docs/plans.md "The plans page"), as a person meets it in
 * headless Chromium, on any shell (the shell's `start`, as for BillingPageFlow.ts: the demo
 * catalogue, whose eu-gpu-1 offers the Builder and Scale plans).
 *
 * A person signs up with a passkey, opens the plans page from the manage page, buys the Builder
 * plan on eu-gpu-1 and pays it on the checkout page with the test card 4242…; the page then lists
 * it active and renewing, the API agrees, cancel makes it end at its period's end and resume
 * undoes that. Screenshots go to the caller's `artifacts` directory.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type BrowserWorld, type FlowOptions, haveChromium, startBrowserWorld } from "./BrowserWorld.ts"

export const plansPageFlow = (options: FlowOptions) => {
  describe.skipIf(!haveChromium("plans page flow"))(`the plans page in a headless browser (${options.shell})`, () => {
    let world: BrowserWorld | undefined

    beforeAll(async () => {
      world = await startBrowserWorld({ ...options, recoveryDelayMs: 60_000 })
    }, 120_000)

    afterAll(async () => {
      await world?.stop()
    })

    it("a person buys the Builder plan by card, sees it active, cancels it at period end and resumes it", async () => {
      const { context, page } = await world!.device()
      const secret = await world!.signUp(page, `plans-${Date.now()}@test.local`)
      await page.goto(`${world!.accounts}/manage`)
      await page.click("#plans-link")
      await page.waitForURL(/\/accounts\/plans$/)
      expect(await page.locator("#plans").textContent()).toContain("No plans yet")
      const builder = page.locator(`#offers tr[data-offer="eu-gpu-1/builder"]`)
      expect(await builder.textContent()).toContain("$20.00 / 30 days")
      await world!.shot(page, "01-plans-new")

      await builder.getByRole("button", { name: "Buy" }).click()
      expect(await page.locator("h1").textContent()).toContain("Builder plan")
      const orderId = await world!.payOrderPage(page)
      expect((await world!.api(secret, "GET", `/orders/${orderId}`)).body).toMatchObject({ type: "subscription", status: "paid" })

      await page.goto(`${world!.accounts}/plans`)
      const row = page.locator(`#plans tr[data-status="active"]`)
      expect(await row.count()).toBe(1)
      expect(await row.textContent()).toContain("builder")
      expect(await row.locator(".renewal").textContent()).toMatch(/^renews \d{4}-\d{2}-\d{2}$/)
      await world!.shot(page, "02-plan-active")
      const [plan] = (await world!.api(secret, "GET", "/subscriptions")).body.data
      expect(plan).toMatchObject({ machine_id: "eu-gpu-1", plan_id: "builder", status: "active", auto_renews: true, paid_with: "card" })

      await row.getByRole("button", { name: "Cancel at period end" }).click()
      await page.locator("#notice").waitFor()
      expect(await page.locator(`#plans tr[data-plan="${plan.id}"] .renewal`).textContent()).toMatch(/^ends /)
      expect((await world!.api(secret, "GET", "/subscriptions")).body.data[0]).toMatchObject({ status: "active", cancel_at_period_end: true, auto_renews: false })
      await world!.shot(page, "03-plan-cancelled")

      await page.locator(`#plans tr[data-plan="${plan.id}"]`).getByRole("button", { name: "Resume" }).click()
      await page.locator("#notice").waitFor()
      expect(await page.locator(`#plans tr[data-plan="${plan.id}"] .renewal`).textContent()).toMatch(/^renews /)
      expect((await world!.api(secret, "GET", "/subscriptions")).body.data[0]).toMatchObject({ cancel_at_period_end: false, auto_renews: true })
      await context.close()
    }, 120_000)
  })
}
