/**
 * The operator API on every shell (docs/operations.md "The operator console"): only an operator
 * key opens it; an operator finds an account by email, id, key prefix or leaked secret, reads it,
 * credits it with a reason (once per reference, shown in the account's activity and statement),
 * revokes any of its keys (refused at once), sees the machines, and every action is in the audit
 * log with who, what, the reason, before and after. Bad input changes nothing.
 *
 * A shell passes a `start` that serves the platform with `OPERATOR` (below) in its operator keys.
 */
import { newOperatorKey, type OperatorKey } from "@model-platform/core/operator"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { ShellUnderTest } from "./HttpSuite.ts"

/** The operator the suite acts as: its key's secret, and the OPERATOR_KEYS entry a shell configures. */
export const OPERATOR = Effect.runSync(Effect.map(newOperatorKey("ada"), ({ secret, entry }) => ({
  secret,
  key: { name: "ada", hash: entry.split(":")[1]! } satisfies OperatorKey
})))

export const operatorSuite = (shell: string, start: (keys: ReadonlyArray<OperatorKey>) => Promise<ShellUnderTest>) =>
  describe(`operator API on ${shell}`, () => {
    let platform: ShellUnderTest
    let accountKey: string
    let accountId: string
    let email: string
    beforeAll(async () => {
      platform = await start([OPERATOR.key])
      accountKey = await platform.newAccount!()
      const me = (await (await platform.fetch("/me", { headers: { authorization: `Bearer ${accountKey}` } })).json()) as { id: string; email: string }
      accountId = me.id
      email = me.email
    }, 120_000)
    afterAll(async () => {
      await platform?.close()
    })

    const admin = async (method: string, path: string, body?: unknown, secret = OPERATOR.secret) => {
      const response = await platform.fetch(`/admin/api${path}`, {
        method,
        headers: { authorization: `Bearer ${secret}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
        ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) })
      })
      return { status: response.status, json: (await response.json()) as any }
    }
    const asAccount = async (path: string) =>
      (await (await platform.fetch(path, { headers: { authorization: `Bearer ${accountKey}` } })).json()) as any
    const month = () => new Date().toISOString().slice(0, 7)
    const auditCount = async () => (await admin("GET", "/audit")).json.data.length as number

    it("only an operator key opens it: none 401, an account key 401, the owner's key 401", async () => {
      const none = await platform.fetch("/admin/api/machines")
      expect(none.status).toBe(401)
      expect(await none.json()).toEqual({ error: { code: "missing_operator_key", message: expect.any(String) } })
      for (const secret of [accountKey, platform.ownerSecret, `${OPERATOR.secret.slice(0, -1)}x`]) {
        const refused = await admin("GET", "/machines", undefined, secret)
        expect(refused.status).toBe(401)
        expect(refused.json.error.code).toBe("invalid_operator_key")
      }
    })

    it("finds an account by email, id, key prefix and whole secret; nothing for another", async () => {
      const keys = (await asAccount("/keys")).data as Array<{ prefix: string }>
      for (const query of [`email=${encodeURIComponent(email)}`, `id=${accountId}`, `key=${keys[0]!.prefix}`, `key=${accountKey}`]) {
        const found = await admin("GET", `/accounts?${query}`)
        expect(found.status, query).toBe(200)
        expect(found.json.data.map((a: any) => a.id), query).toEqual([accountId])
      }
      expect((await admin("GET", "/accounts?email=nobody%40nowhere.test")).json.data).toEqual([])
      expect((await admin("GET", "/accounts")).status).toBe(400)
      expect((await admin("GET", `/accounts?id=${accountId}&email=x`)).status).toBe(400)
    })

    it("shows one account: balance, tier, keys (revoked ones too), plans, recent calls", async () => {
      const view = await admin("GET", `/accounts/${accountId}`)
      expect(view.status).toBe(200)
      expect(view.json).toMatchObject({
        account: { id: accountId, email },
        balance: { available_credits: expect.any(Number), held_credits: 0 },
        usage_tier: { tier: expect.any(Number), name: expect.any(String) },
        subscriptions: [],
        rentals: [],
        recent_calls: []
      })
      expect(view.json.keys.length).toBeGreaterThan(0)
      expect(JSON.stringify(view.json)).not.toContain("secret_hash")
      expect((await admin("GET", "/accounts/acct_doesnotexist")).status).toBe(404)
    })

    it("a credit adjustment with a reason: credited once per reference, in the activity and the statement, audited", async () => {
      const before = (await asAccount("/credits")).total_credits as number
      const audits = await auditCount()
      const reference = `goodwill-${crypto.randomUUID()}`
      const credited = await admin("POST", `/accounts/${accountId}/credits`, { amount_credits: 12.5, reason: "goodwill after an outage", reference })
      expect(credited.status, JSON.stringify(credited.json)).toBe(200)
      expect(credited.json).toMatchObject({ duplicate: false, ref: `adjustment_${reference}`, entry: { amount_credits: 12.5 } })
      expect((await asAccount("/credits")).total_credits).toBe(before + 12.5)
      // The same reference again (a retried form): credited once.
      const again = await admin("POST", `/accounts/${accountId}/credits`, { amount_credits: 12.5, reason: "goodwill after an outage", reference })
      expect(again.json.duplicate).toBe(true)
      expect((await asAccount("/credits")).total_credits).toBe(before + 12.5)

      const activity = (await asAccount("/credits/activity")).data as Array<{ id: string; type: string; credits: number }>
      expect(activity.filter((a) => a.id === credited.json.entry.id)).toEqual([expect.objectContaining({ type: "credit_added", credits: 12.5 })])
      const statement = await asAccount(`/billing/statements/${month()}`)
      expect(statement.added.purchased_credits).toBeGreaterThanOrEqual(12.5)

      const log = (await admin("GET", "/audit")).json.data as Array<any>
      expect(log.length).toBe(audits + 1)
      expect(log[0]).toMatchObject({
        operator: "ada",
        action: "credit_adjustment",
        target: accountId,
        reason: "goodwill after an outage",
        before: { available_credits: before },
        after: { available_credits: before + 12.5, amount_credits: 12.5, ref: `adjustment_${reference}` }
      })
    })

    it("bad input is 400 and changes nothing", async () => {
      const before = (await asAccount("/credits")).total_credits as number
      const audits = await auditCount()
      for (const body of [
        { amount_credits: 0, reason: "r" },
        { amount_credits: -5, reason: "r" },
        { amount_credits: 0.0000001, reason: "r" },
        { amount_credits: "10", reason: "r" },
        { amount_credits: 10 },
        { amount_credits: 10, reason: "" },
        { amount_credits: 10, reason: "r", reference: "has spaces" },
        "not json"
      ]) {
        const refused = await admin("POST", `/accounts/${accountId}/credits`, body)
        expect(refused.status, JSON.stringify(body)).toBe(400)
        expect(refused.json.error).toMatchObject({ code: expect.stringMatching(/^invalid_/), message: expect.any(String) })
      }
      expect((await admin("POST", "/accounts/acct_doesnotexist/credits", { amount_credits: 1, reason: "r" })).status).toBe(404)
      expect((await asAccount("/credits")).total_credits).toBe(before)
      expect(await auditCount()).toBe(audits)
      expect((await admin("GET", "/audit?month=2026-13")).status).toBe(400)
    })

    it("revokes any key: refused at once, audited; revoking it again changes nothing", async () => {
      const second = await (await platform.fetch("/keys", {
        method: "POST",
        headers: { authorization: `Bearer ${accountKey}`, "content-type": "application/json" },
        body: JSON.stringify({ name: "leaked", permissions: ["read"] })
      })).json() as { id: string; secret: string }
      expect((await platform.fetch("/me", { headers: { authorization: `Bearer ${second.secret}` } })).status).toBe(200)
      const audits = await auditCount()
      const revoked = await admin("POST", `/accounts/${accountId}/keys/${second.id}/revoke`, { reason: "leaked in a public repository" })
      expect(revoked.status).toBe(200)
      expect(revoked.json).toMatchObject({ revoked_now: true, key: { id: second.id, revoked_at: expect.any(String) } })
      expect((await platform.fetch("/me", { headers: { authorization: `Bearer ${second.secret}` } })).status).toBe(401)
      expect((await admin("POST", `/accounts/${accountId}/keys/${second.id}/revoke`, {})).json.revoked_now).toBe(false)
      const log = (await admin("GET", "/audit")).json.data as Array<any>
      expect(log.length).toBe(audits + 1)
      expect(log[0]).toMatchObject({ operator: "ada", action: "key_revoked", target: second.id, reason: "leaked in a public repository",
        before: { revoked_at: null }, after: { revoked_at: expect.any(String) } })
      expect((await admin("POST", `/accounts/${accountId}/keys/key_doesnotexist/revoke`, {})).status).toBe(404)
      // The account's other key still works.
      expect((await platform.fetch("/me", { headers: { authorization: `Bearer ${accountKey}` } })).status).toBe(200)
    })

    it("lists the machines with health, cooldown and calls in flight; an unknown call ref is 404", async () => {
      const machines = await admin("GET", "/machines")
      expect(machines.status).toBe(200)
      expect(machines.json.data.length).toBeGreaterThan(0)
      expect(machines.json.data[0]).toEqual({
        id: expect.any(String), name: expect.any(String), region: expect.any(String), health: expect.any(String),
        serving_now: expect.any(Array), cooling_down: false, calls_in_flight: 0
      })
      expect((await admin("GET", "/calls/usage_doesnotexist")).status).toBe(404)
    })
  })
