/**
 * The monthly limits through HTTP, a suite every shell runs unchanged (docs/billing.md "Monthly
 * limits: the endpoints"): GET/POST /billing/limits and POST /billing/keys/{id}/limit (views,
 * partial updates, 400s that change nothing, 404 for a key that is not the caller's), and priced
 * calls stopped at a limit: a key's (402 key_monthly_limit_reached) and the account's own (402
 * monthly_limit_reached), with real calls to a reference machine whose model costs exactly one
 * credit a call. Then the "done means": a key with a monthly limit is stopped at it under
 * 64 concurrent calls and never charged past it (its spend in the limits view, the balance and
 * GET /billing/usage agree).
 *
 * The shell is started with this suite's catalogue (`limitsCatalogue`: one machine, the reference
 * machine the suite starts, a per-request model) and must make new accounts (newAccount).
 */
import type { CatalogueConfig } from "@model-platform/core/catalogue"
import { startReferenceMachine, type ReferenceMachine } from "@model-platform/reference-machine/ReferenceMachine"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { fixtureCatalogue } from "./Fixtures.ts"
import type { ShellUnderTest } from "./HttpSuite.ts"
import { type Client, clientOf, payWithApprovedCard } from "./IsolationWorld.ts"

/** The model of the suite: a forecast at exactly 1 credit a call (its reservation is its cost). */
export const LIMITS_MODEL = "lim-forecast"
const COST = 1

/**
 * The fixture catalogue's accounts, tiers and payments around one machine at `machineUrl` serving
 * LIMITS_MODEL. The first tier's rpm is high enough for 64 calls at once; its monthly limit is
 * 1000 credits, the next tier's (10000 bought) 50000.
 */
export const limitsCatalogue = (machineUrl: string): CatalogueConfig => ({
  ...fixtureCatalogue,
  machines: [{ ...fixtureCatalogue.machines[0]!, id: "m-lim", base_url: machineUrl, serverless_models: [LIMITS_MODEL] }],
  packages: [],
  models: [{
    id: LIMITS_MODEL, name: "Limits Forecast", family: "test", description: "A forecast at one credit a call.",
    modality: "time-series", service: "forecasts", owned_by: "platform", endpoint: "/v1/forecasts",
    context_length: 512, max_output_tokens: 0, features: [],
    pricing: { input_credits_per_mtok: 0, output_credits_per_mtok: 0, credits_per_request: COST },
    limits: { max_history: 512, max_horizon: 16 }
  }],
  prices: {
    ...fixtureCatalogue.prices,
    services: [{
      service: "forecasts", group: "inference", name: "Forecasts", unit: "request", unit_label: "request",
      credits_per_unit: COST, allowances: { free: 0, builder: 0, scale: 0, trial: 0 }
    }]
  },
  tiers: [
    { tier: 0, name: "Starter", purchased_credits: 0, rpm: 10_000, monthly_limit_credits: 1000 },
    { tier: 1, name: "Builder", purchased_credits: 10000, rpm: 10_000, monthly_limit_credits: 50000 }
  ]
})

const thisMonth = () => new Date().toISOString().slice(0, 7)

