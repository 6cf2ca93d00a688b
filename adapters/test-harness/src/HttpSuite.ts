/**
 * The HTTP test suite every shell runs unchanged (Node server, Lambda handler): happy, error and
 * security cases for every endpoint, in the shared-suite style of Unkey. A shell passes a `start`
 * that serves the platform on the fixture catalogue and returns a fetch to it and the owner's key.
 * A test that only one shell passes is a bug in that shell.
 */
import type { AccountStore, ApiKeys } from "@model-platform/core/keys"
import type { AgentStore } from "@model-platform/core/agents"
import type { PlanStore } from "@model-platform/core/plans"
import type { Effect } from "effect"
import type { DocumentKind, VersionedRecord } from "@model-platform/core/kernel"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { euCPlans } from "./Fixtures.ts"

export interface ShellUnderTest {
  /** Sends a request to the platform; `path` starts with "/". */
  readonly fetch: (path: string, init?: RequestInit) => Promise<Response>
  /** The owner key printed at first start: holds every permission. */
  readonly ownerSecret: string
  /** A key (every permission) of a new account beside the owner's; tests needing two skip without it. */
  readonly newAccount?: () => Promise<string>
  /**
   * Runs an effect on the shell's own stores, as another process of the same platform would: for
   * suites that need records no endpoint makes directly (an agent in a given state, a plan that
   * ended). Suites needing it say so when it is missing.
   */
  readonly seed?: <A, E>(effect: Effect.Effect<A, E, SeedServices>) => Promise<A>
  readonly close: () => Promise<void>
}

/** What a `seed` effect may use: keys, accounts, plans and rentals, agents. */
export type SeedServices = ApiKeys | AccountStore | PlanStore | AgentStore

/** A shell whose blob store a test can look into (docs/datasets.md: what a deletion leaves). */
export interface BlobLister {
  /** The keys of the shell's blob store under `prefix`. */
  readonly blobs: (prefix: string) => Promise<ReadonlyArray<string>>
  /** The bytes of the blob at `key`, if there is one. */
  readonly blob: (key: string) => Promise<Uint8Array | undefined>
}

/** A shell whose document store a test can read, as another process would (docs/fieldwork.md: what a withdrawal keeps). */
export interface DocumentReader {
  readonly document: <R extends VersionedRecord>(kind: DocumentKind<R>, id: string) => Promise<R | undefined>
}

const SECRET_SHAPE = /^mpk_[A-Za-z0-9_-]{43}$/
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

/** Stripe's test cards, as the test processor knows them (docs/payments.md). */
const APPROVED_CARD = "4242 4242 4242 4242"
const DECLINED_CARD = "4000 0000 0000 0002"
const EXPIRY = `12/${String((new Date().getUTCFullYear() + 5) % 100).padStart(2, "0")}`

