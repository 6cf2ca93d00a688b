/**
 * Agents end to end (issue 12, docs/agents.md), as an owner meets them in headless Chromium with a
 * DevTools virtual authenticator, on any shell (the shell's `start`, as for PlansPageFlow.ts):
 *
 * a new owner signs up with a passkey; proposes an agent through the API; opens approve_url and
 * approves with the passkey; GET /agents/{id} then shows it active with its DID and wallet; a key
 * made for it calls a priced model; 32 concurrent calls stop at its daily limit with 402
 * agent_daily_limit and its spend never passes the limit; a settings change waits for approval
 * while the old limit holds, and applies once approved; a revocation, once approved, makes the
 * key's next call 401; an approval link left for more than 30 minutes answers expired.
 * Screenshots go to the caller's `artifacts` directory.
 */
import type { Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { approveOnPage, chat as chatWith, spendAllowances as spendAllowancesOf } from "./AgentSteps.ts"
import { type BrowserWorld, type FlowOptions, haveChromium, startBrowserWorld } from "./BrowserWorld.ts"

const DAILY_LIMIT = 0.02

export const agentsBrowserFlow = (options: FlowOptions) => {
  describe.skipIf(!haveChromium("agents flow"))(`agents in a headless browser (${options.shell})`, () => {
    let world: BrowserWorld | undefined

    beforeAll(async () => {
      world = await startBrowserWorld({ ...options, recoveryDelayMs: 60_000 })
    }, 120_000)

    afterAll(async () => {
      await world?.stop()
    })

    const approve = (page: Page, url: string, shot?: string) => approveOnPage(world!, page, url, shot)
    const chat = (secret: string) => chatWith(world!, secret)
    const spendAllowances = (secret: string) => spendAllowancesOf(world!, secret)

    it("an owner approves an agent with a passkey; its key is held to its limits; a change waits for approval; revocation stops it", async () => {
      const { page } = await world!.device()
      const secret = await world!.signUp(page, `agents-${Date.now()}@test.local`, { manage: true })
      await world!.buy(page, 5)
      // The owner's identity, with the passkey just registered; the guide's /api address answers the same.
      const identity = (await world!.api(secret, "GET", "/identity")).body
      expect(identity).toMatchObject({ state: "ready", did: expect.stringMatching(/^did:svc:human:/), passkeys: 1 })
      expect((await world!.api(secret, "GET", "/api/identity")).body).toEqual(identity)

      const proposed = await world!.api(secret, "POST", "/agents", { name: "research-bot", daily_limit_credits: DAILY_LIMIT, total_limit_credits: 1 })
      expect(proposed.status, JSON.stringify(proposed.body)).toBe(200)
      expect(proposed.body.agent).toMatchObject({ status: "awaiting_approval", approval: { kind: "create", state: "pending" } })
      const id = proposed.body.agent.id as string
      expect(await approve(page, proposed.body.approve_url, "01-approve-create")).toBe("approved")
      await world!.shot(page, "02-approved")

      const agent = (await world!.api(secret, "GET", `/agents/${id}`)).body
      expect(agent).toMatchObject({
        status: "active",
        approval: null,
        limits: { daily_limit_credits: DAILY_LIMIT, total_limit_credits: 1 },
        did: expect.stringMatching(/^did:svc:machine:[^:]+:[^:]+$/),
        wallet_address: expect.stringMatching(/^0x[0-9a-f]{40}$/)
      })

      // Any call spends the account's free allowance and trial first (docs/billing.md); an agent's
      // limits count what credits pay (docs/agents.md), so the owner spends those first.
      await spendAllowances(secret)

      const made = await world!.api(secret, "POST", `/agents/${id}/keys`, { name: "bot key" })
      expect(made.status, JSON.stringify(made.body)).toBe(200)
      expect(made.body.agent_id).toBe(id)
      const botKey = made.body.secret as string
      expect((await chat(botKey)).status).toBe(200)

      // 32 at once: stopped at the daily limit, never past it.
      const answers = await Promise.all(Array.from({ length: 32 }, () => chat(botKey)))
      const refused = answers.filter((a) => a.status !== 200)
      expect(refused.length).toBeGreaterThan(0)
      for (const r of refused) expect([r.status, r.body.error?.code]).toEqual([402, "agent_daily_limit"])
      const spend = (await world!.api(secret, "GET", `/agents/${id}`)).body.spend
      expect(spend.today_credits).toBeGreaterThan(0)
      expect(spend.today_credits).toBeLessThanOrEqual(DAILY_LIMIT)

      // Spent up to the limit (what the 32 left), so the next call is refused. A call holds its
      // bound until it is metered, just after its answer (docs/agents.md: "spent or held"), so a
      // refusal right after an answer may be that hold: only one after a pause counts.
      for (let i = 0; i < 40; i++) {
        if ((await chat(botKey)).status === 200) continue
        await new Promise((settled) => setTimeout(settled, 200))
        if ((await chat(botKey)).status !== 200) break
      }
      expect((await chat(botKey)).body.error?.code).toBe("agent_daily_limit")

      // A change waits for the owner: the old limit holds until it is approved.
      const change = await world!.api(secret, "POST", `/agents/${id}/settings`, { daily_limit_credits: 10 })
      expect(change.status, JSON.stringify(change.body)).toBe(200)
      expect(change.body.agent).toMatchObject({ status: "active", approval: { kind: "update", state: "pending" }, limits: { daily_limit_credits: DAILY_LIMIT } })
      expect((await world!.api(secret, "POST", `/agents/${id}/settings`, { daily_limit_credits: 20 })).status).toBe(409)
      expect((await chat(botKey)).body.error?.code).toBe("agent_daily_limit")
      expect(await approve(page, change.body.approve_url, "03-approve-update")).toBe("approved")
      expect((await world!.api(secret, "GET", `/agents/${id}`)).body.limits.daily_limit_credits).toBe(10)
      expect((await chat(botKey)).status).toBe(200)

      // Revocation: once approved, the key's next call is 401.
      const revoke = await world!.api(secret, "POST", `/agents/${id}/revoke`)
      expect(revoke.body.agent.approval).toMatchObject({ kind: "revoke", state: "pending" })
      expect((await chat(botKey)).status).toBe(200)
      expect(await approve(page, revoke.body.approve_url, "04-approve-revoke")).toBe("approved")
      expect((await world!.api(secret, "GET", `/agents/${id}`)).body.status).toBe("revoked")
      expect((await chat(botKey)).status).toBe(401)

      // An approval link left for more than 30 minutes: expired, and so is the proposal.
      const late = await world!.api(secret, "POST", "/agents", { name: "late-bot" })
      world!.advanceClock(31 * 60_000)
      await page.goto(late.body.approve_url)
      await page.locator(`#approval[data-state="expired"]`).waitFor()
      await world!.shot(page, "05-expired")
      expect((await world!.api(secret, "GET", `/agents/${late.body.agent.id}`)).body.status).toBe("expired")
    })
  })
}