export const billingLimitsSuite = (shell: string, start: (catalogue: CatalogueConfig) => Promise<ShellUnderTest>) =>
  describe(`monthly limits on ${shell}`, () => {
    let machine: ReferenceMachine
    let platform: ShellUnderTest
    let client: Client
    beforeAll(async () => {
      machine = await startReferenceMachine({ port: 0, models: [{ id: LIMITS_MODEL, kind: "forecasts" }] })
      platform = await start(limitsCatalogue(machine.url))
      client = clientOf(platform)
    }, 120_000)
    afterAll(async () => {
      await platform?.close()
      await machine?.close()
    })

    const account = async () => {
      if (platform.newAccount === undefined) throw new Error(`${shell}: the suite needs new accounts (newAccount)`)
      return platform.newAccount()
    }
    const limits = async (key: string) => (await client.ok("GET", "/billing/limits", { key })).json
    const createKey = async (key: string, name: string, permissions = ["inference", "read"]) =>
      (await client.ok("POST", "/keys", { key, body: { name, permissions } })).json as { id: string; secret: string }
    /** Buys `usd` dollars of credits (1000 credits a dollar) with the test card. */
    const buy = async (key: string, usd: number) => {
      const order = (await client.ok("POST", "/orders", { key, body: { type: "credits", amount_usd: usd } })).json
      const paying = (await client.ok("POST", `/orders/${order.id}/pay`, { key, body: { method: "card" } })).json
      await payWithApprovedCard(client, paying.pay_url)
    }
    const forecast = (key: string) =>
      client.call("POST", "/v1/forecasts", { key, body: { model: LIMITS_MODEL, history: [1, 2, 3, 4, 5], horizon: 2 } })
    const expectInferenceError = (answer: { status: number; json: any; text: string }, status: number, code: string) => {
      expect(answer.status, answer.text).toBe(status)
      expect(answer.json).toEqual({ error: { message: expect.any(String), type: expect.any(String), code } })
    }
    const expect400 = (answer: { status: number; json: any; text: string }, field: string) => {
      expect(answer.status, answer.text).toBe(400)
      expect(answer.json).toEqual({ error: { code: "invalid_request", message: expect.any(String) } })
      expect(answer.json.error.message).toContain(field)
    }
    /** Metering may finish after the answer (the Node server meters in the background): waits for it. */
    const spentOnceSettled = async (key: string, keyId: string | undefined, expected: number) => {
      let spent = Number.NaN
      for (let i = 0; i < 100; i++) {
        const view = await limits(key)
        spent = keyId === undefined ? view.month.spent_credits : view.keys.find((k: any) => k.key_id === keyId).spent_credits
        if (spent >= expected) break
        await new Promise((r) => setTimeout(r, 100))
      }
      return spent
    }

    it("GET /billing/limits: this month, the tier as GET /billing shows it, the live keys without limits", async () => {
      const key = await account()
      const second = await createKey(key, "second")
      const revoked = await createKey(key, "revoked")
      await client.ok("DELETE", `/keys/${revoked.id}`, { key })
      const view = await limits(key)
      const billing = (await client.ok("GET", "/billing", { key })).json
      expect(view.month).toEqual({
        period: thisMonth(), spent_credits: 0, limit_credits: 1000, own_limit_credits: null, alert_points: [], alert_email: false
      })
      expect(view.usage_tier).toEqual(billing.usage_tier)
      expect(billing.month).toEqual({ spent_credits: 0, limit_credits: 1000, own_limit_credits: null, alert_points: [] })
      const live = ((await client.ok("GET", "/keys", { key })).json.data as Array<any>).filter((k) => k.revoked_at === null)
      expect(view.keys).toEqual(live.map((k) => ({ key_id: k.id, name: k.name, monthly_limit_credits: null, spent_credits: 0 })))
      expect(view.keys.map((k: any) => k.key_id)).toContain(second.id)
      expect(view.keys.map((k: any) => k.key_id)).not.toContain(revoked.id)
    })

    it("POST /billing/limits: a partial update; null goes back to the tier's limit; GET /billing shows the same", async () => {
      const key = await account()
      const set = await client.ok("POST", "/billing/limits", {
        key, body: { monthly_limit_credits: 250.5, alert_points: [90, 50, 50, 100], alert_email: true }
      })
      expect(set.json.month).toMatchObject({ limit_credits: 250.5, own_limit_credits: 250.5, alert_points: [50, 90, 100], alert_email: true })
      expect(await limits(key)).toEqual(set.json)
      expect((await client.ok("GET", "/billing", { key })).json.month).toEqual({
        spent_credits: 0, limit_credits: 250.5, own_limit_credits: 250.5, alert_points: [50, 90, 100]
      })
      // An omitted field keeps its value.
      const emailOff = await client.ok("POST", "/billing/limits", { key, body: { alert_email: false } })
      expect(emailOff.json.month).toMatchObject({ own_limit_credits: 250.5, alert_points: [50, 90, 100], alert_email: false })
      const empty = await client.ok("POST", "/billing/limits", { key, body: {} })
      expect(empty.json).toEqual(emailOff.json)
      const tier = await client.ok("POST", "/billing/limits", { key, body: { monthly_limit_credits: null, alert_points: [] } })
      expect(tier.json.month).toMatchObject({ limit_credits: 1000, own_limit_credits: null, alert_points: [], alert_email: false })
      // Exactly the tier's limit, and 0, are limits like any other.
      expect((await client.ok("POST", "/billing/limits", { key, body: { monthly_limit_credits: 1000 } })).json.month.own_limit_credits).toBe(1000)
      expect((await client.ok("POST", "/billing/limits", { key, body: { monthly_limit_credits: 0 } })).json.month.limit_credits).toBe(0)
    })

    it("POST /billing/limits: 400 naming the field, and nothing changes (not even the valid fields beside it)", async () => {
      const key = await account()
      await client.ok("POST", "/billing/limits", { key, body: { monthly_limit_credits: 100, alert_points: [75], alert_email: false } })
      const before = await limits(key)
      const refused: ReadonlyArray<[string, unknown]> = [
        ["monthly_limit_credits", { monthly_limit_credits: 1000.000001, alert_email: true }],
        ["monthly_limit_credits", { monthly_limit_credits: 5000, alert_points: [10] }],
        ["monthly_limit_credits", { monthly_limit_credits: -1 }],
        ["monthly_limit_credits", { monthly_limit_credits: 1.0000001 }],
        ["monthly_limit_credits", { monthly_limit_credits: "5" }],
        ["alert_points", { alert_points: [0], alert_email: true }],
        ["alert_points", { alert_points: [101] }],
        ["alert_points", { alert_points: [12.5] }],
        ["alert_points", { alert_points: "50" }],
        ["alert_points", { alert_points: Array.from({ length: 101 }, (_, i) => (i % 100) + 1) }],
        ["alert_email", { alert_email: "yes" }]
      ]
      for (const [field, body] of refused) expect400(await client.call("POST", "/billing/limits", { key, body }), field)
      expect(await limits(key)).toEqual(before)
    })

    it("POST /billing/keys/{id}/limit: set, shown, removed; above the tier 400; unknown, revoked, another account's key 404", async () => {
      const key = await account()
      const worker = await createKey(key, "worker")
      const set = await client.ok("POST", `/billing/keys/${worker.id}/limit`, { key, body: { monthly_limit_credits: 12.25 } })
      expect(set.json.keys.find((k: any) => k.key_id === worker.id)).toEqual({ key_id: worker.id, name: "worker", monthly_limit_credits: 12.25, spent_credits: 0 })
      expect(set.json.month.own_limit_credits).toBeNull()
      expect400(await client.call("POST", `/billing/keys/${worker.id}/limit`, { key, body: { monthly_limit_credits: 1000.5 } }), "monthly_limit_credits")
      expect400(await client.call("POST", `/billing/keys/${worker.id}/limit`, { key, body: {} }), "monthly_limit_credits")
      expect((await limits(key)).keys.find((k: any) => k.key_id === worker.id).monthly_limit_credits).toBe(12.25)
      const removed = await client.ok("POST", `/billing/keys/${worker.id}/limit`, { key, body: { monthly_limit_credits: null } })
      expect(removed.json.keys.find((k: any) => k.key_id === worker.id).monthly_limit_credits).toBeNull()

      const other = await account()
      const theirs = await createKey(other, "theirs")
      await client.ok("POST", `/billing/keys/${theirs.id}/limit`, { key: other, body: { monthly_limit_credits: 7 } })
      const revoked = await createKey(key, "revoked")
      await client.ok("DELETE", `/keys/${revoked.id}`, { key })
      for (const id of [theirs.id, revoked.id, "key_nope"]) {
        const answer = await client.call("POST", `/billing/keys/${id}/limit`, { key, body: { monthly_limit_credits: 1 } })
        expect(answer.status, answer.text).toBe(404)
        expect(answer.json).toEqual({ error: { code: "key_not_found", message: expect.any(String) } })
      }
      expect((await limits(other)).keys.find((k: any) => k.key_id === theirs.id).monthly_limit_credits).toBe(7)
    })

    it("a key with a monthly limit stops at it: 402 key_monthly_limit_reached; the account's other keys go on", async () => {
      const key = await account()
      await buy(key, 5)
      const limited = await createKey(key, "limited")
      const free = await createKey(key, "free")
      await client.ok("POST", `/billing/keys/${limited.id}/limit`, { key, body: { monthly_limit_credits: 3 * COST } })
      for (let i = 0; i < 3; i++) expect((await forecast(limited.secret)).status).toBe(200)
      expectInferenceError(await forecast(limited.secret), 402, "key_monthly_limit_reached")
      expect((await forecast(free.secret)).status).toBe(200)
      expect(await spentOnceSettled(key, undefined, 4 * COST)).toBe(4 * COST)
      const view = await limits(key)
      expect(view.keys.find((k: any) => k.key_id === limited.id).spent_credits).toBe(3 * COST)
      // Raised: the key goes on, up to the new limit.
      await client.ok("POST", `/billing/keys/${limited.id}/limit`, { key, body: { monthly_limit_credits: 4 * COST } })
      expect((await forecast(limited.secret)).status).toBe(200)
      expectInferenceError(await forecast(limited.secret), 402, "key_monthly_limit_reached")
    })

    it("the account stops at its own limit: 402 monthly_limit_reached for every key; GET /billing shows the spend", async () => {
      const key = await account()
      await buy(key, 5)
      const a = await createKey(key, "a")
      const b = await createKey(key, "b")
      await client.ok("POST", "/billing/limits", { key, body: { monthly_limit_credits: 4 * COST } })
      for (const secret of [a.secret, b.secret, a.secret, b.secret]) expect((await forecast(secret)).status).toBe(200)
      expectInferenceError(await forecast(a.secret), 402, "monthly_limit_reached")
      expectInferenceError(await forecast(b.secret), 402, "monthly_limit_reached")
      expect(await spentOnceSettled(key, undefined, 4 * COST)).toBe(4 * COST)
      expect((await client.ok("GET", "/billing", { key })).json.month).toEqual({
        spent_credits: 4 * COST, limit_credits: 4 * COST, own_limit_credits: 4 * COST, alert_points: []
      })
      // Lowered below the spend: it takes nothing back and stops every later call.
      await client.ok("POST", "/billing/limits", { key, body: { monthly_limit_credits: 1 } })
      expectInferenceError(await forecast(b.secret), 402, "monthly_limit_reached")
      expect((await client.ok("GET", "/credits", { key })).json.total_credits).toBe(5000 - 4 * COST)
    })

    it("done means: a key with a monthly limit is stopped at it under 64 concurrent calls and never charged past it", async () => {
      const key = await account()
      await buy(key, 5)
      const limited = await createKey(key, "concurrent")
      const LIMIT = 10 * COST
      await client.ok("POST", `/billing/keys/${limited.id}/limit`, { key, body: { monthly_limit_credits: LIMIT } })
      const started = Date.now()
      const answers = await Promise.all(Array.from({ length: 64 }, () => forecast(limited.secret)))
      const ms = Date.now() - started
      const ok = answers.filter((a) => a.status === 200).length
      const refused = answers.filter((a) => a.status !== 200)
      for (const a of refused) expectInferenceError(a, 402, "key_monthly_limit_reached")
      expect(refused.length).toBeGreaterThan(0)
      expect(ok).toBeGreaterThan(0)
      expect(ok * COST).toBeLessThanOrEqual(LIMIT)
      const spent = await spentOnceSettled(key, limited.id, ok * COST)
      expect(spent).toBe(ok * COST)
      expect(spent).toBeLessThanOrEqual(LIMIT)
      const credits = (await client.ok("GET", "/credits", { key })).json.total_credits
      expect(credits).toBe(5000 - ok * COST)
      // The usage report says the same: the key's calls answered, each charged once.
      const usage = (await client.ok("GET", "/billing/usage?group_by=key", { key })).json.data as Array<any>
      expect(usage.find((row) => row.key === limited.id)).toMatchObject({ calls: ok, credits: ok * COST })
      console.log(`monthly limits on ${shell}: 64 concurrent calls of a key limited to ${LIMIT} credits: ${ok} answered, ${refused.length} refused 402, charged ${spent} credits, in ${ms} ms`)
    }, 60_000)
  })
