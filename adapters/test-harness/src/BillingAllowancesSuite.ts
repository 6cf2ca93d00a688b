/**
 * Allowances and the trial through HTTP, a suite every shell runs unchanged (docs/billing.md
 * "Allowances and the trial"): a new account without credits is served from its service's free
 * monthly allowance, then from the one-time trial, then refused (402 insufficient_credit); with
 * credits, the grants are still spent first; the usage CSV and report say what each call took
 * from where; the grants do not count against monthly limits; and 64 concurrent calls of an
 * account without credits are answered exactly as far as its grants go.
 *
 * The shell is started with this suite's catalogue (`allowancesCatalogue`: the monthly limits
 * suite's machine and model — a forecast at exactly one credit a call — with a free allowance of
 * FREE calls a month and a trial of TRIAL calls) and must make new accounts (newAccount).
 */
import type { CatalogueConfig } from "@model-platform/core/catalogue"
import { startReferenceMachine, type ReferenceMachine } from "@model-platform/reference-machine/ReferenceMachine"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { LIMITS_MODEL, limitsCatalogue } from "./BillingLimitsSuite.ts"
import type { ShellUnderTest } from "./HttpSuite.ts"
import { type Client, clientOf, payWithApprovedCard } from "./IsolationWorld.ts"

/** Credits (= calls, at one credit a call) of the forecasts service's monthly allowance and trial. */
const FREE = 3
const TRIAL = 2

export const allowancesCatalogue = (machineUrl: string): CatalogueConfig => {
  const base = limitsCatalogue(machineUrl)
  return {
    ...base,
    prices: {
      ...base.prices,
      services: base.prices.services.map((s) => ({ ...s, allowances: { free: FREE, builder: 0, scale: 0, trial: TRIAL } }))
    }
  }
}

