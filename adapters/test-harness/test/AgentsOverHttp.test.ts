/**
 * Agents end to end in this process: the platform's agents endpoints talk to the account service
 * over real HTTP requests (ApprovalsHttpClient, HTTP Basic with the platform's client credentials)
 * at its /accounts/api/accounts/{sub}/agent-approvals routes, served by the same web handler, over
 * the memory stores and one simulated network. The owner signs up with a software authenticator's
 * passkey and approves each step with it, as in a browser.
 *
 * propose -> approve -> active (did, wallet); a key calls a priced model; a settings change waits
 * while the old limits hold, then applies; revoke approved -> the key's next call is 401; an
 * unused link expires after 30 minutes -> expired; wrong client credentials -> 503, nothing made.
 */
import { AccountsConfig, AccountService, Approvals } from "@model-platform/core/accounts"
import { ApprovalsHttpClient, SimulatedNetwork } from "@model-platform/core/agents"
import { ApiKeys, PermissionValues } from "@model-platform/core/keys"
import { AppRoutes, clockLayer, PlatformServices, ROUTER_CONFIG } from "@model-platform/core/http"
import { Ledger } from "@model-platform/core/ledger"
import { MICRO_PER_CREDIT, sha256Hex } from "@model-platform/core/kernel"
import { MachineClient } from "@model-platform/core/gateway"
import type { IdempotencyRecord } from "@model-platform/core/http"
import { Effect, Layer, ManagedRuntime, Ref } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { MemoryOutbox } from "../src/MemoryOutbox.ts"
import { MemoryPlatformStores } from "@model-platform/memory-stores/MemoryPlatformStores"
import { idempotencyStoreMemoryOn } from "@model-platform/memory-stores/MemoryStores"
import { movableClock } from "../src/MovableClock.ts"
import { makeSoftAuthenticator, type SoftAuthenticator } from "../src/SoftAuthenticator.ts"
import { healthy, stubCatalogue } from "./gatewayStub.ts"

const ORIGIN = "http://platform.test"
const ACCOUNTS_URL = `${ORIGIN}/accounts`
const RP = { origin: ORIGIN, rpId: "platform.test" }
const CLIENT = { id: "platform", secret: "the-platform-client-secret" }

let handler: ((request: Request) => Promise<Response>) | undefined
/** `fetch` into this process's web handler. */
const inProcessFetch = ((input: RequestInfo | URL, init?: RequestInit) => handler!(new Request(input, init))) as typeof fetch

const machineClient = Layer.succeed(MachineClient, {
  models: () => Effect.succeed(["chat", "embed", "forecast"]),
  post: (_machine, path, body) => Effect.succeed(healthy(path, body as Record<string, unknown>))
})

const clock = movableClock()
/** The idempotency records, read as a table. */
const records = Ref.makeUnsafe<ReadonlyMap<string, IdempotencyRecord>>(new Map())
const network = SimulatedNetwork.layer()
const approvalsClient = (secret: string) =>
  ApprovalsHttpClient.layer({ accountsUrl: ACCOUNTS_URL, clientId: CLIENT.id, clientSecret: secret, fetch: inProcessFetch })

const start = (clientSecret: string) => {
  const options = { agentApprovals: approvalsClient(clientSecret), network, machineClient, clock: clock.clock, requestUrlFromShell: true }
  // A forecast costs one credit.
  const services = PlatformServices(stubCatalogue({ forecastCreditsPerRequest: 1 }), options).pipe(
    Layer.provideMerge(Layer.merge(MemoryPlatformStores, idempotencyStoreMemoryOn(records)))
  )
  const config = Layer.succeed(AccountsConfig, {
    accountsUrl: ACCOUNTS_URL,
    platformClient: { id: CLIENT.id, secretSha256: sha256Hex(CLIENT.secret) }
  })
  const accounts = Layer.mergeAll(AccountService.layer, Approvals.layer).pipe(
    Layer.provideMerge(Layer.mergeAll(MemoryOutbox.layer, network, config)),
    Layer.provideMerge(services)
  )
  return ManagedRuntime.make(accounts.pipe(Layer.provideMerge(clockLayer(options))))
}

