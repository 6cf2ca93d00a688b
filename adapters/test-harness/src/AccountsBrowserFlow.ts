/**
 * Accounts for people end to end (issue 15, "Done means"), as two people meet them in a real
 * browser, on any shell: the shell's `start` serves the platform on the demo catalogue (its
 * reference machine started here), sending mail through the real local SMTP server started here
 * (smtp-server, parsed with mailparser), and headless Chromium drives it with a DevTools virtual
 * authenticator per person (one browser context each). Each shell's test is a thin caller
 * (adapters/node-http/test/Accounts.browser.test.ts, adapters/lambda/test/Accounts.browser.test.ts).
 *
 * Each person signs up with an email and a passkey, confirms the address from the mail the SMTP
 * server received, lands on the welcome page and creates an API key (its secret read from the
 * page), buys credits through the card checkout page, calls a model with the key, signs out, and
 * signs in again with the passkey. Then the second person sees nothing of the first through the API
 * (their order is 404, their keys are not listed), and redeems a gift ticket the first one bought:
 * once, then refused (409). Person 1 moves to a new device; person 2 recovers by email.
 *
 * Screenshots of every page go to the caller's `artifacts` directory (each shell's gitignored
 * test-artifacts/accounts/). Skipped (with a message) when no Chromium is installed at
 * CHROMIUM_PATH or /usr/bin/chromium.
 */
import type { BrowserContext, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type BrowserWorld, type FlowOptions, haveChromium, startBrowserWorld } from "./BrowserWorld.ts"


/** Short, so the test sees a recovery link refused before its delay and working after it. */
const RECOVERY_DELAY_MS = 3_000