export const billingAllowancesSuite = (shell: string, start: (catalogue: CatalogueConfig) => Promise<ShellUnderTest>) =>
  describe(`allowances and the trial on ${shell}`, () => {
    let machine: ReferenceMachine
    let platform: ShellUnderTest
    let client: Client
    beforeAll(async () => {
      machine = await startReferenceMachine({ port: 0, models: [{ id: LIMITS_MODEL, kind: "forecasts" }] })
      platform = await start(allowancesCatalogue(machine.url))
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
    const forecast = (key: string) =>
      client.call("POST", "/v1/forecasts", { key, body: { model: LIMITS_MODEL, history: [1, 2, 3, 4, 5], horizon: 2 } })
    const credits = async (key: string) => (await client.ok("GET", "/credits", { key })).json.total_credits as number
    const buy = async (key: string, usd: number) => {
      const order = (await client.ok("POST", "/orders", { key, body: { type: "credits", amount_usd: usd } })).json
      const paying = (await client.ok("POST", `/orders/${order.id}/pay`, { key, body: { method: "card" } })).json
      await payWithApprovedCard(client, paying.pay_url)
    }
    /** The month's usage CSV rows (header first), once `calls` calls are metered (the Node server meters after the answer). */
    const csvOnceMetered = async (key: string, calls: number) => {
      let rows: Array<Array<string>> = []
      for (let i = 0; i < 100; i++) {
        const answer = await client.call("GET", "/billing/usage.csv", { key })
        expect(answer.status, answer.text).toBe(200)
        rows = answer.text.trim().split("\r\n").map((line) => line.split(","))
        if (rows.length - 1 >= calls) break
        await new Promise((r) => setTimeout(r, 100))
      }
      return rows
    }
    /**
     * Per CSV row: [from_allowance, from_trial, list_credits, credits], in a fixed order (calls in
     * one millisecond tie on time_utc): allowance rows, then trial rows, then credit rows.
     */
    const paidFrom = (rows: Array<Array<string>>) => {
      const header = rows[0]!
      const col = (name: string) => header.indexOf(name)
      return rows.slice(1)
        .map((r) => [r[col("from_allowance")], r[col("from_trial")], r[col("list_credits")], r[col("credits")]].map(Number))
        .sort((a, b) => b[0]! - a[0]! || b[1]! - a[1]! || a[3]! - b[3]!)
    }

    it("the price table lists the service's allowances", async () => {
      const prices = (await client.call("GET", "/billing/prices")).json
      expect(prices.services.find((s: any) => s.service === "forecasts").allowances).toEqual({ free: FREE, builder: 0, scale: 0, trial: TRIAL })
    })

    it("a new account without credits: the month's allowance, then the trial, then 402; nothing is charged", async () => {
      const key = await account()
      for (let i = 0; i < FREE + TRIAL; i++) {
        const answer = await forecast(key)
        expect(answer.status, answer.text).toBe(200)
      }
      const refused = await forecast(key)
      expect(refused.status, refused.text).toBe(402)
      expect(refused.json.error.code).toBe("insufficient_credit")
      const rows = await csvOnceMetered(key, FREE + TRIAL)
      expect(paidFrom(rows)).toEqual([
        ...Array.from({ length: FREE }, () => [1, 0, 1, 0]),
        ...Array.from({ length: TRIAL }, () => [0, 1, 1, 0])
      ])
      expect(await credits(key)).toBe(0)
      const usage = (await client.ok("GET", "/billing/usage?group_by=service", { key })).json.data
      expect(usage).toEqual([{ key: "forecasts", label: expect.any(String), calls: FREE + TRIAL, list_credits: FREE + TRIAL, credits: 0 }])
      expect((await client.ok("GET", "/billing", { key })).json.month.spent_credits).toBe(0)
    })

    it("with credits, the allowance and the trial are still spent first; then credits pay", async () => {
      const key = await account()
      await buy(key, 5)
      const bought = await credits(key)
      for (let i = 0; i < FREE + TRIAL + 2; i++) expect((await forecast(key)).status).toBe(200)
      const rows = await csvOnceMetered(key, FREE + TRIAL + 2)
      expect(paidFrom(rows)).toEqual([
        ...Array.from({ length: FREE }, () => [1, 0, 1, 0]),
        ...Array.from({ length: TRIAL }, () => [0, 1, 1, 0]),
        [0, 0, 1, 1],
        [0, 0, 1, 1]
      ])
      expect(await credits(key)).toBe(bought - 2)
    })

    it("the allowance and the trial do not count against a monthly limit: a key limited to 0 uses them, then stops", async () => {
      const key = await account()
      await buy(key, 5)
      const worker = (await client.ok("POST", "/keys", { key, body: { name: "worker", permissions: ["inference"] } })).json
      await client.ok("POST", `/billing/keys/${worker.id}/limit`, { key, body: { monthly_limit_credits: 0 } })
      for (let i = 0; i < FREE + TRIAL; i++) expect((await forecast(worker.secret)).status).toBe(200)
      const stopped = await forecast(worker.secret)
      expect(stopped.status, stopped.text).toBe(402)
      expect(stopped.json.error.code).toBe("key_monthly_limit_reached")
    })

    it("64 concurrent calls of an account without credits: exactly the allowance and the trial are answered", async () => {
      const key = await account()
      const answers = await Promise.all(Array.from({ length: 64 }, () => forecast(key)))
      const ok = answers.filter((a) => a.status === 200).length
      for (const a of answers.filter((a) => a.status !== 200)) {
        expect(a.status, a.text).toBe(402)
        expect(a.json.error.code).toBe("insufficient_credit")
      }
      expect(ok).toBe(FREE + TRIAL)
      const rows = await csvOnceMetered(key, ok)
      const took = paidFrom(rows)
      expect(took.reduce((n, r) => n + r[0]!, 0)).toBe(FREE)
      expect(took.reduce((n, r) => n + r[1]!, 0)).toBe(TRIAL)
      expect(took.every((r) => r[3] === 0)).toBe(true)
      console.log(`allowances on ${shell}: 64 concurrent calls without credits: ${ok} answered (free ${FREE} + trial ${TRIAL})`)
    }, 60_000)
  })
