/**
 * GET /billing/usage and /billing/usage.csv through a shell's HTTP surface (every shell runs it
 * unchanged, on the fixture catalogue). Usage records are written through the shell's own
 * UsageStore, as the gateway writes them (so its rollups are kept as in production), on fixed past
 * days of a fresh account, so every number is known: reports by each group_by with their labels
 * and order, the day ranges (from/to inclusive, month, defaults), the 400s naming the field, the
 * CSV's header, rows, quoting, formula guard, filters and headers, and accounts kept apart.
 */
import { parseCsv } from "@model-platform/core/billing"
import type { UsageRecord } from "@model-platform/core/billing"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { ShellUnderTest } from "./HttpSuite.ts"

export interface UsageShell extends ShellUnderTest {
  /** Writes usage records through the shell's UsageStore (as the gateway's metering does). */
  readonly recordUsage: (records: ReadonlyArray<UsageRecord>) => Promise<void>
}

const HEADER = "time_utc,service,model,unit,quantity,key_id,agent_id,from_allowance,from_trial,list_credits,credits,ref"

export const billingUsageSuite = (shell: string, start: () => Promise<UsageShell>) =>
  describe(`billing usage reports on ${shell}`, () => {
    let platform: UsageShell
    let secret = ""
    let accountId = ""
    const keys = { a: "", b: "" }
    let records: Array<UsageRecord> = []

    const get = async (path: string, key = secret) => {
      const response = await platform.fetch(path, { headers: { authorization: `Bearer ${key}` } })
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
      const res = await get(path)
      expect(res.status, `${path}: ${res.text.slice(0, 300)}`).toBe(200)
      return res
    }

    let n = 0
    const record = (at: string, fields: Partial<UsageRecord> = {}): UsageRecord => ({
      ref: `usage_suite_${crypto.randomUUID()}_${String(n++).padStart(3, "0")}`,
      account_id: accountId,
      at,
      key_id: keys.a,
      agent_id: null,
      machine_id: "m-eu-a",
      service: "chat",
      model: "chat-small",
      unit: "tokens",
      quantity: 1_000n,
      input_tokens: 600n,
      output_tokens: 400n,
      list_credits: 1_500_000n,
      credits: 1_000_000n,
      from_allowance: 500_000n,
      from_trial: 0n,
      ...fields
    })

    beforeAll(async () => {
      platform = await start()
      secret = platform.newAccount === undefined ? platform.ownerSecret : await platform.newAccount()
      accountId = (await ok("/me")).json.id
      const create = async (name: string) => {
        const response = await platform.fetch("/keys", {
          method: "POST",
          headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
          body: JSON.stringify({ name, permissions: ["read"] })
        })
        expect(response.status).toBe(200)
        return (await response.json()).id as string
      }
      keys.a = await create("ci-runner")
      keys.b = await create("=notebook")
      // 2025-03-30 .. 2025-04-01 (a month's edge), exact amounts in micro-credits
      records = [
        record("2025-03-30T23:59:59.999Z"),
        record("2025-03-31T00:00:00.000Z", { key_id: keys.b, agent_id: "agent_7", credits: 1n, list_credits: 3n }),
        record("2025-03-31T12:00:00.000Z", {
          service: "embeddings", model: "embed-small", quantity: 12_345n, list_credits: 246_900n, credits: 246_900n,
          from_allowance: 0n
        }),
        record("2025-04-01T00:00:00.000Z", { agent_id: "agent_7", credits: 2_000_000n, list_credits: 2_000_000n }),
        record("2025-04-01T08:30:00.250Z", { key_id: keys.b, agent_id: "x,\"y\"", from_trial: 250_000n })
      ]
      await platform.recordUsage(records)
    }, 120_000)
    afterAll(async () => {
      await platform?.close()
    })

    const row = (key: string, label: string, calls: number, list: number, credits: number) => ({
      key, label, calls, list_credits: list, credits
    })

    describe("GET /billing/usage", () => {
      it("by day (the default): one row per UTC day with usage, in order, exact credits", async () => {
        const res = await ok("/billing/usage?from=2025-03-01&to=2025-04-30")
        expect(res.json).toEqual({
          from: "2025-03-01",
          to: "2025-04-30",
          group_by: "day",
          data: [
            row("2025-03-30", "2025-03-30", 1, 1.5, 1),
            row("2025-03-31", "2025-03-31", 2, 0.246903, 0.246901),
            row("2025-04-01", "2025-04-01", 2, 3.5, 3)
          ]
        })
      })
      it("by service, model, key and agent: labels, most charged first", async () => {
        const range = "from=2025-03-30&to=2025-04-01"
        const by = async (groupBy: string) => (await ok(`/billing/usage?${range}&group_by=${groupBy}`)).json
        expect(await by("service")).toEqual({
          from: "2025-03-30",
          to: "2025-04-01",
          group_by: "service",
          data: [row("chat", "Chat", 4, 5.000003, 4.000001), row("embeddings", "Embeddings", 1, 0.2469, 0.2469)]
        })
        expect((await by("model")).data).toEqual([
          row("chat-small", "chat-small", 4, 5.000003, 4.000001),
          row("embed-small", "embed-small", 1, 0.2469, 0.2469)
        ])
        expect((await by("key")).data).toEqual([
          row(keys.a, "ci-runner", 3, 3.7469, 3.2469),
          row(keys.b, "=notebook", 2, 1.500003, 1.000001)
        ])
        expect((await by("agent")).data).toEqual([
          row("agent_7", "agent_7", 2, 2.000003, 2.000001),
          row("", "no agent", 2, 1.7469, 1.2469),
          row("x,\"y\"", "x,\"y\"", 1, 1.5, 1)
        ])
      })
      it("to is included, from alone runs to today, month is that calendar month, to alone starts at its month's first day", async () => {
        expect((await ok("/billing/usage?from=2025-03-31&to=2025-03-31")).json.data).toEqual([
          row("2025-03-31", "2025-03-31", 2, 0.246903, 0.246901)
        ])
        const march = (await ok("/billing/usage?month=2025-03")).json
        expect([march.from, march.to, march.data.map((d: any) => d.key)]).toEqual(["2025-03-01", "2025-03-31", ["2025-03-30", "2025-03-31"]])
        const april = (await ok("/billing/usage?to=2025-04-15")).json
        expect([april.from, april.to, april.data.map((d: any) => d.key)]).toEqual(["2025-04-01", "2025-04-15", ["2025-04-01"]])
        expect((await ok("/billing/usage?month=2024-02")).json).toMatchObject({ from: "2024-02-01", to: "2024-02-29", data: [] })
      })
      it("defaults: from the first day of this month (UTC) to today, counting a call made now", async () => {
        const now = new Date().toISOString()
        const today = now.slice(0, 10)
        await platform.recordUsage([record(now, { model: "chat-now", credits: 7n, list_credits: 7n })])
        const res = (await ok("/billing/usage?group_by=model")).json
        expect([res.from, res.to]).toEqual([`${today.slice(0, 7)}-01`, today])
        expect(res.data).toEqual([row("chat-now", "chat-now", 1, 0.000007, 0.000007)])
      })
      it("another account sees none of it", async () => {
        if (platform.newAccount === undefined) return
        const other = await platform.newAccount()
        const res = await get("/billing/usage?from=2025-03-01&to=2025-04-30&group_by=key", other)
        expect(res.status).toBe(200)
        expect(res.json.data).toEqual([])
        const csv = await get("/billing/usage.csv?from=2025-03-01&to=2025-04-30", other)
        expect(csv.text).toBe(`${HEADER}\r\n`)
      })
      const refusals: ReadonlyArray<readonly [string, string]> = [
        ["from=2025-02-30", "from"],
        ["from=2025-3-01", "from"],
        ["to=yesterday", "to"],
        ["from=2025-04-02&to=2025-04-01", "from"],
        ["group_by=week", "group_by"],
        ["month=2025-13", "month"],
        ["month=2025-03&from=2025-03-01", "month"],
        ["month=2025-03&to=2025-03-31", "month"],
        ["from=2024-01-01&to=2025-01-01", "to"]
      ]
      for (const [query, field] of refusals) {
        it(`?${query} -> 400 invalid_request naming "${field}"`, async () => {
          for (const path of ["/billing/usage", "/billing/usage.csv"]) {
            const res = await get(`${path}?${query}`)
            expect(res.status, `${path}: ${res.text}`).toBe(400)
            expect(res.json).toEqual({ error: { code: "invalid_request", message: expect.any(String) } })
            expect(res.json.error.message).toContain(`"${field}"`)
          }
        })
      }
      it("366 days is the longest range (a leap year)", async () => {
        expect((await get("/billing/usage?from=2024-01-01&to=2024-12-31")).status).toBe(200)
      })
    })

    describe("GET /billing/usage.csv", () => {
      const csvOf = async (query: string) => {
        const res = await ok(`/billing/usage.csv?${query}`)
        expect(res.headers.get("content-type")).toBe("text/csv; charset=utf-8")
        return res
      }
      const expectedLine = (r: UsageRecord) => [
        r.at, r.service, r.model, r.unit, String(r.quantity), r.key_id, r.agent_id ?? "",
        ...[r.from_allowance, r.from_trial, r.list_credits, r.credits].map((m) => String(Number(m) / 1e6)),
        r.ref
      ]

      it("every record, oldest first, under exactly the spec's header, as an attachment", async () => {
        const res = await csvOf("from=2025-03-30&to=2025-04-01")
        expect(res.headers.get("content-disposition")).toBe("attachment; filename=\"usage-2025-03-30-2025-04-01.csv\"")
        expect(res.text.startsWith(`${HEADER}\r\n`)).toBe(true)
        expect(res.text.endsWith("\r\n")).toBe(true)
        const rows = parseCsv(res.text)
        expect(rows[0]).toEqual(HEADER.split(","))
        expect(rows.slice(1)).toEqual(records.map(expectedLine))
        // RFC 4180 on the wire: the agent id with a comma and quotes is quoted, its quotes doubled
        expect(res.text).toContain(`,"x,""y""",`)
        expect(res.text).toContain("\r\n2025-03-30T23:59:59.999Z,chat,chat-small,tokens,1000,")
      })
      it("key and service filters, alone and together", async () => {
        const range = "from=2025-03-30&to=2025-04-01"
        const refsOf = async (query: string) => parseCsv((await csvOf(`${range}&${query}`)).text).slice(1).map((r) => r.at(-1))
        expect(await refsOf(`key=${keys.b}`)).toEqual([records[1]!.ref, records[4]!.ref])
        expect(await refsOf("service=embeddings")).toEqual([records[2]!.ref])
        expect(await refsOf(`key=${keys.b}&service=embeddings`)).toEqual([])
        expect(await refsOf("key=key_unknown")).toEqual([])
      })
      it("with group_by: one row per group, labels guarded against formula injection", async () => {
        const res = await csvOf("from=2025-03-30&to=2025-04-01&group_by=key")
        expect(res.headers.get("content-disposition")).toBe("attachment; filename=\"usage-by-key-2025-03-30-2025-04-01.csv\"")
        expect(res.text).toBe(
          "key,label,calls,list_credits,credits\r\n" +
            `${keys.a},ci-runner,3,3.7469,3.2469\r\n` +
            `${keys.b},'=notebook,2,1.500003,1.000001\r\n`
        )
        const byService = await csvOf("from=2025-03-30&to=2025-04-01&group_by=day&service=chat")
        expect(parseCsv(byService.text)).toEqual([
          ["key", "label", "calls", "list_credits", "credits"],
          ["2025-03-30", "2025-03-30", "1", "1.5", "1"],
          ["2025-03-31", "2025-03-31", "1", "0.000003", "0.000001"],
          ["2025-04-01", "2025-04-01", "2", "3.5", "3"]
        ])
      })
      it("a range without usage is the header alone", async () => {
        expect((await csvOf("month=2024-06")).text).toBe(`${HEADER}\r\n`)
      })
    })
  })