let runtime: ReturnType<typeof start>
let dispose: () => Promise<void>
const run = <A, E>(effect: Effect.Effect<A, E, any>): Promise<A> => runtime.runPromise(effect as Effect.Effect<A, E, never>)

beforeAll(async () => {
  runtime = start(CLIENT.secret)
  const context = await runtime.context()
  const web = HttpRouter.toWebHandler(
    AppRoutes.pipe(Layer.provideMerge(Layer.succeedContext(context)), Layer.provide(HttpServer.layerServices)),
    { disableLogger: true, routerConfig: ROUTER_CONFIG }
  )
  handler = web.handler
  dispose = web.dispose
})
afterAll(async () => {
  await dispose?.()
  await runtime?.dispose()
})

const send = async (secret: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
  const response = await handler!(
    new Request(`${ORIGIN}${path}`, {
      method,
      headers: { ...headers, authorization: `Bearer ${secret}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
  )
  const text = await response.text()
  return { status: response.status, json: text === "" ? undefined : JSON.parse(text) }
}

/** A person signed up with a passkey on `auth` and confirmed: a platform key of their account (every permission), 100 credits. */
const owner = (auth: SoftAuthenticator, email: string) =>
  run(Effect.gen(function*() {
    const accounts = yield* AccountService
    const begun = yield* accounts.beginSignUp({ email, clientAddress: "10.0.0.1", ...RP })
    yield* accounts.finishSignUp({ flow: begun.flow, response: yield* auth.create(begun.options, ORIGIN), ...RP })
    const mails = yield* (yield* MemoryOutbox).to(email)
    const token = mails.at(-1)!.text.match(/confirm\?token=([A-Za-z0-9_-]+)/)![1]!
    const confirmed = yield* accounts.confirmEmail({ token })
    const accountId = confirmed.person.account_id!
    const key = yield* (yield* ApiKeys).issue(accountId, { name: "owner", permissions: PermissionValues })
    yield* (yield* Ledger).credit(accountId, { ref: `seed_${accountId}`, machine_id: null, amount: 100n * MICRO_PER_CREDIT, type: "credit_added" })
    return { accountId, secret: key.secret }
  }))

/** The owner approves the step at `approveUrl` with the passkey on `auth`. */
const approve = (auth: SoftAuthenticator, approveUrl: string) =>
  run(Effect.gen(function*() {
    const id = approveUrl.split("/").pop()!
    const approvals = yield* Approvals
    const begun = yield* approvals.beginApprove({ id, ...RP })
    return yield* approvals.finishApprove({ id, flow: begun.flow, response: yield* auth.get(begun.options, ORIGIN), ...RP })
  }))

const forecast = (secret: string) => send(secret, "POST", "/v1/forecasts", { model: "forecast", history: [1, 2, 3], horizon: 1 })

describe("agents over HTTP with the account service", () => {
  it("propose, approve with the passkey, use, change, revoke", async () => {
    const auth = await Effect.runPromise(makeSoftAuthenticator)
    const { accountId, secret } = await owner(auth, "agents-owner@example.test")

    const proposed = await send(secret, "POST", "/agents", { name: "research-bot", daily_limit_credits: 3, max_transaction_token: "1.5", expires_in_days: 30 })
    expect(proposed.status, JSON.stringify(proposed.json)).toBe(200)
    expect(proposed.json.approve_url).toMatch(new RegExp(`^${ACCOUNTS_URL}/approve/`))
    const id: string = proposed.json.agent.id
    expect((await send(secret, "GET", `/agents/${id}`)).json).toMatchObject({ status: "awaiting_approval", approval: { kind: "create", state: "pending" } })

    expect((await approve(auth, proposed.json.approve_url)).state).toBe("approved")
    const active = (await send(secret, "GET", `/agents/${id}`)).json
    const approvalId = proposed.json.approve_url.split("/").pop()
    expect(active).toMatchObject({
      status: "active",
      approval: null,
      did: `did:svc:machine:${accountId}:${approvalId}`,
      serving: { nodes: 2, operators: 2 },
      limits: { max_transaction_token: "1.5", max_daily_token: null, daily_limit_credits: 3, total_limit_credits: null, expires_in_days: 30 },
      network_key_held: true,
      spend: { today_credits: 0, total_credits: 0 }
    })
    expect(active.wallet_address).toMatch(/^0x[0-9a-f]{40}$/)

    const key = (await send(secret, "POST", `/agents/${id}/keys`, { name: "worker" })).json
    expect(key.agent_id).toBe(id)
    expect((await forecast(key.secret)).status).toBe(200)

    // An agent key made under an Idempotency-Key: the kept answer holds no 8 characters of its
    // secret (docs/api-decisions.md "Idempotency"), and the replay answers that secret.
    const once = { "idempotency-key": "agent-key-once" }
    const made = (await send(secret, "POST", `/agents/${id}/keys`, { name: "worker-2" }, once)).json
    const kept = JSON.stringify([...Effect.runSync(Ref.get(records)).values()])
    for (let i = "mpk_".length; i + 8 <= made.secret.length; i++) expect(kept).not.toContain(made.secret.slice(i, i + 8))
    expect((await send(secret, "POST", `/agents/${id}/keys`, { name: "worker-2" }, once)).json).toEqual(made)

    // A change waits for approval while the old limits hold.
    const change = await send(secret, "POST", `/agents/${id}/settings`, { daily_limit_credits: 5 })
    expect(change.status, JSON.stringify(change.json)).toBe(200)
    expect(change.json.agent).toMatchObject({ approval: { kind: "update", state: "pending" }, limits: { daily_limit_credits: 3 }, proposed: { daily_limit_credits: 5 } })
    expect((await send(secret, "POST", `/agents/${id}/settings`, { daily_limit_credits: 6 })).json.error.code).toBe("change_pending")
    await approve(auth, change.json.approve_url)
    expect((await send(secret, "GET", `/agents/${id}`)).json).toMatchObject({ status: "active", approval: null, limits: { daily_limit_credits: 5 } })

    // Revocation, once approved, makes the key's next call 401; the network revoked the agent.
    const revoke = await send(secret, "POST", `/agents/${id}/revoke`)
    expect(revoke.json.agent.approval).toMatchObject({ kind: "revoke", state: "pending" })
    expect((await forecast(key.secret)).status).toBe(200)
    await approve(auth, revoke.json.approve_url)
    expect((await send(secret, "GET", `/agents/${id}`)).json.status).toBe("revoked")
    const refused = await forecast(key.secret)
    expect([refused.status, refused.json.error.code]).toEqual([401, "invalid_api_key"])
    const held = await run(Effect.flatMap(SimulatedNetwork, (n) => n.agents))
    expect(held.get(active.did)?.revoked).toBe(true)
  })

  it("an unused approval link expires after 30 minutes: the agent is expired", async () => {
    const auth = await Effect.runPromise(makeSoftAuthenticator)
    const { secret } = await owner(auth, "late-owner@example.test")
    const proposed = await send(secret, "POST", "/api/agents", { name: "late" })
    clock.advance(31 * 60_000)
    expect((await send(secret, "GET", `/api/agents/${proposed.json.agent.id}`)).json).toMatchObject({ status: "expired", approval: null })
  })
})

describe("agents over HTTP with wrong client credentials", () => {
  it("the account service refuses the platform (401): POST /agents is 503 approvals_unavailable, nothing made", async () => {
    const wrong = start("not-the-secret")
    const context = await wrong.context()
    const web = HttpRouter.toWebHandler(
      AppRoutes.pipe(Layer.provideMerge(Layer.succeedContext(context)), Layer.provide(HttpServer.layerServices)),
      { disableLogger: true, routerConfig: ROUTER_CONFIG }
    )
    const previous = handler
    handler = web.handler
    const previousRuntime = runtime
    runtime = wrong
    try {
      const auth = await Effect.runPromise(makeSoftAuthenticator)
      const { secret } = await owner(auth, "wrong-client@example.test")
      const answer = await send(secret, "POST", "/agents", { name: "bot" })
      expect([answer.status, answer.json.error.code]).toEqual([503, "approvals_unavailable"])
      expect(JSON.stringify(answer.json)).not.toContain("not-the-secret")
      expect((await send(secret, "GET", "/agents")).json).toEqual({ data: [] })
    } finally {
      handler = previous
      runtime = previousRuntime
      await web.dispose()
      await wrong.dispose()
    }
  })
})
