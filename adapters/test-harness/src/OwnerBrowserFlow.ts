/**
 * The first-start owner as a new user meets it (issue 22, "The owner is a full account";
 * docs/accounts.md "The owner"), in headless Chromium with a DevTools virtual authenticator, on any
 * shell (the shell's `start` hands over the owner key its first start made):
 *
 * the owner key's identity is ready with no passkey and cannot send; a proposal is refused with
 * 409 passkey_required (no approval link nobody could use); POST /identity/claim-link answers a
 * one-time link; its page creates the passkey and signs the owner in (the used link is refused
 * afterwards); the owner buys credits on the manage page, proposes an agent with the key, approves
 * it with the passkey, makes the agent a key and calls a model with it.
 * Screenshots go to the caller's `artifacts` directory.
 */
import { eventually } from "./Eventually.ts"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { approveOnPage, chat } from "./AgentSteps.ts"
import { type BrowserWorld, type FlowOptions, haveChromium, startBrowserWorld } from "./BrowserWorld.ts"

export const ownerBrowserFlow = (options: FlowOptions) => {
  describe.skipIf(!haveChromium("owner flow"))(`the first-start owner in a headless browser (${options.shell})`, () => {
    let world: BrowserWorld | undefined

    beforeAll(async () => {
      world = await startBrowserWorld({ ...options, recoveryDelayMs: 60_000 })
    }, 120_000)

    afterAll(async () => {
      await world?.stop()
    })

    it("the owner key claims a passkey, proposes an agent, approves it and calls a model with the agent's key", async () => {
      const owner = world!.ownerSecret
      expect(owner, "the shell's start hands over the first start's owner key").toMatch(/^mpk_/)
      const api = (method: string, path: string, body?: unknown) => world!.api(owner!, method, path, body)

      // The identity is made at first start: ready, but no passkey yet, so it cannot send.
      const before = await api("GET", "/identity")
      expect(before.body).toMatchObject({ state: "ready", did: expect.stringMatching(/^did:svc:human:acct_/), passkeys: 0, can_send: false })
      // Without a passkey nobody could approve: refused, with how to attach one.
      const refused = await api("POST", "/agents", { name: "owner-bot" })
      expect([refused.status, refused.body.error?.code], JSON.stringify(refused.body)).toEqual([409, "passkey_required"])
      expect(refused.body.error.message).toContain("/identity/claim-link")
      expect((await api("GET", "/agents")).body).toEqual({ data: [] })

      const link = await api("POST", "/identity/claim-link")
      expect(link.status, JSON.stringify(link.body)).toBe(200)
      expect(link.body.claim_url).toMatch(new RegExp(`^${world!.accounts}/claim\\?token=[\\w-]{43}$`))
      expect(Date.parse(link.body.expires_at) - Date.now()).toBeGreaterThan(23 * 60 * 60_000)

      const { page } = await world!.device()
      await page.goto(link.body.claim_url)
      await page.locator("#claim").waitFor()
      await expect.poll(() => page.locator("#claim-email").textContent()).toBe("owner@test.local")
      await world!.shot(page, "01-claim")
      await page.click("#claim")
      await page.waitForURL(/\/accounts\/manage\?claimed=1$/, { timeout: 15_000 })
      expect(await page.locator("#notice").textContent()).toContain("passkey is set")
      expect(await page.locator("#account-email").textContent()).toBe("owner@test.local")
      expect(await page.locator("#passkeys li").count()).toBe(1)
      await world!.shot(page, "02-claimed")
      const after = (await api("GET", "/identity")).body
      expect(after).toMatchObject({ state: "ready", did: before.body.did, passkeys: 1, can_send: true })

      // The link worked once.
      const again = await page.goto(link.body.claim_url)
      expect(again?.status()).toBe(404)
      await page.locator("#error").waitFor()
      await world!.shot(page, "03-link-used")

      // Credits, bought as any person buys them, then an agent proposed with the key and approved with the passkey.
      await world!.buy(page, 5)
      const proposed = await api("POST", "/agents", { name: "owner-bot", daily_limit_credits: 1 })
      expect(proposed.status, JSON.stringify(proposed.body)).toBe(200)
      expect(await approveOnPage(world!, page, proposed.body.approve_url, "04-approve")).toBe("approved")
      await world!.shot(page, "05-approved")
      const id = proposed.body.agent.id as string
      expect((await api("GET", `/agents/${id}`)).body).toMatchObject({
        status: "active",
        did: expect.stringMatching(/^did:svc:machine:acct_[^:]+:[^:]+$/),
        wallet_address: expect.stringMatching(/^0x[0-9a-f]{40}$/)
      })

      const made = await api("POST", `/agents/${id}/keys`, { name: "owner-bot key" })
      expect(made.status, JSON.stringify(made.body)).toBe(200)
      const answer = await chat(world!, made.body.secret)
      expect(answer.status, JSON.stringify(answer.body)).toBe(200)
      expect(answer.body.choices[0].message.content).toEqual(expect.any(String))
      // The call is metered after its answer: its usage record names the agent.
      await eventually(async () => {
        const usage = await fetch(`${world!.url}/billing/usage.csv`, { headers: { authorization: `Bearer ${owner}` } }).then((r) => r.text())
        expect(usage).toContain(id)
      })
    })
  })
}
