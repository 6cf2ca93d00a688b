/**
 * Plans and rentals over time, through HTTP, a suite every shell runs unchanged (docs/plans.md):
 * the platform runs on a clock the suite moves forward (PlatformOptions.clock) with its renewal job
 * on (PlatformOptions.renewPlans), so a plan's period and a rental's hours really pass.
 *
 * - a Builder plan bought by card: its key spends the plan's allowance first (the usage CSV's
 *   from_allowance), then credits; a model outside the plan is 403 model_not_in_plan;
 * - past the period's end the card plan is renewed exactly once (one more receipt, the next period,
 *   a full allowance again), however many runs of the job see it;
 * - a card declined at renewal (it expired meanwhile) ends the plan (renewal_error, a plan_renewal_failed alert, its
 *   key 403 subscription_inactive); a cancelled plan ends and is not charged;
 * - a stablecoin plan is renewed by an order with renew_subscription_id, 30 days on from its end;
 *   renewing a card plan or another account's plan is refused;
 * - a rental's key calls while the rental runs, then 403 rental_ended.
 *
 * The shell is started with `plansCatalogue` and the given clock, and must make new accounts.
 */
import { eventually } from "./Eventually.ts"
import type { CatalogueConfig } from "@model-platform/core/catalogue"
import type { Clock } from "effect"
import { startReferenceMachine, type ReferenceMachine } from "@model-platform/reference-machine/ReferenceMachine"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { LIMITS_MODEL, limitsCatalogue } from "./BillingLimitsSuite.ts"
import type { ShellUnderTest } from "./HttpSuite.ts"
import { type Client, clientOf } from "./IsolationWorld.ts"
import { movableClock } from "./MovableClock.ts"

/** A model the machine serves that the plan does not include. */
const OTHER_MODEL = "lim-forecast-other"
/** Calls (one credit each) of the plan's allowance per period. */
const ALLOWANCE = 2
const DAY = 24 * 3_600_000
const PERIOD_DAYS = 30

const APPROVED_CARD = "4242 4242 4242 4242"
const EXPIRY = `12/${String((new Date().getUTCFullYear() + 5) % 100).padStart(2, "0")}`
/** An expiry at the end of the month of `now`: the card pays now and has expired a period later. */
const expiringThisMonth = (now: number) => {
  const date = new Date(now)
  return `${String(date.getUTCMonth() + 1).padStart(2, "0")}/${String(date.getUTCFullYear() % 100).padStart(2, "0")}`
}

export const plansCatalogue = (machineUrl: string): CatalogueConfig => {
  const base = limitsCatalogue(machineUrl)
  return {
    ...base,
    machines: base.machines.map((m) => ({
      ...m,
      serverless_models: [LIMITS_MODEL, OTHER_MODEL],
      subscribe: {
        currency: "USD",
        period_days: PERIOD_DAYS,
        plans: [{ id: "builder", name: "Builder", usd_per_period: 20, models: [LIMITS_MODEL], payment_methods: ["card", "stablecoin"] }]
      },
      rent: {
        currency: "USD",
        usd_per_hour: { cpu_core: 0.02, memory_gb: 0.004, gpu: 1.1, storage_gb: 0.0002 },
        min_hours: 1,
        max_hours: 720,
        max: { cpu_cores: 8, memory_gb: 32, gpu: 1, storage_gb: 100 }
      }
    })),
    models: [...base.models, { ...base.models[0]!, id: OTHER_MODEL, name: "Other Forecast" }],
    prices: {
      ...base.prices,
      services: base.prices.services.map((s) => ({ ...s, allowances: { free: 0, builder: ALLOWANCE, scale: 0, trial: 0 } }))
    }
  }
}