export const accountsBrowserFlow = (options: FlowOptions) => {
  describe.skipIf(!haveChromium("accounts browser flow"))(`accounts for people in a headless browser (${options.shell})`, () => {
    let world: BrowserWorld | undefined
    let url = "" // the platform, as the API clients call it
    let accounts = "" // the account service, as a person opens it (localhost: a secure context)

    beforeAll(async () => {
      world = await startBrowserWorld({ ...options, recoveryDelayMs: RECOVERY_DELAY_MS })
      url = world.url
      accounts = world.accounts
    }, 120_000)

    afterAll(async () => {
      await world?.stop()
    })

    const api = (secret: string, method: string, path: string, body?: unknown) => world!.api(secret, method, path, body)
    const shot = (page: Page, name: string) => world!.shot(page, name)
    const device = () => world!.device()
    const buy = (page: Page, amountUsd: number, buying?: { gift?: boolean; shots?: string }) => world!.buy(page, amountUsd, buying)
    const linkIn = (address: string, pattern: RegExp, after?: number) => world!.linkIn(address, pattern, after)

    interface Person {
      readonly email: string
      readonly page: Page
      readonly context: BrowserContext
      readonly secret: string
      readonly keyId: string
      readonly orderId: string
      readonly replace: () => Promise<void>
    }

    /** The whole journey of one person; `n` names the screenshots. */
    const journey = async (n: number): Promise<Person> => {
      const email = `person${n}-${Date.now()}@test.local`
      const { context, page, replace } = await device()
      const p = `p${n}`

      // Sign up: an email and a passkey.
      await page.goto(`${accounts}/sign-up`)
      await shot(page, `${p}-01-sign-up`)
      await page.fill("#email", email)
      await page.click("#sign-up")
      await page.waitForURL(/\/accounts\/check-email/, { timeout: 15_000 })
      await page.locator("#check-email").waitFor()
      await shot(page, `${p}-02-check-email`)

      // Confirm from the mail the SMTP server received: GET shows a button, POST confirms.
      const confirm = await linkIn(email, /https?:\/\/\S+\/confirm\?token=[\w-]+/)
      expect(confirm.startsWith(`${accounts}/confirm?token=`)).toBe(true)
      await page.goto(confirm)
      await shot(page, `${p}-03-confirm`)
      await page.click("#confirm")
      await page.waitForURL(/\/accounts\/welcome/).catch(async (error) => {
        await shot(page, `${p}-03-confirm-failed`)
        throw new Error(`${error}\n${await page.locator("body").innerText()}`)
      })
      await shot(page, `${p}-04-welcome`)

      // The first API key: its secret once, and how to call a model with it.
      await page.fill("#key-name", "first key")
      // The second person's key may also manage the account (the form ticks inference and read).
      if (n === 2) await page.check('#key-permissions input[value="manage"]')
      await page.click("#create-key")
      const secret = (await page.locator("#key-secret").textContent())!.trim()
      expect(secret).toMatch(/^mpk_/)
      expect(await page.locator("#example-curl").textContent()).toContain(`${url.replace("127.0.0.1", "localhost")}/v1/chat/completions`)
      await shot(page, `${p}-05-welcome-key`)
      const me = await api(secret, "GET", "/me")
      expect(me.status).toBe(200)
      expect(me.body.email).toBe(email)
      expect(me.body.key.permissions).toEqual(n === 2 ? ["inference", "read", "manage"] : ["inference", "read"])
      const keyId = me.body.key.id as string

      // Credits through the checkout page, then a model call with the key.
      await page.goto(`${accounts}/manage`)
      await shot(page, `${p}-06-manage`)
      const orderId = await buy(page, 10, { shots: `${p}-07` })
      const order = await api(secret, "GET", `/orders/${orderId}`)
      expect(order.body.status).toBe("paid")
      expect((await api(secret, "GET", "/credits")).body.total_credits).toBe(10_000)
      const chat = await fetch(`${url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "ref-chat", machine: "ref-local", messages: [{ role: "user", content: "Hello" }], max_tokens: 16 })
      })
      const reply = await chat.json() as any
      expect(chat.status, JSON.stringify(reply)).toBe(200)
      expect(reply.choices[0].message.content).toEqual(expect.any(String))

      // Sign out, and in again with the passkey.
      await page.goto(`${accounts}/manage`)
      await page.click("#sign-out")
      await page.waitForURL(/\/accounts\/sign-in/)
      await shot(page, `${p}-08-signed-out`)
      await page.goto(`${accounts}/manage`)
      await page.waitForURL(/\/accounts\/sign-in/) // signed out: the manage page sends to sign-in
      await page.click("#sign-in")
      await page.waitForURL(/\/accounts\/manage/, { timeout: 15_000 })
      expect(await page.locator("#account-email").textContent()).toBe(email)
      expect(await page.locator("#passkeys li").count()).toBe(1)
      await shot(page, `${p}-09-signed-in`)
      return { email, page, context, secret, keyId, orderId, replace }
    }

    /** A second passkey on a new device, the first one removed, and sign-in with the new one. */
    const newDevice = async (person: Person, n: number) => {
      const page = person.page
      await person.replace()
      await page.goto(`${accounts}/manage`)
      await page.click("#add-passkey")
      await page.waitForURL(/\/accounts\/manage\?added=1/, { timeout: 15_000 })
      expect(await page.locator("#passkeys li").count()).toBe(2)
      await shot(page, `p${n}-11-passkey-added`)
      await page.locator("#passkeys li").first().getByRole("button", { name: /Remove/ }).click()
      await page.locator("#notice").waitFor()
      expect(await page.locator("#passkeys li").count()).toBe(1)
      await shot(page, `p${n}-12-passkey-removed`)
      await page.click("#sign-out")
      await page.waitForURL(/\/accounts\/sign-in/)
      await page.click("#sign-in")
      await page.waitForURL(/\/accounts\/manage/, { timeout: 15_000 })
      expect(await page.locator("#account-email").textContent()).toBe(person.email)
    }

    it("two people sign up, buy, call, sign out and in; neither sees the other; a gift passes once", async () => {
      const one = await journey(1)
      const two = await journey(2)

      // Nothing of person 1 through person 2's key.
      expect((await api(two.secret, "GET", `/orders/${one.orderId}`)).status).toBe(404)
      const keys = await api(two.secret, "GET", "/keys")
      expect(keys.status).toBe(200)
      expect(keys.body.data.map((k: { id: string }) => k.id)).not.toContain(one.keyId)
      expect(JSON.stringify(keys.body)).not.toContain(one.email)
      const orders = await api(two.secret, "GET", "/orders")
      expect(orders.body.data.map((o: { id: string }) => o.id)).not.toContain(one.orderId)

      // A gift ticket bought by person 1, redeemed by person 2 once.
      const giftOrder = await buy(one.page, 5, { gift: true, shots: "p1-10-gift" })
      const ticket = (await api(one.secret, "GET", `/orders/${giftOrder}`)).body.ticket
      expect(ticket).toMatchObject({ credits: 5000, redeemed: false })
      // Its code is whole on person 1's account page, to pass on; person 1's key, without
      // manage, sees it masked (docs/api-decisions.md "Gift ticket codes need manage").
      await one.page.goto(`${accounts}/manage`)
      const codes = await one.page.locator("#tickets .ticket-code").allTextContents()
      expect(codes).toHaveLength(1)
      const code = codes[0]!
      expect(code).toMatch(/^[0-9A-HJKMNP-TV-Z]{5}(-[0-9A-HJKMNP-TV-Z]{5}){3}$/)
      expect(ticket.code).toBe(`*****-*****-*****-*${code.slice(-4)}`)
      await shot(one.page, "p1-10-gift-ticket")
      const before = (await api(two.secret, "GET", "/credits")).body.total_credits
      await two.page.goto(`${accounts}/manage`)
      await two.page.fill("#ticket-code", code)
      await two.page.click("#redeem")
      await two.page.locator("#notice").waitFor()
      expect(await two.page.locator("#notice").textContent()).toContain("5000 credits")
      await shot(two.page, "p2-10-redeemed")
      expect((await api(two.secret, "GET", "/credits")).body.total_credits).toBe(before + 5000)
      // The second time: refused, readable on the page, nothing added.
      await two.page.fill("#ticket-code", code)
      const [second] = await Promise.all([
        two.page.waitForResponse((r) => r.request().method() === "POST" && r.url().endsWith("/accounts/redeem")),
        two.page.click("#redeem")
      ])
      expect(second.status()).toBe(409)
      await two.page.locator("#error").waitFor()
      await shot(two.page, "p2-11-redeemed-again")
      expect((await api(two.secret, "GET", "/credits")).body.total_credits).toBe(before + 5000)
      const bought = (await api(one.secret, "GET", `/orders/${giftOrder}`)).body.ticket
      expect(bought).toMatchObject({ redeemed: true, redeemed_by_you: false })

      // Person 1 loses the device: a passkey on a new one, the old one removed, sign-in with the new.
      await newDevice(one, 1)

      // Person 2 loses every passkey: recovery by email on a new device, usable after the delay.
      const fresh = await device()
      await fresh.page.goto(`${accounts}/recover`)
      const mailsBefore = world!.mailbox.received.length
      await fresh.page.fill("#email", two.email)
      await fresh.page.click("#recover")
      await fresh.page.locator("#recovery-sent").waitFor()
      await shot(fresh.page, "p2-12-recovery-requested")
      const recover = await linkIn(two.email, /https?:\/\/\S+\/recover\?token=[\w-]+/, mailsBefore)
      await fresh.page.goto(recover)
      await fresh.page.click("#register-passkey")
      await fresh.page.locator("#error:not([hidden])").waitFor()
      await shot(fresh.page, "p2-13-recovery-early")
      await new Promise((r) => setTimeout(r, RECOVERY_DELAY_MS))
      await fresh.page.click("#register-passkey")
      await fresh.page.waitForURL(/\/accounts\/manage/, { timeout: 15_000 })
      expect(await fresh.page.locator("#account-email").textContent()).toBe(two.email)
      expect(await fresh.page.locator("#passkeys li").count()).toBe(2)
      await shot(fresh.page, "p2-14-recovered")
      // Recovery ended every other session: the old device is signed out.
      await two.page.goto(`${accounts}/manage`)
      await two.page.waitForURL(/\/accounts\/sign-in/)
      await fresh.context.close()

      await one.context.close()
      await two.context.close()
    }, 180_000)
  })
}
