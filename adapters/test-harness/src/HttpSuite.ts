/**
 * The HTTP test suite every shell runs unchanged (Node server, Lambda handler): happy, error and
 * security cases for every endpoint, in the shared-suite style of Unkey. A shell passes a `start`
 * that serves the platform on the fixture catalogue and returns a fetch to it and the owner's key.
 * A test that only one shell passes is a bug in that shell.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"

export interface ShellUnderTest {
  /** Sends a request to the platform; `path` starts with "/". */
  readonly fetch: (path: string, init?: RequestInit) => Promise<Response>
  /** The owner key printed at first start: holds every permission. */
  readonly ownerSecret: string
  readonly close: () => Promise<void>
}

const SECRET_SHAPE = /^mpk_[A-Za-z0-9_-]{43}$/
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

/** Every endpoint that needs a key, with the permission it needs (the spec's permission column). */
const PROTECTED: ReadonlyArray<{ method: string; path: string; permission: string; body?: unknown }> = [
  { method: "GET", path: "/me", permission: "read" },
  { method: "GET", path: "/keys", permission: "read" },
  { method: "POST", path: "/keys", permission: "manage", body: { name: "x", permissions: [] } },
  { method: "DELETE", path: "/keys/key_doesnotexist", permission: "manage" }
]

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

    describe("security: every protected endpoint", () => {
      for (const endpoint of PROTECTED) {
        const label = `${endpoint.method} ${endpoint.path}`
        it(`${label} without a key -> 401 missing_api_key`, async () => {
          const res = await call(endpoint.method, endpoint.path, { body: endpoint.body })
          expect(res.status).toBe(401)
          expectPlatformError(res, "missing_api_key")
        })
        it(`${label} with a non-Bearer scheme -> 401 missing_api_key`, async () => {
          const res = await call(endpoint.method, endpoint.path, { body: endpoint.body, headers: { authorization: `Basic ${btoa("a:b")}` } })
          expect(res.status).toBe(401)
          expectPlatformError(res, "missing_api_key")
        })
        it(`${label} with a malformed key -> 401 invalid_api_key`, async () => {
          const res = await call(endpoint.method, endpoint.path, { key: "not-a-key", body: endpoint.body })
          expect(res.status).toBe(401)
          expectPlatformError(res, "invalid_api_key")
        })
        it(`${label} with a well-formed unknown key -> 401 invalid_api_key`, async () => {
          const res = await call(endpoint.method, endpoint.path, { key: `mpk_${"A".repeat(43)}`, body: endpoint.body })
          expect(res.status).toBe(401)
          expectPlatformError(res, "invalid_api_key")
        })
        it(`${label} with a revoked key -> 401 invalid_api_key`, async () => {
          const key = await createKey({ name: "to-revoke", permissions: ["read", "manage"] })
          expect((await call("DELETE", `/keys/${key.id}`, { key: owner() })).status).toBe(200)
          const res = await call(endpoint.method, endpoint.path, { key: key.secret, body: endpoint.body })
          expect(res.status).toBe(401)
          expectPlatformError(res, "invalid_api_key")
        })
        it(`${label} with a key lacking "${endpoint.permission}" -> 403 naming it in scope`, async () => {
          const others = ["inference", "read", "manage"].filter((p) => p !== endpoint.permission)
          const key = await createKey({ name: "lacking", permissions: others })
          const res = await call(endpoint.method, endpoint.path, { key: key.secret, body: endpoint.body })
          expect(res.status).toBe(403)
          expect(res.json.error.scope).toBe(endpoint.permission)
        })
      }
    })

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
        expect(res.json.services.subscribe).toEqual({ plans: ["basic"] })
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
          stablecoin: { available: false, processor: "none", options: [] }
        })
      })
      it("GET /billing/prices has services with allowances and every model's prices", async () => {
        const res = await call("GET", "/billing/prices")
        expect(res.status).toBe(200)
        expect(res.json.unit).toBe("credit")
        expect(res.json.services[0]).toEqual({
          service: "chat", group: "inference", name: "Chat", unit: "mtok", unit_label: "million tokens",
          credits_per_unit: 1, allowances: { free: 100, builder: 0, scale: 0, trial: 500 }
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
      it("a key pinned to a machine can only create keys pinned to that machine", async () => {
        const pinned = await createKey({ name: "pinned-manager", permissions: ["read", "manage"], machine_id: "m-eu-a" })
        const unpinned = await call("POST", "/keys", { key: pinned.secret, body: { name: "x", permissions: ["read"] } })
        expect(unpinned.status).toBe(403)
        expectPlatformError(unpinned, "key_not_scoped_to_machine")
        const same = await call("POST", "/keys", { key: pinned.secret, body: { name: "x", permissions: ["read"], machine_id: "m-eu-a" } })
        expect(same.status).toBe(200)
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
        expect(Object.keys(res.json.paths)).toEqual(expect.arrayContaining(["/models", "/models/{id}", "/keys", "/keys/{id}", "/me", "/route"]))
      })
      it("GET /docs is an HTML page", async () => {
        const response = await platform.fetch("/docs")
        expect(response.status).toBe(200)
        expect(response.headers.get("content-type")).toContain("text/html")
        expect(await response.text()).toContain("<html")
      })
    })
  })
