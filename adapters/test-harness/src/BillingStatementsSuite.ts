/**
 * GET /billing/statements, /billing/statements/{month} and POST /billing/invoicing through a
 * shell's HTTP surface (every shell runs it unchanged, on the fixture catalogue). Credits are
 * posted and usage records written through the shell's own stores, as orders and the gateway
 * write them, on fixed past months of a fresh account, so every figure is known: the list of
 * months, the JSON and CSV statements, a month carried without activity, the 400 naming the month,
 * the 404 of a future month, and the invoicing request shown by GET /billing.
 */
import { parseCsv } from "@model-platform/core/billing"
import type { CreditEntryType, LedgerEntry } from "@model-platform/core/ledger"
import type { UsageRecord } from "@model-platform/core/billing"
import type { Timestamp } from "@model-platform/core/kernel"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { UsageShell } from "./BillingUsageSuite.ts"

export interface StatementsShell extends UsageShell {
  /** Posts credit entries through the shell's LedgerStore (as paid orders and plans do). */
  readonly postCredits: (entries: ReadonlyArray<LedgerEntry>) => Promise<void>
}

export const billingStatementsSuite = (shell: string, start: () => Promise<StatementsShell>) =>
  describe(`billing statements on ${shell}`, () => {
    let platform: StatementsShell
    let secret = ""
    let accountId = ""

    const call = async (path: string, init: { method?: string; body?: unknown; key?: string } = {}) => {
      const response = await platform.fetch(path, {
        method: init.method ?? "GET",
        headers: {
          authorization: `Bearer ${init.key ?? secret}`,
          ...(init.body === undefined ? {} : { "content-type": "application/json" })
        },
        ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) })
      })
      const text = await response.text()
      let json: any
      try {
        json = JSON.parse(text)
      } catch {
        json = undefined
      }
      return { status: response.status, headers: response.headers, text, json }
    }
    const ok = async (path: string) => {
      const res = await call(path)
      expect(res.status, `${path}: ${res.text.slice(0, 300)}`).toBe(200)
      return res
    }

    const credit = (amount: bigint, at: string, type: CreditEntryType = "credit_added"): LedgerEntry => ({
      id: `led_${crypto.randomUUID()}`,
      account_id: accountId,
      machine_id: null,
      amount,
      type,
      ref: `order_${crypto.randomUUID()}`,
      created_at: at as Timestamp
    })
    const usage = (at: string, service: string, credits: bigint, list: bigint): UsageRecord => ({
      ref: `usage_${crypto.randomUUID()}`,
      account_id: accountId,
      at: at as Timestamp,
      key_id: "key_statements",
      agent_id: null,
      machine_id: "m-eu-a",
      service,
      model: service === "embeddings" ? "embed-small" : "chat-small",
      unit: "tokens",
      quantity: 1_000n,
      input_tokens: 600n,
      output_tokens: 400n,
      list_credits: list,
      credits,
      from_allowance: 0n,
      from_trial: 0n
    })

    beforeAll(async () => {
      platform = await start()
      secret = platform.newAccount === undefined ? platform.ownerSecret : await platform.newAccount()
      accountId = (await ok("/me")).json.id
      // 2024-11: 100 credits bought, 1.5 used on chat. 2024-12: nothing. 2025-01: 20 plan credits,
      // chat, embeddings, and a retired service (other usage); the last instant of the month counts.
      await platform.postCredits([
        credit(100_000_000n, "2024-11-03T10:00:00.000Z"),
        credit(20_000_000n, "2025-01-01T00:00:00.000Z", "plan_credit_granted"),
        credit(5_000_000n, "2025-01-31T23:59:59.999Z")
      ])
      await platform.recordUsage([
        usage("2024-11-30T23:59:59.999Z", "chat", 1_500_000n, 2_000_000n),
        usage("2025-01-02T00:00:00.000Z", "chat", 1_000_000n, 1_000_000n),
        usage("2025-01-02T00:00:01.000Z", "chat", 250_000n, 300_000n),
        usage("2025-01-15T00:00:00.000Z", "embeddings", 2_000_000n, 2_000_000n),
        usage("2025-01-20T00:00:00.000Z", "retired", 3n, 3n)
      ])
    }, 120_000)
    afterAll(async () => {
      await platform?.close()
    })

    it("lists the months with activity, newest first", async () => {
      expect((await ok("/billing/statements")).json).toEqual({ data: [{ month: "2025-01" }, { month: "2024-11" }] })
    })

    it("a statement: opening carried, credits added by kind, usage by service, other usage, closing", async () => {
      const january = (await ok("/billing/statements/2025-01")).json
      expect(january).toEqual({
        month: "2025-01",
        opening_credits: 98.5,
        added: { purchased_credits: 5, plan_credits: 20 },
        used_credits: 3.250003,
        usage_by_service: [
          { service: "embeddings", name: "Embeddings", calls: 1, list_credits: 2, credits: 2 },
          { service: "chat", name: "Chat", calls: 2, list_credits: 1.3, credits: 1.25 }
        ],
        other_usage_credits: 0.000003,
        closing_credits: 120.249997,
        payments: [],
        payments_total_usd: 0
      })
      const november = (await ok("/billing/statements/2024-11?format=json")).json
      expect(november).toMatchObject({ opening_credits: 0, closing_credits: 98.5, used_credits: 1.5 })
      // A month without activity carries the balance: opening = closing = the previous closing.
      const december = (await ok("/billing/statements/2024-12")).json
      expect(december).toMatchObject({ opening_credits: 98.5, closing_credits: 98.5, used_credits: 0, usage_by_service: [] })
    })

    it("the statement as CSV: one line per figure, exact credits", async () => {
      const res = await ok("/billing/statements/2025-01?format=csv")
      expect(res.headers.get("content-type")).toMatch(/^text\/csv/)
      expect(res.headers.get("content-disposition")).toBe("attachment; filename=\"statement-2025-01.csv\"")
      expect(parseCsv(res.text)).toEqual([
        ["line", "key", "label", "calls", "list_credits", "credits", "usd"],
        ["opening", "", "Opening balance", "", "", "98.5", ""],
        ["added", "purchased_credits", "Purchased credits", "", "", "5", ""],
        ["added", "plan_credits", "Plan credits", "", "", "20", ""],
        ["usage", "embeddings", "Embeddings", "1", "2", "2", ""],
        ["usage", "chat", "Chat", "2", "1.3", "1.25", ""],
        ["usage", "other", "Other usage", "", "", "0.000003", ""],
        ["used", "", "Used", "", "", "3.250003", ""],
        ["closing", "", "Closing balance", "", "", "120.249997", ""],
        ["payments_total", "", "Payments", "", "", "", "0.00"]
      ])
    })

    it("a malformed month or format is a 400 naming it; a future month is a 404", async () => {
      for (const month of ["2025-13", "2025-1", "january", "2025-01-01"]) {
        const res = await call(`/billing/statements/${month}`)
        expect(res.status, month).toBe(400)
        expect(res.text).toContain("month")
      }
      const format = await call("/billing/statements/2025-01?format=pdf")
      expect(format.status).toBe(400)
      expect(format.text).toContain("format")
      const next = new Date()
      next.setUTCMonth(next.getUTCMonth() + 1, 1)
      const future = await call(`/billing/statements/${next.toISOString().slice(0, 7)}`)
      expect(future.status).toBe(404)
      expect(future.json.error.code).toBe("statement_not_found")
    })

    it("POST /billing/invoicing records the request, shown by GET /billing; a bad note is a 400", async () => {
      expect((await ok("/billing")).json.invoicing).toBeNull()
      const bad = await call("/billing/invoicing", { method: "POST", body: { note: "x".repeat(2001) } })
      expect(bad.status).toBe(400)
      expect(bad.text).toContain("note")
      expect((await ok("/billing")).json.invoicing).toBeNull()
      const res = await call("/billing/invoicing", { method: "POST", body: { note: "Invoice ACME GmbH, PO 1234" } })
      expect(res.status, res.text).toBe(200)
      expect(res.json).toEqual({ invoicing: "requested" })
      expect((await ok("/billing")).json.invoicing).toBe("requested")
    })
  })
