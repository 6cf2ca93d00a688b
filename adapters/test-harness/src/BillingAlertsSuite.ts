/**
 * Alerts and automatic top-ups through HTTP, a suite every shell runs unchanged (docs/billing.md
 * "Alerts", "Automatic top-ups"), with real priced calls to a reference machine whose model costs
 * exactly one credit a call, and a real SMTP server for the alert mails:
 * - GET /billing/alerts (limit 1 to 200) and GET/POST /billing/auto-reload, their 400s;
 * - calls passing alert points raise org_spend once per point, a limit's first refusal raises
 *   monthly_limit_reached / key_monthly_limit_reached once, each mailed when alert_email is on;
 * - an account with automatic top-ups crossing its threshold is charged once: an order paid, a
 *   receipt with auto_reload, the credits, an auto_reload_paid alert; never again while above;
 * - the 0341 card saves but its charge fails once: last_error, auto_reload_failed, no retry
 *   until the settings change; with top-ups off, crossing the threshold raises low_balance once.
 *
 * The shell is started with `alertsCatalogue` and the suite's SMTP server for alert mail, and
 * lets a person save a card (`saveCard`: the billing page's use-case, AutoReload.saveCard).
 */
import type { SaveCardResult } from "@model-platform/core/billing"
import type { CatalogueConfig } from "@model-platform/core/catalogue"
import type { CardDetails } from "@model-platform/core/payments"
import { type ReferenceMachine, startReferenceMachine } from "@model-platform/reference-machine/ReferenceMachine"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { fixtureCatalogue } from "./Fixtures.ts"
import { eventually } from "./Eventually.ts"
import type { ShellUnderTest } from "./HttpSuite.ts"
import { type Client, clientOf, payWithApprovedCard } from "./IsolationWorld.ts"
import { type Mailbox, recipients, startSmtp } from "./LocalSmtp.ts"

export const ALERTS_MODEL = "alert-forecast"

export interface AlertsShell extends ShellUnderTest {
  /** A person saves a card on the billing page (AutoReload.saveCard in the shell's services). */
  readonly saveCard: (accountId: string, card: CardDetails) => Promise<SaveCardResult>
}

export interface AlertsSetup {
  readonly catalogue: CatalogueConfig
  /** Where the shell sends alert mail (SMTP, no TLS, no authentication). */
  readonly smtpUrl: string
}

/** One machine at `machineUrl` serving ALERTS_MODEL at 1 credit a call; 1000 credits a dollar. */
export const alertsCatalogue = (machineUrl: string): CatalogueConfig => ({
  ...fixtureCatalogue,
  machines: [{ ...fixtureCatalogue.machines[0]!, id: "m-alerts", base_url: machineUrl, serverless_models: [ALERTS_MODEL] }],
  packages: [],
  models: [{
    id: ALERTS_MODEL, name: "Alerts Forecast", family: "test", description: "A forecast at one credit a call.",
    modality: "time-series", service: "forecasts", owned_by: "platform", endpoint: "/v1/forecasts",
    context_length: 512, max_output_tokens: 0, features: [],
    pricing: { input_credits_per_mtok: 0, output_credits_per_mtok: 0, credits_per_request: 1 },
    limits: { max_history: 512, max_horizon: 16 }
  }],
  prices: {
    ...fixtureCatalogue.prices,
    credits_per_usd: 1000,
    services: [{
      service: "forecasts", group: "inference", name: "Forecasts", unit: "request", unit_label: "request",
      credits_per_unit: 1, allowances: { free: 0, builder: 0, scale: 0, trial: 0 }
    }]
  },
  tiers: [{ tier: 0, name: "Starter", purchased_credits: 0, rpm: 10_000, monthly_limit_credits: 1_000_000 }]
})

const expiry = new Date().getUTCFullYear() + 5
const card = (number: string): CardDetails => ({ number, exp_month: 12, exp_year: expiry, cvc: "123" })