export const plansLifecycleSuite = (
  shell: string,
  start: (catalogue: CatalogueConfig, options: { readonly clock: Clock.Clock; readonly renewPlans: { readonly intervalMs: number } }) => Promise<ShellUnderTest>
) =>
  describe(`plans and rentals over time on ${shell}`, () => {
    let machine: ReferenceMachine
    let platform: ShellUnderTest
    let client: Client
    const clock = movableClock()
    beforeAll(async () => {
      machine = await startReferenceMachine({ port: 0, models: [{ id: LIMITS_MODEL, kind: "forecasts" }, { id: OTHER_MODEL, kind: "forecasts" }] })
      platform = await start(plansCatalogue(machine.url), { clock: clock.clock, renewPlans: { intervalMs: 100 } })
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
    const machineId = () => plansCatalogue(machine.url).machines[0]!.id
    const forecast = (key: string, model = LIMITS_MODEL) =>
      client.call("POST", "/v1/forecasts", { key, body: { model, history: [1, 2, 3, 4, 5], horizon: 2 } })
    const payByCard = async (key: string, orderId: string, expiry = EXPIRY) => {
      const paying = (await client.ok("POST", `/orders/${orderId}/pay`, { key, body: { method: "card" } })).json
      const form = await platform.fetch(new URL(paying.pay_url).pathname, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ card_number: APPROVED_CARD, expiry, cvc: "123" }).toString()
      })
      const html = await form.text()
      expect(form.status, html.slice(0, 300)).toBe(200)
      expect(html).toContain(`data-testid="paid"`)
    }
    const payByStablecoin = async (key: string, orderId: string) => {
      const paying = (await client.ok("POST", `/orders/${orderId}/pay`, { key, body: { method: "stablecoin", chain: "base", token: "USDC" } })).json
      const deposit = paying.payment.deposit
      await client.ok("POST", "/_simulated/deposits", {
        key: platform.ownerSecret,
        body: { to: deposit.address, amount: deposit.amount, chain: "base", token: "USDC" }
      })
    }
    const order = async (key: string, body: Record<string, unknown>) => (await client.ok("POST", "/orders", { key, body })).json
    /** Buys the Builder plan and answers it as GET /subscriptions lists it. */
    const buyPlan = async (key: string, how: "card" | "card_expiring" | "stablecoin" = "card") => {
      const created = await order(key, { type: "subscription", machine_id: machineId(), plan_id: "builder" })
      if (how === "stablecoin") await payByStablecoin(key, created.id)
      else await payByCard(key, created.id, how === "card" ? EXPIRY : expiringThisMonth(clock.now()))
      return (await subscriptions(key))[0]
    }
    const subscriptions = async (key: string) => (await client.ok("GET", "/subscriptions", { key })).json.data as Array<any>
    const planOf = async (key: string, id: string) => (await subscriptions(key)).find((s) => s.id === id)
    const receipts = async (key: string) => (await client.ok("GET", "/billing/receipts", { key })).json.data as Array<any>
    const scopedKey = async (key: string, scope: Record<string, string>) =>
      (await client.ok("POST", "/keys", { key, body: { name: "scoped", permissions: ["inference"], ...scope } })).json.secret as string
    const buyCredits = async (key: string, usd: number) => {
      const created = await order(key, { type: "credits", amount_usd: usd })
      await payByCard(key, created.id)
    }
    /** The month's usage CSV as [from_allowance, credits] per row, once `calls` rows are metered. */
    const paidFrom = async (key: string, calls: number) => {
      let rows: Array<Array<string>> = []
      for (let i = 0; i < 100; i++) {
        const answer = await client.call("GET", "/billing/usage.csv", { key })
        expect(answer.status, answer.text).toBe(200)
        rows = answer.text.trim().split("\r\n").map((line) => line.split(","))
        if (rows.length - 1 >= calls) break
        await new Promise((r) => setTimeout(r, 100))
      }
      const header = rows[0]!
      return rows.slice(1)
        .map((r) => [Number(r[header.indexOf("from_allowance")]), Number(r[header.indexOf("credits")])])
        .sort((a, b) => b[0]! - a[0]!)
    }
    const codeOf = (answer: { json: any }) => answer.json?.error?.code

    it("a Builder plan bought by card: its key spends the plan's allowance, then credits; another model is 403 model_not_in_plan", async () => {
      const key = await account()
      await buyCredits(key, 5)
      const plan = await buyPlan(key)
      expect(plan).toMatchObject({ machine_id: machineId(), plan_id: "builder", status: "active", auto_renews: true, paid_with: "card", renewal_error: null })
      const planKey = await scopedKey(key, { subscription_id: plan.id })
      for (let i = 0; i < ALLOWANCE + 1; i++) {
        const answer = await forecast(planKey)
        expect(answer.status, answer.text).toBe(200)
      }
      expect(await paidFrom(key, ALLOWANCE + 1)).toEqual([...Array.from({ length: ALLOWANCE }, () => [1, 0]), [0, 1]])
      expect((await client.ok("GET", "/credits", { key })).json.total_credits).toBe(5000 - 1)
      const other = await forecast(planKey, OTHER_MODEL)
      expect([other.status, codeOf(other)], other.text).toEqual([403, "model_not_in_plan"])
    })

    it("past the period's end a card plan is renewed once: the next period, one more receipt, the allowance full again", async () => {
      const key = await account()
      const plan = await buyPlan(key)
      const planKey = await scopedKey(key, { subscription_id: plan.id })
      for (let i = 0; i < ALLOWANCE; i++) expect((await forecast(planKey)).status).toBe(200)
      // The allowance is spent and the account has no credits: refused until the next period.
      expect(codeOf(await forecast(planKey))).toBe("insufficient_credit")
      clock.advance(PERIOD_DAYS * DAY + 1_000)
      const nextEnd = new Date(Date.parse(plan.current_period_end) + PERIOD_DAYS * DAY).toISOString()
      await eventually(async () => expect((await planOf(key, plan.id))?.current_period_end).toBe(nextEnd))
      // More runs of the job change nothing.
      await new Promise((r) => setTimeout(r, 500))
      expect(await planOf(key, plan.id)).toMatchObject({
        status: "active", auto_renews: true, current_period_start: plan.current_period_end, current_period_end: nextEnd, renewal_error: null
      })
      const paid = (await receipts(key)).filter((r) => r.kind === "subscription")
      expect(paid.map((r) => r.amount.value)).toEqual([20, 20])
      for (let i = 0; i < ALLOWANCE; i++) {
        const answer = await forecast(planKey)
        expect(answer.status, answer.text).toBe(200)
      }
    })

    it("a card declined at renewal (expired) ends the plan: renewal_error, a plan_renewal_failed alert, its key 403 subscription_inactive", async () => {
      const key = await account()
      const plan = await buyPlan(key, "card_expiring")
      const planKey = await scopedKey(key, { subscription_id: plan.id })
      expect((await forecast(planKey)).status).toBe(200)
      clock.advance(PERIOD_DAYS * DAY + 1_000)
      await eventually(async () => expect((await planOf(key, plan.id))?.status).toBe("ended"))
      const ended = await planOf(key, plan.id)
      expect(ended).toMatchObject({ auto_renews: false, current_period_end: plan.current_period_end, renewal_error: expect.stringContaining("expired_card") })
      const alerts = (await client.ok("GET", "/billing/alerts", { key })).json.data as Array<any>
      expect(alerts.filter((a) => a.kind === "plan_renewal_failed").map((a) => a.target)).toEqual([plan.id])
      expect((await receipts(key)).filter((r) => r.kind === "subscription")).toHaveLength(1)
      const refused = await forecast(planKey)
      expect([refused.status, codeOf(refused)], refused.text).toEqual([403, "subscription_inactive"])
    })

    it("a cancelled plan stays active to its period's end, then ends without a charge", async () => {
      const key = await account()
      const plan = await buyPlan(key)
      await client.ok("POST", `/subscriptions/${plan.id}/cancel`, { key })
      expect(await planOf(key, plan.id)).toMatchObject({ status: "active", cancel_at_period_end: true, auto_renews: false })
      clock.advance(PERIOD_DAYS * DAY + 1_000)
      await new Promise((r) => setTimeout(r, 500))
      expect(await planOf(key, plan.id)).toMatchObject({ status: "ended", current_period_end: plan.current_period_end, renewal_error: null })
      expect((await receipts(key)).filter((r) => r.kind === "subscription")).toHaveLength(1)
    })

    it("a stablecoin plan is renewed by an order with renew_subscription_id: 30 days on from its end, once", async () => {
      const key = await account()
      const plan = await buyPlan(key, "stablecoin")
      expect(plan).toMatchObject({ status: "active", paid_with: "stablecoin", auto_renews: false })
      const renewal = await order(key, { type: "subscription", machine_id: machineId(), plan_id: "builder", renew_subscription_id: plan.id })
      expect(renewal).toMatchObject({ type: "subscription", status: "pending", amount_usd: 20 })
      await payByStablecoin(key, renewal.id)
      const nextEnd = new Date(Date.parse(plan.current_period_end) + 30 * DAY).toISOString()
      expect(await planOf(key, plan.id)).toMatchObject({ status: "active", current_period_end: nextEnd, current_period_start: plan.current_period_end })
      // Past the first period it is still active (renewed); the job never charges it.
      clock.advance(PERIOD_DAYS * DAY + 1_000)
      await new Promise((r) => setTimeout(r, 300))
      expect(await planOf(key, plan.id)).toMatchObject({ status: "active", current_period_end: nextEnd })
      expect((await receipts(key)).filter((r) => r.kind === "subscription")).toHaveLength(2)
    })

    it("renewing a card plan by order is a 400 naming renew_subscription_id; another account's plan is 404; nothing is created", async () => {
      const key = await account()
      const plan = await buyPlan(key)
      const body = { type: "subscription", machine_id: machineId(), plan_id: "builder", renew_subscription_id: plan.id }
      const card = await client.call("POST", "/orders", { key, body })
      expect(card.status, card.text).toBe(400)
      expect(card.json.error.message).toContain("renew_subscription_id")
      const stranger = await client.call("POST", "/orders", { key: await account(), body })
      expect([stranger.status, stranger.json.error.code], stranger.text).toEqual([404, "subscription_not_found"])
      expect((await client.ok("GET", "/orders", { key })).json.data).toHaveLength(1)
    })

    it("a rental's key calls its machine while the rental runs; after its hours, 403 rental_ended", async () => {
      const key = await account()
      await buyCredits(key, 5)
      const created = await order(key, { type: "rental", machine_id: machineId(), cpu_cores: 1, memory_gb: 1, hours: 1 })
      await payByCard(key, created.id)
      const [rental] = (await client.ok("GET", "/rentals", { key })).json.data
      expect(rental).toMatchObject({ status: "active", hours: 1 })
      const rentalKey = await scopedKey(key, { rental_id: rental.id })
      expect((await forecast(rentalKey)).status).toBe(200)
      clock.advance(3_600_000 + 1_000)
      expect((await client.ok("GET", "/rentals", { key })).json.data[0].status).toBe("ended")
      const refused = await forecast(rentalKey)
      expect([refused.status, codeOf(refused)], refused.text).toEqual([403, "rental_ended"])
    })
  })
