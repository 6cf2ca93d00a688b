/**
 * The operator's page (GET /admin, docs/operations.md "The operator console") in Chromium, on the
 * Node server: an operator signs in with their key, finds an account by email, credits it with a
 * reason, revokes one of its keys, and sees both actions in the audit log; a wrong key opens
 * nothing. Screenshots in adapters/node-http/test-artifacts/operator/ (gitignored).
 */
import { CHROMIUM, haveChromium } from "@model-platform/test-harness/BrowserWorld"
import { fixtureCatalogue } from "@model-platform/test-harness/Fixtures"
import { MemoryPlatformStores } from "@model-platform/memory-stores/MemoryPlatformStores"
import { OPERATOR } from "@model-platform/test-harness/OperatorSuite"
import { mkdirSync } from "node:fs"
import { join, resolve } from "node:path"
import { type Browser, chromium } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startNodeServer } from "./support.ts"

const ARTIFACTS = resolve(import.meta.dirname, "../test-artifacts/operator")

describe.skipIf(!haveChromium("operator page"))("the operator page in Chromium", () => {
  let platform: Awaited<ReturnType<typeof startNodeServer>>
  let browser: Browser
  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true })
    platform = await startNodeServer(fixtureCatalogue, MemoryPlatformStores, { platform: { operatorKeys: [OPERATOR.key] } })
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run", "--disable-sync"]
    })
  }, 60_000)
  afterAll(async () => {
    await browser?.close()
    await platform?.close()
  })

  it("a wrong key opens nothing", async () => {
    const page = await browser.newPage()
    await page.goto(`${platform.url}/admin`)
    await page.fill("#key", platform.ownerSecret)
    await page.click("#signin button")
    await expect.poll(() => page.textContent("#notice")).toContain("not one of OPERATOR_KEYS")
    expect(await page.isVisible("#console")).toBe(false)
    await page.close()
  })

  it("finds an account, credits it with a reason, revokes a key, and reads both in the audit log", async () => {
    const secret = await platform.newAccount!()
    const auth = { authorization: `Bearer ${secret}`, "content-type": "application/json" }
    const me = (await (await platform.fetch("/me", { headers: auth })).json()) as { id: string; email: string }
    const leaked = (await (await platform.fetch("/keys", {
      method: "POST", headers: auth, body: JSON.stringify({ name: "leaked-in-ci", permissions: ["read"] })
    })).json()) as { id: string; secret: string }
    const errors: Array<string> = []
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
    page.on("pageerror", (error) => errors.push(error.message))
    page.on("console", (message) => {
      if (message.type() === "error") errors.push(message.text())
    })

    await page.goto(`${platform.url}/admin`)
    await page.fill("#key", OPERATOR.secret)
    await page.click("#signin button")
    await page.waitForSelector("#console", { state: "visible" })
    expect(await page.isVisible("#signin")).toBe(false)
    await expect.poll(() => page.locator("#machines tr").count()).toBeGreaterThan(1)
    expect(await page.textContent("#machines")).toContain(fixtureCatalogue.machines[0]!.id)

    await page.selectOption("#find-by", "email")
    await page.fill("#find-value", me.email)
    await page.click("#find button")
    await page.waitForSelector("#account", { state: "visible" })
    expect(await page.textContent("#account-title")).toContain(me.email)
    expect(await page.textContent("#keys")).toContain("leaked-in-ci")

    await page.fill("#credit-amount", "7.5")
    await page.fill("#credit-reason", "goodwill: the outage of 24 November")
    await page.click("#credit button")
    await expect.poll(() => page.textContent("#notice")).toContain("Credited 7.5 credits")
    await expect.poll(() => page.textContent("#balance")).toContain("7.5 credits available")

    await page.fill("#revoke-reason", "pasted in a public CI log")
    await page.click(`button[data-key="${leaked.id}"]`)
    await expect.poll(() => page.textContent("#notice")).toContain(`Key ${leaked.id} revoked`)
    await expect.poll(() => page.textContent("#keys")).toContain("revoked 20")
    expect((await platform.fetch("/me", { headers: { authorization: `Bearer ${leaked.secret}` } })).status).toBe(401)

    // The account, as its owner sees it: the credit is in the activity.
    const activity = (await (await platform.fetch("/credits/activity", { headers: auth })).json()) as { data: Array<{ type: string; credits: number }> }
    expect(activity.data).toContainEqual(expect.objectContaining({ type: "credit_added", credits: 7.5 }))

    await expect.poll(() => page.locator("#audit tr").count()).toBeGreaterThanOrEqual(3)
    const audit = await page.textContent("#audit")
    expect(audit).toContain("credit_adjustment")
    expect(audit).toContain("goodwill: the outage of 24 November")
    expect(audit).toContain("key_revoked")
    expect(audit).toContain("pasted in a public CI log")
    expect(audit).toContain("ada")
    await page.screenshot({ path: join(ARTIFACTS, "operator-console.png"), fullPage: true })
    expect(errors).toEqual([])
    await page.close()
  }, 60_000)
})
