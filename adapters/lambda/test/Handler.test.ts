/**
 * What the Lambda shell itself does around the platform, on memory stores (no DynamoDB needed):
 * it builds the application once per container, retries a failed build, answers malformed
 * events and the invocation deadline in the platform's error shape.
 */
import { GatewayStoreComposed } from "@model-platform/core/gateway"
import { fixtureCatalogue } from "@model-platform/test-harness/Fixtures"
import { LedgerStoreMemory } from "@model-platform/memory-stores/MemoryLedgerStore"
import { OrderStoreMemory } from "@model-platform/memory-stores/MemoryOrderStore"
import { DepositWatchStoreMemory } from "@model-platform/memory-stores/MemoryDepositWatchStore"
import { PlanStoreMemory } from "@model-platform/memory-stores/MemoryPlanStore"
import { AgentStoreMemory } from "@model-platform/memory-stores/MemoryAgentStore"
import { ApprovalStoreMemory, DocumentStoresMemory } from "@model-platform/memory-stores/MemoryDocuments"
import { RateLimitStoreMemory } from "@model-platform/memory-stores/MemoryRateLimitStore"
import { PeopleStoreMemory } from "@model-platform/memory-stores/MemoryPeopleStore"
import { AlertStoreMemory } from "@model-platform/memory-stores/MemoryAlertStore"
import { BillingSettingsStoreMemory } from "@model-platform/memory-stores/MemoryBillingSettingsStore"
import { MemoryOutbox } from "@model-platform/test-harness/MemoryOutbox"
import { MemoryPlatformStores as MemoryStores } from "@model-platform/memory-stores/MemoryPlatformStores"
import { AccountStoreMemory, IdempotencyStoreMemory, KeyStoreMemory } from "@model-platform/memory-stores/MemoryStores"
import { UsageStoreMemory } from "@model-platform/memory-stores/MemoryUsageStore"
import { AccountStore, generateSecret, KeyStore } from "@model-platform/core/keys"
import type { APIGatewayProxyEventV2 } from "aws-lambda"
import { Effect, Layer } from "effect"
import { describe, expect, it } from "vitest"
import { makeHandler } from "../src/Handler.ts"
import { invocationContext, requestToEvent, resultToResponse } from "./support.ts"

const get = (path: string, headers: Record<string, string> = {}) =>
  requestToEvent(new Request(`https://api.platform.test${path}`, { headers }))

