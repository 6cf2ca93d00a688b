/**
 * The steps of an owner with agents in a browser flow (AgentsBrowserFlow.ts, OwnerBrowserFlow.ts):
 * approving at approve_url with the device's passkey, a chat call with a key, and using up the
 * account's free allowance and trial so that calls are paid with credits.
 */
import type { Page } from "playwright-core"
import { expect } from "vitest"
import type { BrowserWorld } from "./BrowserWorld.ts"

/** Opens an approval link and approves it with the device's passkey; the page's final state. */
export const approveOnPage = async (world: BrowserWorld, page: Page, url: string, shot?: string) => {
  await page.goto(url)
  await page.locator(`#approval[data-state="pending"]`).waitFor()
  if (shot !== undefined) await world.shot(page, shot)
  await page.click("#approve")
  await page.locator(`#approval:not([data-state="pending"])`).waitFor({ timeout: 15_000 })
  return page.locator("#approval").getAttribute("data-state")
}

/** A short chat call of the demo catalogue's ref-chat with `secret`. */
export const chat = (world: BrowserWorld, secret: string) =>
  world.api(secret, "POST", "/v1/chat/completions", { model: "ref-chat", messages: [{ role: "user", content: "hi" }], max_tokens: 8 })

/** Calls with `secret` until a call is paid with credits (the usage CSV's last column but one). */
export const spendAllowances = async (world: BrowserWorld, secret: string) => {
  for (let i = 0; i < 100; i++) {
    expect((await chat(world, secret)).status).toBe(200)
    const csv = await fetch(`${world.url}/billing/usage.csv`, { headers: { authorization: `Bearer ${secret}` } }).then((r) => r.text())
    const rows = csv.trim().split("\r\n").slice(1).map((line) => line.split(","))
    if (rows.some((row) => Number(row[10]) > 0)) return
  }
  throw new Error("the allowance and the trial were not used up in 100 calls")
}