export const billingAlertsSuite = (shell: string, start: (setup: AlertsSetup) => Promise<AlertsShell>) =>
  describe(`alerts and automatic top-ups on ${shell}`, () => {
    let machine: ReferenceMachine
    let mailbox: Mailbox
    let platform: AlertsShell
    let client: Client
    beforeAll(async () => {
      machine = await startReferenceMachine({ port: 0, models: [{ id: ALERTS_MODEL, kind: "forecasts" }] })
      mailbox = await startSmtp()
      platform = await start({ catalogue: alertsCatalogue(machine.url), smtpUrl: mailbox.url })
      client = clientOf(platform)
    }, 120_000)
    afterAll(async () => {
      await platform?.close()
      await mailbox?.close()
      await machine?.close()
    })

    /** A new account with `usd` dollars of credits bought with the test card: its key, id and email. */
    const account = async (usd = 5) => {
      if (platform.newAccount === undefined) throw new Error(`${shell}: the suite needs new accounts (newAccount)`)
      const key = await platform.newAccount()
      const order = (await client.ok("POST", "/orders", { key, body: { type: "credits", amount_usd: usd } })).json
      const paying = (await client.ok("POST", `/orders/${order.id}/pay`, { key, body: { method: "card" } })).json
      await payWithApprovedCard(client, paying.pay_url)
      const me = (await client.ok("GET", "/me", { key })).json as { id: string; email: string }
      return { key, id: me.id, email: me.email }
    }
    const forecast = (key: string) =>
      client.call("POST", "/v1/forecasts", { key, body: { model: ALERTS_MODEL, history: [1, 2, 3, 4, 5], horizon: 2 } })
    const calls = async (key: string, n: number) => {
      for (let i = 0; i < n; i++) {
        const answer = await forecast(key)
        expect(answer.status, answer.text).toBe(200)
      }
    }
    const alerts = async (key: string) => (await client.ok("GET", "/billing/alerts", { key })).json.data as Array<any>
    const ofKind = async (key: string, kind: string) => (await alerts(key)).filter((a) => a.kind === kind)
    const balance = async (key: string) => (await client.ok("GET", "/credits", { key })).json.total_credits as number
    const autoReceipts = async (key: string) =>
      ((await client.ok("GET", "/billing/receipts", { key })).json.data as Array<any>).filter((r) => r.auto_reload)
    /** Waits until every call made so far is metered: the balance stops at `expected`. */
    const settledAt = (key: string, expected: number) => eventually(async () => expect(await balance(key)).toBe(expected))
    const mailsTo = (address: string) => mailbox.received.filter((m) => recipients(m).includes(address))

    it("GET /billing/alerts: none for a new account; limit 1 to 200, else 400", async () => {
      const { key } = await account()
      expect((await client.ok("GET", "/billing/alerts", { key })).json).toEqual({ data: [] })
      expect((await client.ok("GET", "/billing/alerts?limit=200", { key })).json).toEqual({ data: [] })
      for (const limit of ["0", "201", "1.5", "abc", "-1"]) {
        const answer = await client.call("GET", `/billing/alerts?limit=${limit}`, { key })
        expect(answer.status, `limit=${limit}: ${answer.text}`).toBe(400)
        expect(answer.json.error.code).toBe("invalid_request")
      }
    })

    it("GET/POST /billing/auto-reload: off at first; enabling needs a saved card; the body's bounds; GET /billing shows it", async () => {
      const { key, id } = await account()
      const off = { enabled: false, threshold_credits: 0, amount_usd: 0, card: null, last_error: null }
      expect((await client.ok("GET", "/billing/auto-reload", { key })).json).toEqual(off)
      const noCard = await client.call("POST", "/billing/auto-reload", { key, body: { enabled: true, threshold_credits: 100, amount_usd: 10 } })
      expect(noCard.status, noCard.text).toBe(400)
      expect(noCard.json.error.message).toContain("card")
      for (const body of [
        { enabled: false, threshold_credits: 100, amount_usd: 4 },
        { enabled: false, threshold_credits: 100, amount_usd: 5001 },
        { enabled: false, threshold_credits: 100.0000001, amount_usd: 10 },
        { enabled: false, threshold_credits: -1, amount_usd: 10 },
        { enabled: "yes", threshold_credits: 100, amount_usd: 10 }
      ]) {
        const answer = await client.call("POST", "/billing/auto-reload", { key, body })
        expect(answer.status, `${JSON.stringify(body)}: ${answer.text}`).toBe(400)
      }
      expect((await client.ok("GET", "/billing/auto-reload", { key })).json).toEqual(off)
      const declined = await platform.saveCard(id, card("4000000000000002"))
      expect(declined).toMatchObject({ _tag: "Declined", reason: "card_declined" })
      const saved = await platform.saveCard(id, card("4242424242424242"))
      expect(saved).toMatchObject({ _tag: "Saved", auto_reload: { card: `Visa •••• 4242, expires 12/${expiry}` } })
      const on = { enabled: true, threshold_credits: 100.5, amount_usd: 10, card: `Visa •••• 4242, expires 12/${expiry}`, last_error: null }
      expect((await client.ok("POST", "/billing/auto-reload", { key, body: { enabled: true, threshold_credits: 100.5, amount_usd: 10 } })).json).toEqual(on)
      expect((await client.ok("GET", "/billing/auto-reload", { key })).json).toEqual(on)
      expect((await client.ok("GET", "/billing", { key })).json.auto_reload).toEqual(on)
      // Reading needs read, changing needs manage.
      const reader = (await client.ok("POST", "/keys", { key, body: { name: "reader", permissions: ["read"] } })).json.secret
      expect((await client.ok("GET", "/billing/auto-reload", { key: reader })).json).toEqual(on)
      expect((await client.ok("GET", "/billing/alerts", { key: reader })).json).toEqual({ data: [] })
      const refused = await client.call("POST", "/billing/auto-reload", { key: reader, body: { enabled: false, threshold_credits: 0, amount_usd: 5 } })
      expect(refused.status, refused.text).toBe(403)
    })

    it("priced calls passing alert points raise org_spend once per point; the limit's refusal once; each mailed", async () => {
      const { key, email } = await account()
      await client.ok("POST", "/billing/limits", { key, body: { monthly_limit_credits: 10, alert_points: [50, 90], alert_email: true } })
      await calls(key, 4)
      await settledAt(key, 4996)
      expect(await ofKind(key, "org_spend")).toEqual([])
      await calls(key, 1)
      const fifty = await eventually(async () => {
        const found = await ofKind(key, "org_spend")
        expect(found.map((a) => a.point)).toEqual([50])
        return found[0]
      })
      expect(fifty).toEqual({
        id: expect.any(String), kind: "org_spend", target: "account", period: new Date().toISOString().slice(0, 7), point: 50,
        message: expect.stringContaining("50%"), seen: false, created_at: expect.any(String)
      })
      await calls(key, 5)
      await eventually(async () => expect((await ofKind(key, "org_spend")).map((a) => a.point)).toEqual([90, 50]))
      for (let i = 0; i < 3; i++) {
        const refused = await forecast(key)
        expect(refused.status, refused.text).toBe(402)
        expect(refused.json.error.code).toBe("monthly_limit_reached")
      }
      await eventually(async () => expect(await ofKind(key, "monthly_limit_reached")).toHaveLength(1))
      await settledAt(key, 4990)
      expect((await alerts(key)).map((a) => a.kind).sort()).toEqual(["monthly_limit_reached", "org_spend", "org_spend"])
      expect((await alerts(key)).every((a) => a.seen === false)).toBe(true)
      await eventually(async () => expect(mailsTo(email).map((m) => m.subject).sort()).toEqual([
        "Model Platform: Monthly limit reached", "Model Platform: Spend alert", "Model Platform: Spend alert"
      ]))
      expect(mailsTo(email).map((m) => m.text).join("\n")).toContain("passed 90%")
    })

    it("a key's limit: its first refusal raises key_monthly_limit_reached for that key once; no mail without alert_email", async () => {
      const { key, email } = await account()
      const second = (await client.ok("POST", "/keys", { key, body: { name: "capped", permissions: ["inference", "read"] } })).json
      await client.ok("POST", `/billing/keys/${second.id}/limit`, { key, body: { monthly_limit_credits: 2 } })
      await calls(second.secret, 2)
      for (let i = 0; i < 2; i++) expect((await forecast(second.secret)).json.error.code).toBe("key_monthly_limit_reached")
      const found = await eventually(async () => {
        const raised = await ofKind(key, "key_monthly_limit_reached")
        expect(raised).toHaveLength(1)
        return raised[0]
      })
      expect(found).toMatchObject({ target: second.id, point: 0, seen: false })
      await calls(key, 1)
      expect(mailsTo(email)).toEqual([])
    })

    it("automatic top-up: crossing the threshold charges once, with a paid order, a receipt (auto_reload) and an alert", async () => {
      const { key, id, email } = await account()
      expect((await platform.saveCard(id, card("4242424242424242")))._tag).toBe("Saved")
      await client.ok("POST", "/billing/limits", { key, body: { alert_email: true } })
      await client.ok("POST", "/billing/auto-reload", { key, body: { enabled: true, threshold_credits: 4997, amount_usd: 5 } })
      await calls(key, 3)
      await settledAt(key, 4997)
      expect(await autoReceipts(key)).toEqual([])
      await calls(key, 1)
      const [receipt] = await eventually(async () => {
        const found = await autoReceipts(key)
        expect(found).toHaveLength(1)
        return found
      })
      expect(receipt).toMatchObject({ kind: "credits", status: "paid", credits: 5000, auto_reload: true, paid_with: "card", amount: { value: 5, currency: "USD" } })
      await settledAt(key, 9996)
      const paid = await eventually(async () => {
        const found = await ofKind(key, "auto_reload_paid")
        expect(found).toHaveLength(1)
        return found[0]
      })
      const order = (await client.ok("GET", `/orders/${paid.target}`, { key })).json
      expect(order).toMatchObject({ status: "paid", amount_usd: 5, type: "credits" })
      await calls(key, 5)
      await settledAt(key, 9991)
      expect(await autoReceipts(key)).toHaveLength(1)
      expect((await client.ok("GET", "/billing/auto-reload", { key })).json.last_error).toBe(null)
      await eventually(async () => expect(mailsTo(email).map((m) => m.subject)).toContain("Model Platform: Automatic top-up paid"))
      expect(await ofKind(key, "low_balance")).toEqual([])
    })

    it("the 0341 card saves but its charge fails once: last_error, an alert, no retry until the settings change", async () => {
      const { key, id } = await account()
      expect(await platform.saveCard(id, card("4000 0000 0000 0341"))).toMatchObject({ _tag: "Saved" })
      const settings = { enabled: true, threshold_credits: 4999.5, amount_usd: 5 }
      await client.ok("POST", "/billing/auto-reload", { key, body: settings })
      await calls(key, 1)
      const failed = await eventually(async () => {
        const found = await ofKind(key, "auto_reload_failed")
        expect(found).toHaveLength(1)
        return found[0]
      })
      expect(failed.message).toContain("declined")
      const view = (await client.ok("GET", "/billing/auto-reload", { key })).json
      expect(view.last_error).toContain("card_declined")
      await calls(key, 3)
      await settledAt(key, 4996)
      expect(await ofKind(key, "auto_reload_failed")).toHaveLength(1)
      expect(await autoReceipts(key)).toEqual([])
      expect((await client.ok("GET", "/orders", { key })).json.data.filter((o: any) => o.id === failed.target)).toEqual([])
      // Changing the settings lifts the wait: the next settlement below the threshold tries again, once.
      expect((await client.ok("POST", "/billing/auto-reload", { key, body: settings })).json.last_error).toBe(null)
      await calls(key, 2)
      await eventually(async () => expect(await ofKind(key, "auto_reload_failed")).toHaveLength(2))
      await settledAt(key, 4994)
      expect(await ofKind(key, "auto_reload_failed")).toHaveLength(2)
    })

    it("with top-ups off, a threshold is a low-balance level: crossing it raises low_balance once", async () => {
      const { key } = await account()
      await client.ok("POST", "/billing/auto-reload", { key, body: { enabled: false, threshold_credits: 4998, amount_usd: 5 } })
      await calls(key, 2)
      await settledAt(key, 4998)
      expect(await ofKind(key, "low_balance")).toEqual([])
      await calls(key, 3)
      await eventually(async () => expect(await ofKind(key, "low_balance")).toHaveLength(1))
      await settledAt(key, 4995)
      const [low] = await ofKind(key, "low_balance")
      expect(low).toMatchObject({ target: "account", point: 0, message: expect.stringContaining("Automatic top-ups are off") })
      expect(await autoReceipts(key)).toEqual([])
    })
  })