describe("Lambda handler", () => {
  it("builds the application once for every invocation of the container", async () => {
    let builds = 0
    const stores = Layer.merge(MemoryStores, Layer.effectDiscard(Effect.sync(() => builds++)))
    const handler = makeHandler({ catalogue: fixtureCatalogue, ownerEmail: "owner@test.local", stores })
    try {
      const owner = await handler.firstStart()
      expect(owner?.account.email).toBe("owner@test.local")
      const results = await Promise.all(
        Array.from({ length: 10 }, async () => handler(await get("/me", { authorization: `Bearer ${owner?.key.secret}` }), invocationContext))
      )
      for (const result of results) expect(result.statusCode).toBe(200)
      expect(await handler.firstStart()).toBe(owner)
      expect(builds).toBe(1)
    } finally {
      await handler.dispose()
    }
  })

  it("a failed build answers 503 in the platform shape, and the next invocation builds again", async () => {
    let attempts = 0
    const flaky = Layer.effectDiscard(Effect.suspend(() => (attempts++ === 0 ? Effect.die(new Error("table unreachable")) : Effect.void)))
    const handler = makeHandler({ catalogue: fixtureCatalogue, ownerEmail: "owner@test.local", stores: Layer.merge(MemoryStores, flaky) })
    const errors: Array<unknown> = []
    const consoleError = console.error
    console.error = (...args: Array<unknown>) => errors.push(args)
    try {
      const failed = resultToResponse(await handler(await get("/models"), invocationContext))
      expect(failed.status).toBe(503)
      expect(await failed.json()).toMatchObject({ error: { code: expect.any(String), message: expect.any(String) } })
      expect(errors).toHaveLength(1)
      const ok = await handler(await get("/models"), invocationContext)
      expect(ok.statusCode).toBe(200)
      expect(attempts).toBe(2)
    } finally {
      console.error = consoleError
      await handler.dispose()
    }
  })

  it("links are built on the domain API Gateway answered on, never on the Host header a client writes", async () => {
    const handler = makeHandler({ catalogue: fixtureCatalogue, ownerEmail: "owner@test.local", stores: MemoryStores })
    try {
      const owner = await handler.firstStart()
      const headers = { authorization: `Bearer ${owner?.key.secret}`, "content-type": "application/json" }
      const post = async (path: string, body: unknown, event: (e: APIGatewayProxyEventV2) => APIGatewayProxyEventV2 = (e) => e) => {
        const sent = await requestToEvent(new Request(`https://api.platform.test${path}`, { method: "POST", headers, body: JSON.stringify(body) }))
        return (await resultToResponse(await handler(event(sent), invocationContext)).json()) as { id: string; pay_url: string }
      }
      const evilHost = (e: APIGatewayProxyEventV2) => ({ ...e, headers: { ...e.headers, host: "evil.example" } })
      const first = await post("/orders", { type: "credits", amount_usd: 25 })
      expect((await post(`/orders/${first.id}/pay`, { method: "card" }, evilHost)).pay_url).toMatch(/^https:\/\/api\.platform\.test\/checkout\//)
      // An event without a domain is not API Gateway's: still not the Host.
      const second = await post("/orders", { type: "credits", amount_usd: 25 })
      const noDomain = (e: APIGatewayProxyEventV2) => evilHost({ ...e, requestContext: { ...e.requestContext, domainName: "" } })
      expect((await post(`/orders/${second.id}/pay`, { method: "card" }, noDomain)).pay_url).toMatch(/^https:\/\/localhost\/checkout\//)
    } finally {
      await handler.dispose()
    }
  })

  it("an event that is not payload 2.0 is refused", async () => {
    const handler = makeHandler({ catalogue: fixtureCatalogue, ownerEmail: "owner@test.local", stores: MemoryStores })
    try {
      const v1 = { httpMethod: "GET", path: "/models", headers: {}, requestContext: { stage: "prod" } }
      await expect(handler(v1 as never, invocationContext)).rejects.toThrow(/Unsupported event/)
    } finally {
      await handler.dispose()
    }
  })

  it("an event that cannot make a Request answers 400 in the platform shape", async () => {
    const handler = makeHandler({ catalogue: fixtureCatalogue, ownerEmail: "owner@test.local", stores: MemoryStores })
    try {
      const event = await get("/models")
      const result = await handler({ ...event, headers: { ...event.headers, "bad name": "x" } }, invocationContext)
      expect(result.statusCode).toBe(400)
      expect(JSON.parse(result.body ?? "")).toMatchObject({ error: { code: "invalid_request" } })
    } finally {
      await handler.dispose()
    }
  })

  it("a request still running at the deadline is interrupted and answers 504 in the platform shape", async () => {
    // Key lookups take 300 ms: the deadline falls in the middle of authentication.
    const SlowKeys = Layer.effect(
      KeyStore,
      Effect.map(KeyStore, (keys) => KeyStore.of({ ...keys, findByHash: (hash) => Effect.delay(keys.findByHash(hash), "300 millis") }))
    ).pipe(Layer.provide(KeyStoreMemory))
    const stores = Layer.provideMerge(
      GatewayStoreComposed,
      Layer.mergeAll(
        AccountStoreMemory, SlowKeys, IdempotencyStoreMemory, LedgerStoreMemory, OrderStoreMemory, UsageStoreMemory, RateLimitStoreMemory,
        PeopleStoreMemory, BillingSettingsStoreMemory, AlertStoreMemory, PlanStoreMemory, AgentStoreMemory,
        ApprovalStoreMemory, DocumentStoresMemory, DepositWatchStoreMemory
      )
    )
    const handler = makeHandler({ catalogue: fixtureCatalogue, ownerEmail: "owner@test.local", stores, deadlineMarginMillis: 1_000 })
    try {
      const owner = await handler.firstStart()
      const authorization = `Bearer ${owner?.key.secret}`
      const nearDeadline = { getRemainingTimeInMillis: () => 1_050 }
      const platform = await handler(await get("/me", { authorization }), nearDeadline)
      expect(platform.statusCode).toBe(504)
      expect(JSON.parse(platform.body ?? "")).toMatchObject({ error: { code: expect.any(String), message: expect.any(String) } })
      // With time enough, the same request succeeds.
      expect((await handler(await get("/me", { authorization }), invocationContext)).statusCode).toBe(200)
    } finally {
      await handler.dispose()
    }
  })

  it("with an owner secret made beforehand, the first start makes the owner's key from it, reading it only then", async () => {
    const secret = Effect.runSync(generateSecret)
    let reads = 0
    const ownerSecret = Effect.sync(() => {
      reads++
      return secret
    })
    const handler = makeHandler({ catalogue: fixtureCatalogue, ownerEmail: "owner@test.local", stores: MemoryStores, ownerSecret })
    try {
      const owner = await handler.firstStart()
      expect(owner?.key.secret).toBe(secret)
      expect(owner?.key.prefix).toBe(secret.slice(0, 12))
      expect(reads).toBe(1)
      const me = resultToResponse(await handler(await get("/me", { authorization: `Bearer ${secret}` }), invocationContext))
      expect(me.status).toBe(200)
      expect(((await me.json()) as { email: string }).email).toBe("owner@test.local")
    } finally {
      await handler.dispose()
    }
  })

  it("an owner secret without the shape of a key secret fails the first start before anything is written", async () => {
    const values = ["not-a-secret", Effect.runSync(generateSecret)]
    const ownerSecret = Effect.sync(() => values.shift()!)
    const errors: Array<unknown> = []
    const consoleError = console.error
    console.error = (...args: Array<unknown>) => errors.push(args)
    // One set of stores for every build, so that what a failed build wrote would still be there.
    const shared = await Effect.runPromise(Effect.scoped(Layer.build(MemoryStores)))
    const accounts = () =>
      Effect.runPromise(Effect.gen(function*() {
        return yield* (yield* AccountStore).first
      }).pipe(Effect.provideContext(shared)))
    const handler = makeHandler({
      catalogue: fixtureCatalogue,
      ownerEmail: "owner@test.local",
      stores: Layer.succeedContext(shared),
      ownerSecret
    })
    try {
      const failed = await handler(await get("/models"), invocationContext)
      expect(failed.statusCode).toBe(503)
      expect(JSON.stringify(errors)).toContain("MalformedSecret")
      expect(JSON.stringify(errors)).not.toContain("not-a-secret")
      // Nothing was written; the next build makes the owner with the next value.
      expect(await accounts()).toBeUndefined()
      const owner = await handler.firstStart()
      expect(owner?.account.email).toBe("owner@test.local")
      expect(values).toEqual([])
    } finally {
      console.error = consoleError
      await handler.dispose()
    }
  })
})

describe("Lambda handler: the account service", () => {
  const ACCOUNTS_URL = "https://accounts.platform.test/accounts"
  const accounts = { emailSender: MemoryOutbox.layer }

  const page = async (handler: ReturnType<typeof makeHandler>, path: string, headers: Record<string, string> = {}) =>
    resultToResponse(await handler(await get(path, headers), invocationContext))

  it("with its options it serves the pages, the WebAuthn bundle, and GET /identity at ACCOUNTS_URL", async () => {
    const handler = makeHandler({
      catalogue: fixtureCatalogue,
      ownerEmail: "owner@test.local",
      stores: MemoryStores,
      accounts: { ...accounts, accountsUrl: `${ACCOUNTS_URL}/` }
    })
    try {
      const owner = await handler.firstStart()
      const signUp = await page(handler, "/accounts/sign-up")
      expect(signUp.status).toBe(200)
      expect(await signUp.text()).toContain('id="sign-up"')
      const bundle = await page(handler, "/accounts/webauthn.js")
      expect(bundle.status).toBe(200)
      expect(await bundle.text()).toContain("SimpleWebAuthnBrowser")
      const identity = await page(handler, "/identity", { authorization: `Bearer ${owner?.key.secret}` })
      expect(await identity.json()).toMatchObject({ state: "ready", passkeys: 0, manage_url: `${ACCOUNTS_URL}/manage` })
    } finally {
      await handler.dispose()
    }
  })

  it("without ACCOUNTS_URL its address is PUBLIC_URL + /accounts; with neither the build fails naming both", async () => {
    const fromPublic = makeHandler({
      catalogue: fixtureCatalogue,
      ownerEmail: "owner@test.local",
      stores: MemoryStores,
      publicUrl: "https://platform.test",
      accounts
    })
    try {
      const owner = await fromPublic.firstStart()
      const identity = await page(fromPublic, "/identity", { authorization: `Bearer ${owner?.key.secret}` })
      expect(await identity.json()).toMatchObject({ manage_url: "https://platform.test/accounts/manage" })
    } finally {
      await fromPublic.dispose()
    }
    const errors: Array<unknown> = []
    const consoleError = console.error
    console.error = (...args: Array<unknown>) => errors.push(args)
    const nowhere = makeHandler({ catalogue: fixtureCatalogue, ownerEmail: "owner@test.local", stores: MemoryStores, accounts })
    try {
      expect((await page(nowhere, "/accounts/sign-up")).status).toBe(503)
      expect(JSON.stringify(errors)).toMatch(/ACCOUNTS_URL.*PUBLIC_URL/)
    } finally {
      console.error = consoleError
      await nowhere.dispose()
    }
  })

  it("without its options every /accounts page answers 503", async () => {
    const handler = makeHandler({ catalogue: fixtureCatalogue, ownerEmail: "owner@test.local", stores: MemoryStores })
    try {
      const signUp = await page(handler, "/accounts/sign-up")
      expect(signUp.status).toBe(503)
      expect(signUp.headers.get("content-type")).toContain("text/html")
    } finally {
      await handler.dispose()
    }
  })
})