export const platformHttpSuite = (shell: string, start: () => Promise<ShellUnderTest>) =>
  describe(`platform HTTP API on ${shell}`, () => {
    let platform: ShellUnderTest
    beforeAll(async () => {
      platform = await start()
    })
    afterAll(async () => {
      await platform?.close()
    })

    const call = async (method: string, path: string, options: { key?: string; body?: unknown; headers?: Record<string, string> } = {}) => {
      const headers: Record<string, string> = { ...options.headers }
      if (options.key !== undefined) headers.authorization = `Bearer ${options.key}`
      if (options.body !== undefined) headers["content-type"] ??= "application/json"
      const response = await platform.fetch(path, {
        method,
        headers,
        ...(options.body === undefined ? {} : { body: typeof options.body === "string" ? options.body : JSON.stringify(options.body) })
      })
      const text = await response.text()
      expect(text.length, `${method} ${path} answered ${response.status} with an empty body`).toBeGreaterThan(0)
      return { status: response.status, headers: response.headers, json: JSON.parse(text) as any, text }
    }
    const owner = () => platform.ownerSecret
    const createKey = async (body: Record<string, unknown>, key = owner()) => {
      const res = await call("POST", "/keys", { key, body })
      expect(res.status, res.text).toBe(200)
      return res.json as { id: string; secret: string; prefix: string; permissions: Array<string> }
    }
    const expectPlatformError = (res: { json: any }, code: string) => {
      expect(res.json).toMatchObject({ error: { code, message: expect.any(String) } })
      expect(res.json.error.message.length).toBeGreaterThan(0)
    }

    // Authentication and permissions of every endpoint: PermissionMatrix.ts, run beside this suite.

    describe("catalogue (public)", () => {
      it("GET /models lists every model with pricing, availability and machines", async () => {
        const res = await call("GET", "/models")
        expect(res.status).toBe(200)
        const byId = Object.fromEntries(res.json.data.map((m: any) => [m.id, m]))
        expect(Object.keys(byId).sort()).toEqual(["chat-small", "embed-small", "orphan"])
        expect(byId["chat-small"]).toEqual({
          id: "chat-small", name: "Chat Small", family: "test", description: "A small chat model.", modality: "text",
          context_length: 8192,
          pricing: { input_credits_per_mtok: 0.5, output_credits_per_mtok: 1.5, credits_per_request: 0 },
          available: true,
          machines: ["m-eu-a", "m-us-b", "m-eu-c"]
        })
        expect(byId["orphan"].available).toBe(false)
        expect(byId["orphan"].machines).toEqual([])
        expect(byId["chat-small"].routes).toBeUndefined()
      })
      it("GET /models/{id} has the model's limits (docs/api-decisions.md \"Catalogue\")", async () => {
        expect((await call("GET", "/models/chat-small")).json.limits).toEqual({})
        expect((await call("GET", "/models/embed-small")).json.limits).toEqual({ dimensions: [256, 128], max_inputs: 256 })
      })
      it("GET /models/{id} has routes, healthy and higher score first", async () => {
        const res = await call("GET", "/models/chat-small")
        expect(res.status).toBe(200)
        expect(res.json.routes).toEqual([
          { machine_id: "m-eu-a", health: "online", region: "eu-west", score: 0.9 },
          { machine_id: "m-us-b", health: "online", region: "us-east", score: 0.9 },
          { machine_id: "m-eu-c", health: "offline", region: "eu-west", score: 1 }
        ])
      })
      it("GET /models/{id} of an unknown model -> 404 model_not_found", async () => {
        const res = await call("GET", "/models/nope")
        expect(res.status).toBe(404)
        expectPlatformError(res, "model_not_found")
      })
      it("GET /route orders like an unscoped call; region only breaks ties", async () => {
        const plain = await call("GET", "/route?model=chat-small")
        expect(plain.status).toBe(200)
        expect(plain.json.model).toBe("chat-small")
        expect(plain.json.routes.map((r: any) => r.machine_id)).toEqual(["m-eu-a", "m-us-b", "m-eu-c"])
        const us = await call("GET", "/route?model=chat-small&region=us-east")
        expect(us.json.routes.map((r: any) => r.machine_id)).toEqual(["m-us-b", "m-eu-a", "m-eu-c"])
        // eu-west is preferred, but the offline machine there still comes last.
        const eu = await call("GET", "/route?model=chat-small&region=eu-west")
        expect(eu.json.routes.map((r: any) => r.machine_id)).toEqual(["m-eu-a", "m-us-b", "m-eu-c"])
      })
      it("GET /route without model -> 400 naming the field", async () => {
        const res = await call("GET", "/route")
        expect(res.status).toBe(400)
        expectPlatformError(res, "invalid_request")
        expect(res.json.error.message).toContain("model")
      })
      it("GET /route for an unknown model -> 404", async () => {
        const res = await call("GET", "/route?model=nope")
        expect(res.status).toBe(404)
        expectPlatformError(res, "model_not_found")
      })
      it("GET /machines lists every machine with its full shape", async () => {
        const res = await call("GET", "/machines")
        expect(res.status).toBe(200)
        expect(res.json.data.map((m: any) => m.id)).toEqual(["m-eu-a", "m-us-b", "m-eu-c", "m-idle"])
        expect(res.json.data[0]).toEqual({
          id: "m-eu-a", name: "EU A", region: "eu-west",
          operator: { id: "op-north", name: "North Compute" },
          health: "online",
          hardware: { gpus: [{ model: "L40S", count: 2, vram_gb: 48 }], cpu_cores: 32, memory_gb: 256, storage_gb: 2000 },
          services: {
            serverless: { models: ["chat-small", "embed-small"], serving_now: ["chat-small", "embed-small"] },
            rent: null,
            subscribe: null
          },
          network: { status: "registered", reachability: "public" }
        })
      })
      const filters: ReadonlyArray<[string, ReadonlyArray<string>]> = [
        ["service=serverless", ["m-eu-a", "m-us-b", "m-eu-c"]],
        ["service=rent", ["m-us-b", "m-idle"]],
        ["service=subscribe", ["m-eu-c"]],
        ["region=eu-west", ["m-eu-a", "m-eu-c"]],
        ["gpu=true", ["m-eu-a", "m-us-b"]],
        ["gpu=false", ["m-eu-c", "m-idle"]],
        ["operator=op-south", ["m-eu-c", "m-idle"]],
        ["model=embed-small", ["m-eu-a"]],
        ["model=chat-small&region=eu-west&gpu=true", ["m-eu-a"]],
        ["region=nowhere", []]
      ]
      for (const [query, expected] of filters) {
        it(`GET /machines?${query}`, async () => {
          const res = await call("GET", `/machines?${query}`)
          expect(res.status).toBe(200)
          expect(res.json.data.map((m: any) => m.id)).toEqual(expected)
        })
      }
      it("GET /machines with a bad filter value -> 400 naming it", async () => {
        for (const query of ["gpu=maybe", "service=lease"]) {
          const res = await call("GET", `/machines?${query}`)
          expect(res.status).toBe(400)
          expect(res.json.error.message).toContain(query.split("=")[0])
        }
      })
      it("GET /machines/{id} shows health and what it is serving now", async () => {
        const res = await call("GET", "/machines/m-eu-c")
        expect(res.status).toBe(200)
        expect(res.json.health).toBe("offline")
        expect(res.json.services.serverless).toEqual({ models: ["chat-small"], serving_now: [] })
        expect(res.json.services.subscribe).toEqual(euCPlans)
      })
      it("GET /machines/{id} of an unknown machine -> 404 machine_not_found", async () => {
        const res = await call("GET", "/machines/nope")
        expect(res.status).toBe(404)
        expectPlatformError(res, "machine_not_found")
      })
      it("GET /operators lists operators with description and machines", async () => {
        const res = await call("GET", "/operators")
        expect(res.status).toBe(200)
        expect(res.json.data[1]).toEqual({
          id: "op-south", name: "South Cloud", website: "https://south.example", featured: false, certifications: [],
          description: "CPUs in the south.",
          machines: [{ id: "m-eu-c", name: "EU C", health: "offline" }, { id: "m-idle", name: "Idle", health: "online" }]
        })
      })
      it("GET /operators/{id} and an unknown id", async () => {
        const res = await call("GET", "/operators/op-north")
        expect(res.status).toBe(200)
        expect(res.json).toEqual({
          id: "op-north", name: "North Compute", website: "https://north.example", featured: true, certifications: ["iso27001"]
        })
        const missing = await call("GET", "/operators/nope")
        expect(missing.status).toBe(404)
        expectPlatformError(missing, "operator_not_found")
      })
      it("GET /packages lists packages and offers", async () => {
        const res = await call("GET", "/packages")
        expect(res.status).toBe(200)
        expect(res.json.data.map((p: any) => [p.id, p.kind, p.amount_usd, p.credits, p.machine_id])).toEqual([
          ["starter", "package", 10, 10000, null],
          ["eu-a-offer", "offer", 20, 25000, "m-eu-a"]
        ])
      })
      it("GET /payment-methods says which methods are set up", async () => {
        const res = await call("GET", "/payment-methods")
        expect(res.status).toBe(200)
        expect(res.json).toEqual({
          card: { available: true, processor: "test" },
          stablecoin: { available: true, processor: "simulated", options: [{ chain: "base", token: "USDC" }] }
        })
      })
      it("GET /billing/prices has services with allowances and every model's prices", async () => {
        const res = await call("GET", "/billing/prices")
        expect(res.status).toBe(200)
        expect(res.json.unit).toBe("credit")
        expect(res.json.services[0]).toEqual({
          service: "chat", group: "inference", name: "Chat", unit: "mtok", unit_label: "million tokens",
          credits_per_unit: 1, allowances: { free: 0, builder: 5000, scale: 30000, trial: 0 }
        })
        expect(res.json.models).toContainEqual({
          model: "embed-small", service: "embeddings", input_credits_per_mtok: 0.02, output_credits_per_mtok: 0, credits_per_request: 0
        })
      })
      it("GET /billing/tiers lists tiers by purchased credits", async () => {
        const res = await call("GET", "/billing/tiers")
        expect(res.status).toBe(200)
        expect(res.json.data.map((t: any) => [t.tier, t.purchased_credits, t.rpm, t.monthly_limit_credits])).toEqual([
          [0, 0, 60, 1000], [1, 10000, 300, 50000], [2, 100000, 1200, 500000]
        ])
      })
      it("catalogue endpoints ignore a bad key (they are public)", async () => {
        const res = await call("GET", "/models", { key: "garbage" })
        expect(res.status).toBe(200)
      })
    })

    describe("account and keys", () => {
      it("GET /me shows the account and the calling key, never its secret", async () => {
        const res = await call("GET", "/me", { key: owner() })
        expect(res.status).toBe(200)
        expect(res.json.email).toEqual(expect.any(String))
        expect(res.json.created_at).toMatch(ISO_MS)
        expect(res.json.key.prefix).toBe(owner().slice(0, res.json.key.prefix.length))
        expect(res.json.key.prefix.length).toBeGreaterThanOrEqual(8)
        expect(res.json.key.permissions).toContain("manage")
        expect(res.json.key.last_used_at).toMatch(ISO_MS)
        expect(res.text).not.toContain(owner())
        expect(res.json.key.secret).toBeUndefined()
      })
      it("POST /keys returns the secret once; the default permission is inference", async () => {
        const res = await call("POST", "/keys", { key: owner(), body: { name: "default" } })
        expect(res.status).toBe(200)
        expect(res.json.secret).toMatch(SECRET_SHAPE)
        expect(res.json.prefix).toBe(res.json.secret.slice(0, res.json.prefix.length))
        expect(res.json).toMatchObject({
          name: "default", permissions: ["inference"], scope: null, subscription_id: null, rental_id: null,
          last_used_at: null, revoked_at: null
        })
        expect(res.json.created_at).toMatch(ISO_MS)
        const listed = await call("GET", "/keys", { key: owner() })
        const mine = listed.json.data.find((k: any) => k.id === res.json.id)
        expect(mine).toBeDefined()
        expect(mine.secret).toBeUndefined()
        expect(listed.text).not.toContain(res.json.secret)
      })
      it("a new key works at once with exactly its permissions", async () => {
        const reader = await createKey({ name: "reader", permissions: ["read"] })
        expect((await call("GET", "/me", { key: reader.secret })).status).toBe(200)
        expect((await call("GET", "/keys", { key: reader.secret })).status).toBe(200)
        const create = await call("POST", "/keys", { key: reader.secret, body: { name: "x", permissions: ["read"] } })
        expect(create.status).toBe(403)
        expect(create.json.error.scope).toBe("manage")
      })
      it("a key can only grant permissions it holds", async () => {
        const manager = await createKey({ name: "manager", permissions: ["read", "manage"] })
        const ok = await call("POST", "/keys", { key: manager.secret, body: { name: "sub", permissions: ["read"] } })
        expect(ok.status).toBe(200)
        const refused = await call("POST", "/keys", { key: manager.secret, body: { name: "sub", permissions: ["read", "inference"] } })
        expect(refused.status).toBe(403)
        expect(refused.json.error.code).toBe("key_lacks_permission")
        expect(refused.json.error.scope).toBe("inference")
        // The default [inference] is a grant too.
        const byDefault = await call("POST", "/keys", { key: manager.secret, body: { name: "sub" } })
        expect(byDefault.status).toBe(403)
      })
      it("permissions come back deduplicated in the spec's order", async () => {
        const key = await createKey({ name: "order", permissions: ["manage", "read", "read", "inference"] })
        expect(key.permissions).toEqual(["inference", "read", "manage"])
      })
      it("an unknown permission value -> 400 naming the field", async () => {
        const res = await call("POST", "/keys", { key: owner(), body: { name: "x", permissions: ["superuser"] } })
        expect(res.status).toBe(400)
        expectPlatformError(res, "invalid_request")
        expect(res.json.error.message).toContain("permissions")
      })
      it("a missing or empty name -> 400 naming it", async () => {
        for (const body of [{}, { name: "" }, { name: 42 }]) {
          const res = await call("POST", "/keys", { key: owner(), body })
          expect(res.status).toBe(400)
          expect(res.json.error.message).toContain("name")
        }
      })
      it("machine_id pins the key to a machine; unknown machines are refused", async () => {
        const pinned = await call("POST", "/keys", { key: owner(), body: { name: "pinned", machine_id: "m-eu-a" } })
        expect(pinned.status).toBe(200)
        expect(pinned.json.scope).toEqual({ machine_id: "m-eu-a", subscription_id: null, rental_id: null })
        const unknown = await call("POST", "/keys", { key: owner(), body: { name: "pinned", machine_id: "nope" } })
        expect(unknown.status).toBe(404)
        expectPlatformError(unknown, "machine_not_found")
      })
      it("subscription and rental scopes must name one of the account's own", async () => {
        const sub = await call("POST", "/keys", { key: owner(), body: { name: "s", subscription_id: "sub_x" } })
        expect(sub.status).toBe(404)
        expectPlatformError(sub, "subscription_not_found")
        const rental = await call("POST", "/keys", { key: owner(), body: { name: "r", rental_id: "rent_x" } })
        expect(rental.status).toBe(404)
        expectPlatformError(rental, "rental_not_found")
        const both = await call("POST", "/keys", { key: owner(), body: { name: "b", machine_id: "m-eu-a", rental_id: "rent_x" } })
        expect(both.status).toBe(400)
      })
      it("a key pinned to a machine creates and revokes only keys pinned to that machine (docs/api-decisions.md)", async () => {
        const pinned = await createKey({ name: "pinned-manager", permissions: ["read", "manage"], machine_id: "m-eu-a" })
        const unpinned = await call("POST", "/keys", { key: pinned.secret, body: { name: "x", permissions: ["read"] } })
        expect(unpinned.status).toBe(403)
        expectPlatformError(unpinned, "key_scope_too_narrow")
        const other = await call("POST", "/keys", { key: pinned.secret, body: { name: "x", permissions: ["read"], machine_id: "m-us-b" } })
        expectPlatformError(other, "key_scope_too_narrow")
        const same = await call("POST", "/keys", { key: pinned.secret, body: { name: "x", permissions: ["read"], machine_id: "m-eu-a" } })
        expect(same.status).toBe(200)
        // It revokes a key of its own scope, never one that reaches further (the owner's).
        expect((await call("DELETE", `/keys/${same.json.id}`, { key: pinned.secret })).status).toBe(200)
        const ownerKey = (await call("GET", "/me", { key: owner() })).json.key.id
        const escape = await call("DELETE", `/keys/${ownerKey}`, { key: pinned.secret })
        expect(escape.status).toBe(403)
        expectPlatformError(escape, "key_scope_too_narrow")
        expect((await call("GET", "/me", { key: owner() })).status).toBe(200)
        // It orders and pays for its own machine only.
        const own = await call("POST", "/orders", { key: pinned.secret, body: { type: "credits", amount_usd: 10, machine_id: "m-eu-a" } })
        expect(own.status, own.text).toBe(200)
        expect((await call("POST", `/orders/${own.json.id}/pay`, { key: pinned.secret, body: { method: "card" } })).status).toBe(200)
        const wide = await call("POST", "/orders", { key: pinned.secret, body: { type: "credits", amount_usd: 10 } })
        expectPlatformError(wide, "key_scope_too_narrow")
        const ownersOrder = await call("POST", "/orders", { key: owner(), body: { type: "credits", amount_usd: 10 } })
        expectPlatformError(await call("POST", `/orders/${ownersOrder.json.id}/pay`, { key: pinned.secret, body: { method: "card" } }), "key_scope_too_narrow")
        // Account-wide changes need an unscoped key: its own monthly limit included.
        const raise = await call("POST", `/billing/keys/${pinned.id}/limit`, { key: pinned.secret, body: { monthly_limit_credits: null } })
        expectPlatformError(raise, "key_scope_too_narrow")
      })
      it("last_used_at is set when a key is used", async () => {
        const key = await createKey({ name: "usage", permissions: ["read"] })
        const before = await call("GET", "/keys", { key: owner() })
        expect(before.json.data.find((k: any) => k.id === key.id).last_used_at).toBeNull()
        await call("GET", "/me", { key: key.secret })
        const after = await call("GET", "/keys", { key: owner() })
        expect(after.json.data.find((k: any) => k.id === key.id).last_used_at).toMatch(ISO_MS)
      })
      it("DELETE /keys/{id} revokes once; revoked keys stay listed with revoked_at", async () => {
        const key = await createKey({ name: "revoke-me", permissions: ["read"] })
        const first = await call("DELETE", `/keys/${key.id}`, { key: owner() })
        expect(first.status).toBe(200)
        expect(first.json).toEqual({ id: key.id, revoked: true })
        const listed = await call("GET", "/keys", { key: owner() })
        const revokedAt = listed.json.data.find((k: any) => k.id === key.id).revoked_at
        expect(revokedAt).toMatch(ISO_MS)
        const again = await call("DELETE", `/keys/${key.id}`, { key: owner() })
        expect(again.status).toBe(200)
        const relisted = await call("GET", "/keys", { key: owner() })
        expect(relisted.json.data.find((k: any) => k.id === key.id).revoked_at).toBe(revokedAt)
        const use = await call("GET", "/me", { key: key.secret })
        expect(use.status).toBe(401)
      })
      it("DELETE /keys/{id} of an unknown key -> 404", async () => {
        const res = await call("DELETE", "/keys/key_nope", { key: owner() })
        expect(res.status).toBe(404)
        expectPlatformError(res, "key_not_found")
      })
    })

    describe("money: orders, card checkout, stablecoin deposits, tickets, billing", () => {
      /** A key of a new account (every permission), or the owner's when the shell cannot make one. */
      const fresh = async () => platform.newAccount === undefined ? owner() : platform.newAccount()
      const balance = async (key: string) => {
        const res = await call("GET", "/credits", { key })
        expect(res.status, res.text).toBe(200)
        return res.json as { total_credits: number; by_scope: Array<{ machine_id: string | null; credits: number }> }
      }
      const activity = async (key: string) => (await call("GET", "/credits/activity?limit=500", { key })).json.data as Array<any>
      const receipts = async (key: string) => (await call("GET", "/billing/receipts", { key })).json.data as Array<any>
      const order = async (key: string, body: Record<string, unknown>) => {
        const res = await call("POST", "/orders", { key, body })
        expect(res.status, res.text).toBe(200)
        return res.json
      }
      const payByCard = async (key: string, id: string) => {
        const res = await call("POST", `/orders/${id}/pay`, { key, body: { method: "card" } })
        expect(res.status, res.text).toBe(200)
        return res.json
      }
      const checkoutPath = (payUrl: string) => new URL(payUrl).pathname
      const submitCard = async (path: string, fields: Record<string, string>) => {
        const response = await platform.fetch(path, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams(fields).toString()
        })
        return { status: response.status, type: response.headers.get("content-type") ?? "", html: await response.text() }
      }
      const card = (number: string) => ({ card_number: number, expiry: EXPIRY, cvc: "123" })
      /** A credit order paid by card through the hosted checkout with the approved test card. */
      const buyByCard = async (key: string, body: Record<string, unknown>) => {
        const created = await order(key, body)
        const paying = await payByCard(key, created.id)
        const paid = await submitCard(checkoutPath(paying.pay_url), card(APPROVED_CARD))
        expect(paid.status, paid.html).toBe(200)
        expect(paid.html).toContain(`data-testid="paid"`)
        return created
      }
      const simulatedDeposit = async (body: Record<string, unknown>, key = owner()) =>
        call("POST", "/_simulated/deposits", { key, body })

      it("POST /quotes prices credit and package orders without a key and creates nothing", async () => {
        const credits = await call("POST", "/quotes", { body: { type: "credits", amount_usd: 25 } })
        expect(credits.status, credits.text).toBe(200)
        expect(credits.json).toEqual({
          type: "credits", amount_usd: 25, currency: "USD", details: { credits: 25000, machine_id: null, gift: false }
        })
        const pinned = await call("POST", "/quotes", { body: { type: "credits", amount_usd: 5, machine_id: "m-eu-a", gift: true } })
        expect(pinned.json.details).toEqual({ credits: 5000, machine_id: "m-eu-a", gift: true })
        const pkg = await call("POST", "/quotes", { body: { type: "package", package_id: "eu-a-offer" } })
        expect(pkg.status, pkg.text).toBe(200)
        expect(pkg.json).toEqual({
          type: "package", amount_usd: 20, currency: "USD",
          details: { credits: 25000, machine_id: "m-eu-a", package_id: "eu-a-offer", gift: false }
        })
      })

      it("POST /quotes prices rentals and plans from the machine's offer, exactly, in cents rounded up", async () => {
        const rental = await call("POST", "/quotes", {
          body: { type: "rental", machine_id: "m-us-b", cpu_cores: 4, memory_gb: 16, gpu: 1, storage_gb: 100, hours: 10 }
        })
        expect(rental.status, rental.text).toBe(200)
        // (4 x 0.02 + 16 x 0.004 + 1 x 1.1 + 100 x 0.0002) x 10 = 12.64
        expect(rental.json).toEqual({
          type: "rental", amount_usd: 12.64, currency: "USD",
          details: { credits: 0, machine_id: "m-us-b", cpu_cores: 4, memory_gb: 16, gpu: 1, storage_gb: 100, hours: 10 }
        })
        // 1 core, 1 GB, 1 hour: $0.024, charged $0.03; gpu and storage default to 0.
        const small = await call("POST", "/quotes", { body: { type: "rental", machine_id: "m-us-b", cpu_cores: 1, memory_gb: 1, hours: 1 } })
        expect(small.json.amount_usd).toBe(0.03)
        expect(small.json.details).toMatchObject({ gpu: 0, storage_gb: 0 })
        const plan = await call("POST", "/quotes", { body: { type: "subscription", machine_id: "m-eu-c", plan_id: "basic" } })
        expect(plan.status, plan.text).toBe(200)
        expect(plan.json).toEqual({
          type: "subscription", amount_usd: 9.99, currency: "USD",
          details: { credits: 0, machine_id: "m-eu-c", plan_id: "basic", period_days: 30, renew_subscription_id: null }
        })
      })

      it("rental and plan quotes and orders outside the offer -> 400 naming the field (unknown machine 404), and nothing is created", async () => {
        const rental = { type: "rental", machine_id: "m-us-b", cpu_cores: 1, memory_gb: 1, hours: 1 }
        const refused: ReadonlyArray<[string, Record<string, unknown>]> = [
          ["cpu_cores", { ...rental, cpu_cores: 33 }],
          ["memory_gb", { ...rental, memory_gb: 257 }],
          ["gpu", { ...rental, gpu: 3 }],
          ["storage_gb", { ...rental, storage_gb: 2001 }],
          ["hours", { ...rental, hours: 721 }],
          ["hours", { ...rental, hours: 0 }],
          ["cpu_cores", { ...rental, cpu_cores: 0 }],
          ["machine_id", { ...rental, machine_id: "m-eu-a" }],
          ["machine_id", { ...rental, machine_id: "m-idle" }],
          ["machine_id", { type: "subscription", machine_id: "m-us-b", plan_id: "basic" }],
          ["plan_id", { type: "subscription", machine_id: "m-eu-c", plan_id: "gold" }]
        ]
        const key = await fresh()
        for (const [field, body] of refused) {
          for (const path of ["/quotes", "/orders"]) {
            const res = await call("POST", path, { key, body })
            expect(res.status, `${path} ${JSON.stringify(body)}: ${res.text}`).toBe(400)
            expectPlatformError(res, "invalid_request")
            expect(res.json.error.message).toContain(field)
          }
        }
        const unknown = await call("POST", "/quotes", { body: { ...rental, machine_id: "nope" } })
        expect(unknown.status).toBe(404)
        expectPlatformError(unknown, "machine_not_found")
        expect((await call("GET", "/orders", { key })).json.data).toEqual([])
      })

      it("a plan bought by card is active in GET /subscriptions; cancel keeps it active to its period's end, resume undoes it", async () => {
        const key = await fresh()
        expect((await call("GET", "/subscriptions", { key })).json).toEqual({ data: [] })
        const created = await buyByCard(key, { type: "subscription", machine_id: "m-eu-c", plan_id: "basic" })
        const paid = (await call("GET", `/orders/${created.id}`, { key })).json
        expect(paid).toMatchObject({ type: "subscription", status: "paid", amount_usd: 9.99 })
        const listed = (await call("GET", "/subscriptions", { key })).json.data
        const periodEnd = new Date(Date.parse(paid.paid_at) + 30 * 24 * 3600 * 1000).toISOString()
        expect(listed).toEqual([{
          id: expect.any(String), machine_id: "m-eu-c", plan_id: "basic", status: "active", auto_renews: true,
          cancel_at_period_end: false, current_period_start: paid.paid_at, current_period_end: periodEnd, paid_with: "card",
          renewal_error: null
        }])
        const id = listed[0].id
        const cancelled = await call("POST", `/subscriptions/${id}/cancel`, { key })
        expect(cancelled.status, cancelled.text).toBe(200)
        expect(cancelled.json).toEqual({ id, status: "active", auto_renews: false, cancel_at_period_end: true })
        expect((await call("GET", "/subscriptions", { key })).json.data[0]).toMatchObject({ status: "active", auto_renews: false, cancel_at_period_end: true })
        const resumed = await call("POST", `/subscriptions/${id}/resume`, { key })
        expect(resumed.json).toEqual({ id, status: "active", auto_renews: true, cancel_at_period_end: false })
        // A plan grants no credits; its receipt is the plan's.
        expect((await balance(key)).total_credits).toBe(0)
        expect((await receipts(key)).map((r) => [r.kind, r.title])).toEqual([["subscription", expect.stringContaining("Basic plan")]])
        // Another account's plan, or an unknown one: 404, and nothing changes.
        const other = await fresh()
        for (const path of [`/subscriptions/${id}/cancel`, "/subscriptions/sub_nope/resume"]) {
          const res = await call("POST", path, { key: other })
          expect(res.status, res.text).toBe(404)
          expectPlatformError(res, "subscription_not_found")
        }
        expect((await call("GET", "/subscriptions", { key })).json.data[0].auto_renews).toBe(true)
      })

      it("keys scoped to a plan or a rental: the account's own only; the plan's models and machine only", async () => {
        const key = await fresh()
        await buyByCard(key, { type: "subscription", machine_id: "m-eu-c", plan_id: "basic" })
        await buyByCard(key, { type: "rental", machine_id: "m-us-b", cpu_cores: 1, memory_gb: 1, hours: 1 })
        const [plan] = (await call("GET", "/subscriptions", { key })).json.data
        const [rental] = (await call("GET", "/rentals", { key })).json.data
        const planKey = await call("POST", "/keys", { key, body: { name: "plan key", subscription_id: plan.id } })
        expect(planKey.status, planKey.text).toBe(200)
        expect(planKey.json).toMatchObject({ subscription_id: plan.id, rental_id: null })
        const rentalKey = await call("POST", "/keys", { key, body: { name: "rental key", rental_id: rental.id } })
        expect(rentalKey.json).toMatchObject({ subscription_id: null, rental_id: rental.id })
        // Another account cannot scope a key to them.
        const other = await fresh()
        for (const [field, id, code] of [["subscription_id", plan.id, "subscription_not_found"], ["rental_id", rental.id, "rental_not_found"]]) {
          const res = await call("POST", "/keys", { key: other, body: { name: "theirs", [field!]: id } })
          expect(res.status, res.text).toBe(404)
          expectPlatformError(res, code!)
        }
        // The plan's key: embed-small is not in "basic" (403); chat-small goes to the plan's machine only
        // (EU C, offline here: 503 naming it).
        const embed = await call("POST", "/v1/embeddings", { key: planKey.json.secret, body: { model: "embed-small", input: "x" } })
        expect(embed.status, embed.text).toBe(403)
        expect(embed.json.error.code).toBe("model_not_in_plan")
        const chat = await call("POST", "/v1/chat/completions", {
          key: planKey.json.secret, body: { model: "chat-small", messages: [{ role: "user", content: "hi" }] }
        })
        expect(chat.status, chat.text).toBe(503)
        expect(chat.json.error.message).toContain("m-eu-c")
        const elsewhere = await call("POST", "/v1/chat/completions", {
          key: planKey.json.secret, body: { model: "chat-small", machine: "m-eu-a", messages: [{ role: "user", content: "hi" }] }
        })
        expect(elsewhere.status, elsewhere.text).toBe(403)
        expect(elsewhere.json.error.code).toBe("key_not_scoped_to_machine")
        // The rental's key reaches its machine only.
        const rented = await call("POST", "/v1/chat/completions", {
          key: rentalKey.json.secret, body: { model: "chat-small", machine: "m-eu-a", messages: [{ role: "user", content: "hi" }] }
        })
        expect(rented.status, rented.text).toBe(403)
        expect(rented.json.error.code).toBe("key_not_scoped_to_machine")
      })

      it("a plan paid by stablecoin does not renew by itself and cannot be cancelled or resumed", async () => {
        const key = await fresh()
        const created = await order(key, { type: "subscription", machine_id: "m-eu-c", plan_id: "basic" })
        const paying = (await call("POST", `/orders/${created.id}/pay`, { key, body: { method: "stablecoin", chain: "base", token: "USDC" } })).json
        const sent = await simulatedDeposit({ to: paying.payment.deposit.address, amount: paying.payment.deposit.amount, chain: "base", token: "USDC" })
        expect(sent.status, sent.text).toBe(200)
        const [plan] = (await call("GET", "/subscriptions", { key })).json.data
        expect(plan).toMatchObject({ status: "active", paid_with: "stablecoin", auto_renews: false, cancel_at_period_end: false })
        for (const action of ["cancel", "resume"]) {
          const res = await call("POST", `/subscriptions/${plan.id}/${action}`, { key })
          expect(res.status, res.text).toBe(400)
          expect(res.json.error.message).toContain("card plans")
        }
      })

      it("a rental bought by card is active in GET /rentals for its hours from the payment", async () => {
        const key = await fresh()
        expect((await call("GET", "/rentals", { key })).json).toEqual({ data: [] })
        const created = await buyByCard(key, { type: "rental", machine_id: "m-us-b", cpu_cores: 4, memory_gb: 16, gpu: 1, hours: 2 })
        const paid = (await call("GET", `/orders/${created.id}`, { key })).json
        expect(paid).toMatchObject({ type: "rental", status: "paid", amount_usd: 2.49 })
        expect((await call("GET", "/rentals", { key })).json.data).toEqual([{
          id: expect.any(String), machine_id: "m-us-b", status: "active", cpu_cores: 4, memory_gb: 16, gpu: 1, storage_gb: 0,
          hours: 2, starts_at: paid.paid_at, ends_at: new Date(Date.parse(paid.paid_at) + 2 * 3600 * 1000).toISOString()
        }])
        expect((await balance(key)).total_credits).toBe(0)
        // An unpaid order makes nothing.
        const other = await fresh()
        await order(other, { type: "rental", machine_id: "m-us-b", cpu_cores: 1, memory_gb: 1, hours: 1 })
        expect((await call("GET", "/rentals", { key: other })).json.data).toEqual([])
      })

      it("bad order bodies -> 400 (unknown ids 404) in the platform shape, and nothing is created", async () => {
        const key = await fresh()
        const before = (await call("GET", "/orders?limit=200", { key })).json.data.length
        for (const amount_usd of [4, 5001, 5.5, "10"]) {
          for (const path of ["/quotes", "/orders"]) {
            const res = await call("POST", path, { key, body: { type: "credits", amount_usd } })
            expect(res.status, `${path} ${amount_usd}: ${res.text}`).toBe(400)
            expectPlatformError(res, "invalid_request")
            expect(res.json.error.message).toContain("amount_usd")
          }
        }
        for (const body of [{}, { type: "bonds" }, { type: "credits" }, { type: "package" }]) {
          const res = await call("POST", "/orders", { key, body })
          expect(res.status, res.text).toBe(400)
          expectPlatformError(res, "invalid_request")
        }
        const machine = await call("POST", "/orders", { key, body: { type: "credits", amount_usd: 10, machine_id: "nope" } })
        expect(machine.status).toBe(404)
        expectPlatformError(machine, "machine_not_found")
        const pkg = await call("POST", "/orders", { key, body: { type: "package", package_id: "nope" } })
        expect(pkg.status).toBe(404)
        expectPlatformError(pkg, "package_not_found")
        const rental = await call("POST", "/orders", { key, body: { type: "rental", machine_id: "m-us-b", cpu_cores: 1, memory_gb: 1, hours: 0 } })
        expect(rental.status).toBe(400)
        expectPlatformError(rental, "invalid_request")
        const after = (await call("GET", "/orders?limit=200", { key })).json.data.length
        expect(after).toBe(before)
        expect((await balance(key)).total_credits).toBe((await balance(key)).total_credits)
      })

      it("limit out of range -> 400 naming the accepted range", async () => {
        const key = await fresh()
        for (const limit of ["0", "501", "2.5", "x"]) {
          const res = await call("GET", `/credits/activity?limit=${limit}`, { key })
          expect(res.status, res.text).toBe(400)
          expectPlatformError(res, "invalid_request")
          expect(res.json.error.message).toContain("limit")
        }
        for (const limit of ["0", "201"]) {
          const res = await call("GET", `/orders?limit=${limit}`, { key })
          expect(res.status, res.text).toBe(400)
          expect(res.json.error.message).toContain("200")
        }
        expect((await call("GET", "/credits/activity?limit=500", { key })).status).toBe(200)
        expect((await call("GET", "/orders?limit=200", { key })).status).toBe(200)
      })

      it("a new account: zero balance, the first tier, charging open, no receipts", async () => {
        const key = await fresh()
        if (key === owner()) return
        expect(await balance(key)).toEqual({ total_credits: 0, by_scope: [{ machine_id: null, credits: 0 }] })
        expect(await activity(key)).toEqual([])
        expect(await receipts(key)).toEqual([])
        expect((await call("GET", "/tickets", { key })).json).toEqual({ data: [] })
        const billing = await call("GET", "/billing", { key })
        expect(billing.status, billing.text).toBe(200)
        expect(billing.json).toEqual({
          balance: { credits: 0, token: 0, usd: 0 },
          usage_tier: {
            tier: 0, name: "Starter", rpm: 60, monthly_limit_credits: 1000, purchased_credits: 0,
            next: { tier: 1, name: "Builder", purchased_credits: 10000, rpm: 300, monthly_limit_credits: 50000 }
          },
          month: { spent_credits: 0, limit_credits: 1000, own_limit_credits: null, alert_points: [] },
          auto_reload: { enabled: false, threshold_credits: 0, amount_usd: 0, card: null, last_error: null },
          invoicing: null,
          charging: { open: true, reason: null, starts_at: null },
          credits_per_usd: 1000
        })
      })

      it("card: declined changes nothing; approved credits once with a receipt; replaying the form changes nothing", async () => {
        const key = await fresh()
        const startBalance = (await balance(key)).total_credits
        const startActivity = (await activity(key)).length
        const startReceipts = (await receipts(key)).length

        const created = await order(key, { type: "credits", amount_usd: 25 })
        expect(created).toMatchObject({
          type: "credits", title: "25,000 credits", amount_usd: 25, currency: "USD", status: "pending",
          machine_id: null, payment: { method: null }, pay_url: "", paid_at: null
        })
        expect(created.id).toEqual(expect.any(String))
        expect(created.created_at).toMatch(ISO_MS)
        expect(created.ticket).toBeUndefined()

        const paying = await payByCard(key, created.id)
        expect(paying.payment).toEqual({ method: "card" })
        expect(paying.pay_url).toMatch(/^https?:\/\/[^/]+\/checkout\/[A-Za-z0-9_-]+$/)
        expect((await payByCard(key, created.id)).pay_url).toBe(paying.pay_url)
        const path = checkoutPath(paying.pay_url)

        const page = await platform.fetch(path)
        expect(page.status).toBe(200)
        expect(page.headers.get("content-type")).toContain("text/html")
        const form = await page.text()
        for (const id of ["card-number", "expiry", "cvc", "pay"]) expect(form).toContain(`data-testid="${id}"`)
        expect(form).toContain("$25.00")

        const invalid = await submitCard(path, { card_number: "4242", expiry: "nope", cvc: "1" })
        expect(invalid.status).toBe(400)
        expect(invalid.type).toContain("text/html")
        expect(invalid.html).toContain(`data-testid="error"`)

        const declined = await submitCard(path, card(DECLINED_CARD))
        expect(declined.status).toBe(402)
        expect(declined.html).toContain(`data-testid="declined"`)
        expect(declined.html).toContain("card_declined")
        expect(declined.html).not.toContain("4000000000000002")
        expect((await balance(key)).total_credits).toBe(startBalance)
        expect((await call("GET", `/orders/${created.id}`, { key })).json.status).toBe("pending")

        const paid = await submitCard(path, card(APPROVED_CARD))
        expect(paid.status).toBe(200)
        expect(paid.html).toContain(`data-testid="paid"`)
        expect(paid.html).toContain("Payment received")
        expect(paid.html).not.toContain("4242424242424242")

        const after = await balance(key)
        expect(after.total_credits).toBe(startBalance + 25000)
        const entries = await activity(key)
        expect(entries.length).toBe(startActivity + 1)
        expect(entries[0]).toMatchObject({ type: "credit_added", credits: 25000, machine_id: null })
        expect(entries[0].at).toMatch(ISO_MS)
        const got = await call("GET", `/orders/${created.id}`, { key })
        expect(got.json).toMatchObject({ id: created.id, status: "paid", ticket: null, payment: { method: "card" } })
        expect(got.json.paid_at).toMatch(ISO_MS)
        const listed = await receipts(key)
        expect(listed.length).toBe(startReceipts + 1)
        expect(listed[0]).toMatchObject({
          kind: "credits", title: "25,000 credits", status: "paid", credits: 25000, paid_with: "card", auto_reload: false,
          amount: { value: 25, currency: "USD", text: "$25.00" }
        })
        const one = await call("GET", `/billing/receipts/${listed[0].id}`, { key })
        expect(one.status).toBe(200)
        expect(one.json).toEqual(listed[0])

        // Replays: the form again (any card), the page, paying again.
        const replay = await submitCard(path, card(APPROVED_CARD))
        expect(replay.status).toBe(200)
        expect(replay.html).toContain(`data-testid="paid"`)
        expect((await submitCard(path, card(DECLINED_CARD))).html).toContain(`data-testid="paid"`)
        expect(await (await platform.fetch(path)).text()).toContain(`data-testid="paid"`)
        const again = await call("POST", `/orders/${created.id}/pay`, { key, body: { method: "card" } })
        expect(again.status).toBe(409)
        expectPlatformError(again, "order_already_paid")
        expect((await balance(key)).total_credits).toBe(startBalance + 25000)
        expect((await activity(key)).length).toBe(startActivity + 1)
        expect((await receipts(key)).length).toBe(startReceipts + 1)

        if (key !== owner()) {
          const billing = (await call("GET", "/billing", { key })).json
          expect(billing.balance).toEqual({ credits: 25000, token: 25, usd: 25 })
          expect(billing.usage_tier).toMatchObject({ tier: 1, name: "Builder", purchased_credits: 25000, next: { tier: 2 } })
          expect(billing.month.limit_credits).toBe(50000)
        }
      })

      it("checkout pages: an unknown session is a 404 page; another account cannot read my order or receipt", async () => {
        const missing = await platform.fetch("/checkout/cs_test_nope")
        expect(missing.status).toBe(404)
        expect(await missing.text()).toContain(`data-testid="not-found"`)
        const missingPost = await submitCard("/checkout/cs_test_nope", card(APPROVED_CARD))
        expect(missingPost.status).toBe(404)
        const key = await fresh()
        const other = await fresh()
        if (key === other) return
        const created = await buyByCard(key, { type: "credits", amount_usd: 5 })
        const res = await call("GET", `/orders/${created.id}`, { key: other })
        expect(res.status).toBe(404)
        expectPlatformError(res, "order_not_found")
        const receipt = (await receipts(key))[0]
        const peek = await call("GET", `/billing/receipts/${receipt.id}`, { key: other })
        expect(peek.status).toBe(404)
        expectPlatformError(peek, "receipt_not_found")
        const pay = await call("POST", `/orders/${created.id}/pay`, { key: other, body: { method: "card" } })
        expect(pay.status).toBe(404)
      })

      it("credits pinned to a machine show in by_scope", async () => {
        const key = await fresh()
        const before = (await balance(key)).by_scope.find((s) => s.machine_id === "m-eu-a")?.credits ?? 0
        const created = await buyByCard(key, { type: "credits", amount_usd: 5, machine_id: "m-eu-a" })
        expect(created.machine_id).toBe("m-eu-a")
        expect(created.title).toBe("5,000 credits on EU A")
        const after = await balance(key)
        expect(after.by_scope).toContainEqual({ machine_id: "m-eu-a", credits: before + 5000 })
        const entry = (await activity(key))[0]
        expect(entry).toMatchObject({ type: "credit_added", credits: 5000, machine_id: "m-eu-a" })
      })

      it("gift: the paid order shows its ticket; it is redeemed once, by anyone, into the redeemer's balance", async () => {
        const buyer = await fresh()
        const redeemer = await fresh()
        const buyerBefore = (await balance(buyer)).total_credits
        const created = await buyByCard(buyer, { type: "credits", amount_usd: 10, gift: true })
        expect(created.title).toBe("Gift: 10,000 credits")
        // A gift does not credit the buyer.
        expect((await balance(buyer)).total_credits).toBe(buyerBefore)
        const got = await call("GET", `/orders/${created.id}`, { key: buyer })
        const ticket = got.json.ticket
        expect(ticket).toEqual({ code: expect.any(String), credits: 10000, machine_id: null, redeemed: false, redeemed_by_you: false })
        expect(ticket.code).toMatch(/^[0-9A-HJKMNP-TV-Z]{5}(-[0-9A-HJKMNP-TV-Z]{5}){3}$/)
        const tickets = await call("GET", "/tickets", { key: buyer })
        expect(tickets.json.data).toContainEqual(ticket)

        const redeemerBefore = (await balance(redeemer)).total_credits
        // Typed codes are normalised: case and dashes do not matter.
        const redeemed = await call("POST", "/credits/redeem", { key: redeemer, body: { code: ticket.code.toLowerCase().replaceAll("-", "") } })
        expect(redeemed.status, redeemed.text).toBe(200)
        expect(redeemed.json).toEqual({ redeemed: true, credits: 10000, machine_id: null })
        expect((await balance(redeemer)).total_credits).toBe(redeemerBefore + 10000)

        for (const key of [redeemer, buyer]) {
          const again = await call("POST", "/credits/redeem", { key, body: { code: ticket.code } })
          expect(again.status).toBe(409)
          expectPlatformError(again, "ticket_already_redeemed")
        }
        expect((await balance(redeemer)).total_credits).toBe(redeemerBefore + 10000)
        if (buyer !== redeemer) {
          expect((await balance(buyer)).total_credits).toBe(buyerBefore)
          const listed = (await call("GET", "/tickets", { key: buyer })).json.data.find((t: any) => t.code === ticket.code)
          expect(listed).toMatchObject({ redeemed: true, redeemed_by_you: false })
        }
        const unknown = await call("POST", "/credits/redeem", { key: redeemer, body: { code: "AAAAA-AAAAA-AAAAA-AAAAA" } })
        expect(unknown.status).toBe(404)
        expectPlatformError(unknown, "ticket_not_found")
        const empty = await call("POST", "/credits/redeem", { key: redeemer, body: { code: "" } })
        expect(empty.status).toBe(400)
      })

      it("stablecoin: pay returns the exact deposit; an exact deposit pays the order once", async () => {
        const key = await fresh()
        const before = (await balance(key)).total_credits
        const created = await order(key, { type: "credits", amount_usd: 25 })
        const paying = await call("POST", `/orders/${created.id}/pay`, { key, body: { method: "stablecoin", chain: "base", token: "USDC" } })
        expect(paying.status, paying.text).toBe(200)
        expect(paying.json.payment).toEqual({
          method: "stablecoin",
          deposit: { chain: "base", token: "USDC", amount: "25.000000", address: expect.stringMatching(/^0x[0-9a-f]{40}$/), memo: null }
        })
        const address = paying.json.payment.deposit.address
        const again = await call("POST", `/orders/${created.id}/pay`, { key, body: { method: "stablecoin", chain: "base", token: "USDC" } })
        expect(again.json.payment.deposit.address).toBe(address)

        const sent = await simulatedDeposit({ to: address, amount: "25.000000", tx: `0xexact-${created.id}` })
        expect(sent.status, sent.text).toBe(200)
        expect(sent.json).toMatchObject({
          outcome: "counted", recorded: true,
          transfer: { chain: "base", token: "USDC", to: address, amount: "25.000000" },
          order: { order_id: created.id, status: "paid", amount_due: "25.000000", received: "25.000000", remaining: "0.000000", refund_due: "0.000000" }
        })
        const got = await call("GET", `/orders/${created.id}`, { key })
        expect(got.json.status).toBe("paid")
        expect(got.json.paid_at).toMatch(ISO_MS)
        expect((await balance(key)).total_credits).toBe(before + 25000)
        expect((await receipts(key))[0]).toMatchObject({ paid_with: "stablecoin", credits: 25000 })

        // The same transfer again (a watcher's replay) changes nothing; a later one is late.
        const replay = await simulatedDeposit({ to: address, amount: "25.000000", tx: `0xexact-${created.id}` })
        expect(replay.json).toMatchObject({ outcome: "counted", recorded: false })
        const late = await simulatedDeposit({ order_id: created.id, amount: "1" })
        expect(late.json).toMatchObject({ outcome: "late", recorded: true, order: { refund_due: "1.000000" } })
        expect((await balance(key)).total_credits).toBe(before + 25000)
      })

      it("stablecoin: short deposits add up; excess is owed back; unmatched and invalid transfers", async () => {
        const key = await fresh()
        const before = (await balance(key)).total_credits
        const short = await order(key, { type: "credits", amount_usd: 10 })
        await call("POST", `/orders/${short.id}/pay`, { key, body: { method: "stablecoin", chain: "base", token: "USDC" } })
        const first = await simulatedDeposit({ order_id: short.id, amount: "4" })
        expect(first.json).toMatchObject({ outcome: "counted", order: { status: "pending", received: "4.000000", remaining: "6.000000" } })
        expect((await balance(key)).total_credits).toBe(before)
        const card = await call("POST", `/orders/${short.id}/pay`, { key, body: { method: "card" } })
        expect(card.status).toBe(409)
        expectPlatformError(card, "deposit_in_progress")
        // Without an amount, the simulated chain sends what remains.
        const rest = await simulatedDeposit({ order_id: short.id })
        expect(rest.json).toMatchObject({ outcome: "counted", transfer: { amount: "6.000000" }, order: { status: "paid", remaining: "0.000000" } })
        expect((await balance(key)).total_credits).toBe(before + 10000)

        const excess = await order(key, { type: "credits", amount_usd: 5 })
        await call("POST", `/orders/${excess.id}/pay`, { key, body: { method: "stablecoin", chain: "base", token: "USDC" } })
        const over = await simulatedDeposit({ order_id: excess.id, amount: "7.5" })
        expect(over.json).toMatchObject({ outcome: "counted", order: { status: "paid", refund_due: "2.500000" } })
        expect((await balance(key)).total_credits).toBe(before + 15000)

        const unmatched = await simulatedDeposit({ to: `0x${"ab".repeat(20)}`, amount: "3" })
        expect(unmatched.json).toMatchObject({ outcome: "unmatched", order: null })
        for (const amount of ["1.0000001", "-1", "0", "2.5e1"]) {
          const bad = await simulatedDeposit({ order_id: excess.id, amount })
          expect(bad.status, `${amount}: ${bad.text}`).toBe(400)
          expectPlatformError(bad, "invalid_request")
        }
        const noPair = await call("POST", `/orders/${short.id}/pay`, { key, body: { method: "stablecoin" } })
        expect(noPair.status).toBe(409)
        const fresh2 = await order(key, { type: "credits", amount_usd: 5 })
        const missingPair = await call("POST", `/orders/${fresh2.id}/pay`, { key, body: { method: "stablecoin" } })
        expect(missingPair.status).toBe(400)
        expectPlatformError(missingPair, "invalid_request")
        const wrongPair = await call("POST", `/orders/${fresh2.id}/pay`, { key, body: { method: "stablecoin", chain: "eth", token: "DAI" } })
        expect(wrongPair.status).toBe(400)
        const noMethod = await call("POST", `/orders/${fresh2.id}/pay`, { key, body: {} })
        expect(noMethod.status).toBe(400)
        expectPlatformError(noMethod, "invalid_request")
        expect(noMethod.json.error.message).toContain("method")
        expect((await call("GET", `/orders/${fresh2.id}`, { key })).json.payment).toEqual({ method: null })
      })

      it("simulated deposits: only the owner may send them", async () => {
        const key = await fresh()
        if (key === owner()) return
        const created = await order(key, { type: "credits", amount_usd: 5 })
        await call("POST", `/orders/${created.id}/pay`, { key, body: { method: "stablecoin", chain: "base", token: "USDC" } })
        const refused = await simulatedDeposit({ order_id: created.id }, key)
        expect(refused.status).toBe(403)
        expectPlatformError(refused, "owner_only")
        const noKey = await call("POST", "/_simulated/deposits", { body: { order_id: created.id } })
        expect(noKey.status).toBe(401)
        expect((await call("GET", `/orders/${created.id}`, { key })).json.status).toBe("pending")
      })

      it("Idempotency-Key: creating, paying and redeeming replay the first answer", async () => {
        const key = await fresh()
        const headers = { "idempotency-key": `order-${Math.random()}` }
        const body = { type: "credits", amount_usd: 15 }
        const first = await call("POST", "/orders", { key, body, headers })
        const second = await call("POST", "/orders", { key, body, headers })
        expect(first.status).toBe(200)
        expect(second.json).toEqual(first.json)
        expect(second.headers.get("idempotent-replayed")).toBe("true")
        const listed = (await call("GET", "/orders?limit=200", { key })).json.data
        expect(listed.filter((o: any) => o.id === first.json.id)).toHaveLength(1)
        expect(listed.filter((o: any) => o.amount_usd === 15)).toHaveLength(1)
        const other = await call("POST", "/orders", { key, body: { type: "credits", amount_usd: 16 }, headers })
        expect(other.status).toBe(409)
        expectPlatformError(other, "idempotency_key_reused")

        const payHeaders = { "idempotency-key": `pay-${Math.random()}` }
        const pay1 = await call("POST", `/orders/${first.json.id}/pay`, { key, body: { method: "card" }, headers: payHeaders })
        const pay2 = await call("POST", `/orders/${first.json.id}/pay`, { key, body: { method: "card" }, headers: payHeaders })
        expect(pay2.json).toEqual(pay1.json)
        expect(pay2.headers.get("idempotent-replayed")).toBe("true")

        const gift = await buyByCard(key, { type: "credits", amount_usd: 5, gift: true })
        const code = (await call("GET", `/orders/${gift.id}`, { key })).json.ticket.code
        const redeemHeaders = { "idempotency-key": `redeem-${Math.random()}` }
        const before = (await balance(key)).total_credits
        const r1 = await call("POST", "/credits/redeem", { key, body: { code }, headers: redeemHeaders })
        const r2 = await call("POST", "/credits/redeem", { key, body: { code }, headers: redeemHeaders })
        expect(r1.status).toBe(200)
        expect(r2.status).toBe(200)
        expect(r2.json).toEqual(r1.json)
        expect((await balance(key)).total_credits).toBe(before + 5000)
      })

      it("permissions: a read-only key reads the money endpoints but cannot order, pay or redeem", async () => {
        const reader = await createKey({ name: "money-reader", permissions: ["read"] })
        for (const path of ["/credits", "/credits/activity", "/tickets", "/orders", "/billing", "/billing/receipts"]) {
          const res = await call("GET", path, { key: reader.secret })
          expect(res.status, `${path}: ${res.text}`).toBe(200)
        }
        const res = await call("POST", "/orders", { key: reader.secret, body: { type: "credits", amount_usd: 10 } })
        expect(res.status).toBe(403)
        expect(res.json.error).toMatchObject({ code: "key_lacks_permission", scope: "manage" })
      })

      it("GET /orders lists newest first and honours limit", async () => {
        const key = await fresh()
        const a = await order(key, { type: "credits", amount_usd: 6 })
        const b = await order(key, { type: "package", package_id: "starter" })
        const listed = (await call("GET", "/orders?limit=2", { key })).json.data
        expect(listed.map((o: any) => o.id)).toEqual([b.id, a.id])
        expect(listed[0]).toMatchObject({ type: "package", title: "Starter", amount_usd: 10, status: "pending" })
        expect((await call("GET", "/orders?limit=1", { key })).json.data).toHaveLength(1)
      })
    })

    describe("idempotency", () => {
      it("the same Idempotency-Key and body replays the first response", async () => {
        const headers = { "idempotency-key": `idem-${Math.random()}` }
        const body = { name: "idem", permissions: ["read"] }
        const first = await call("POST", "/keys", { key: owner(), body, headers })
        const second = await call("POST", "/keys", { key: owner(), body, headers })
        expect(first.status).toBe(200)
        expect(second.status).toBe(200)
        expect(second.json).toEqual(first.json)
        expect(second.headers.get("idempotent-replayed")).toBe("true")
        const listed = await call("GET", "/keys", { key: owner() })
        expect(listed.json.data.filter((k: any) => k.id === first.json.id)).toHaveLength(1)
      })
      it("the same Idempotency-Key with another body -> 409", async () => {
        const headers = { "idempotency-key": `idem-${Math.random()}` }
        expect((await call("POST", "/keys", { key: owner(), body: { name: "a" }, headers })).status).toBe(200)
        const res = await call("POST", "/keys", { key: owner(), body: { name: "b" }, headers })
        expect(res.status).toBe(409)
        expectPlatformError(res, "idempotency_key_reused")
      })
      it("without the header, two requests make two keys", async () => {
        const a = await createKey({ name: "twin" })
        const b = await createKey({ name: "twin" })
        expect(a.id).not.toBe(b.id)
      })
      it("concurrent requests with one key create exactly one key", async () => {
        const name = `concurrent-${Math.random()}`
        const headers = { "idempotency-key": name }
        const results = await Promise.all(
          Array.from({ length: 8 }, () => call("POST", "/keys", { key: owner(), body: { name }, headers }))
        )
        for (const r of results) expect([200, 409]).toContain(r.status)
        const listed = await call("GET", "/keys", { key: owner() })
        expect(listed.json.data.filter((k: any) => k.name === name)).toHaveLength(1)
      })
      it("a request that failed can be retried with the same key", async () => {
        const headers = { "idempotency-key": `idem-${Math.random()}` }
        const bad = await call("POST", "/keys", { key: owner(), body: { name: "x", machine_id: "nope" }, headers })
        expect(bad.status).toBe(404)
        const retry = await call("POST", "/keys", { key: owner(), body: { name: "x", machine_id: "nope" }, headers })
        expect(retry.status).toBe(404)
        expect(retry.headers.get("idempotent-replayed")).toBeNull()
      })
    })

    describe("error shapes", () => {
      it("bad JSON -> 400 invalid_json", async () => {
        const res = await call("POST", "/keys", { key: owner(), body: "{not json" })
        expect(res.status).toBe(400)
        expectPlatformError(res, "invalid_json")
      })
      it("a wrong content type -> 415 in the platform shape", async () => {
        const res = await call("POST", "/keys", { key: owner(), body: "name=x", headers: { "content-type": "application/x-www-form-urlencoded" } })
        expect(res.status).toBe(415)
        expectPlatformError(res, "unsupported_media_type")
      })
      it("an unknown route -> 404 in the platform shape", async () => {
        const res = await call("GET", "/nowhere")
        expect(res.status).toBe(404)
        expectPlatformError(res, "not_found")
      })
      it("an unknown route under /v1 -> 404 in the inference shape", async () => {
        const res = await call("GET", "/v1/nowhere")
        expect(res.status).toBe(404)
        expect(res.json).toEqual({ error: { message: expect.any(String), type: "not_found_error", code: "not_found" } })
      })
      it("a wrong method -> 405 with Allow", async () => {
        const res = await call("PUT", "/keys", { key: owner(), body: {} })
        expect(res.status).toBe(405)
        expectPlatformError(res, "method_not_allowed")
        expect(res.headers.get("allow")).toContain("GET")
        expect(res.headers.get("allow")).toContain("POST")
      })
      it("a wrong method under /v1 -> 405 with Allow, in the inference shape", async () => {
        const res = await call("GET", "/v1/chat/completions")
        expect(res.status).toBe(405)
        expect(res.json).toEqual({
          error: { message: expect.stringContaining("POST"), type: "invalid_request_error", code: "method_not_allowed" }
        })
        expect(res.headers.get("allow")).toBe("POST")
      })
      it("error responses are JSON", async () => {
        const res = await call("GET", "/models/nope")
        expect(res.headers.get("content-type")).toContain("application/json")
      })
    })

    describe("documents", () => {
      it("GET /openapi.json is the management OpenAPI 3.1 document", async () => {
        const res = await call("GET", "/openapi.json")
        expect(res.status).toBe(200)
        expect(res.json.openapi).toMatch(/^3\.1/)
        expect(Object.keys(res.json.paths)).toEqual(expect.arrayContaining([
          "/models", "/models/{id}", "/keys", "/keys/{id}", "/me", "/route", "/quotes", "/credits", "/credits/activity",
          "/credits/redeem", "/tickets", "/orders", "/orders/{id}", "/orders/{id}/pay", "/billing", "/billing/receipts",
          "/billing/receipts/{id}"
        ]))
        expect(Object.keys(res.json.paths)).not.toContain("/_simulated/deposits")
      })
      it("GET /docs is an HTML page", async () => {
        const response = await platform.fetch("/docs")
        expect(response.status).toBe(200)
        expect(response.headers.get("content-type")).toContain("text/html")
        expect(await response.text()).toContain("<html")
      })
    })
  })
