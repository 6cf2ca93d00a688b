/**
 * The agents' endpoints (core/src/agents/Agents.ts, docs/agents.md) through the platform's HTTP
 * routes in this process, over the memory stores, with an account service (AgentApprovals) and a
 * network this test controls: it approves, expires or fails an approval as the owner and the
 * network would, and sets how many nodes serve agents.
 *
 * propose -> awaiting_approval; read after approval -> active with limits, did and wallet; a
 * settings change waits while the old limits hold, a second is refused (409 change_pending);
 * revocation approved -> revoked and the agent's key answers 401 at the gateway; link expiry ->
 * expired; network refusal -> failed with its reason; no serving nodes -> 409; keys only for
 * active agents; the delegation's end -> expired (403 agent_expired at the gateway); the same
 * operations under /api.
 */
import {
  AgentApprovals,
  Agents,
  AgentStore,
  ApprovalsUnavailable,
  Network,
  NetworkUnavailable,
  parseTokens,
  simulatedNodes
} from "@model-platform/core/agents"
import type { ApprovalResultWire, CreateApprovalWire } from "@model-platform/core/agents"
import { AccountStore, ApiKeys } from "@model-platform/core/keys"
import { FirstStart, PeopleStore } from "@model-platform/core/accounts"
import { AppRoutes, clockLayer, PlatformServices, ROUTER_CONFIG } from "@model-platform/core/http"
import { Ledger } from "@model-platform/core/ledger"
import { MICRO_PER_CREDIT } from "@model-platform/core/kernel"
import { MachineClient } from "@model-platform/core/gateway"
import { Effect, Layer, ManagedRuntime } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAccount, standInPerson } from "../src/Accounts.ts"
import { AgentStoreMemory } from "@model-platform/memory-stores/MemoryAgentStore"
import { MemoryPlatformStores } from "@model-platform/memory-stores/MemoryPlatformStores"
import { movableClock } from "../src/MovableClock.ts"
import { healthy, stubCatalogue } from "./gatewayStub.ts"

// ---- the account service and the network, as this test controls them --------------------------

interface FakeApproval {
  readonly sub: string
  readonly request: CreateApprovalWire
  state: "pending" | "approved" | "collected" | "expired" | "failed"
  error?: string
  answer?: ApprovalResultWire
  agentDid?: string
}

const fakeApprovals = () => {
  const approvals = new Map<string, FakeApproval>()
  let down = false
  let count = 0
  /** How long the approved result takes to arrive (another reader meanwhile sees collected). */
  let handOverDelayMs = 0
  const unavailable = () => Effect.fail(new ApprovalsUnavailable({ reason: "the test's account service is down" }))
  const layer = Layer.succeed(AgentApprovals, {
    create: (sub, request) =>
      Effect.suspend(() => {
        if (down) return unavailable()
        const id = `apr_${++count}`
        approvals.set(id, { sub, request, state: "pending" })
        return Effect.succeed({ id, approve_url: `https://accounts.test/approve/${id}` })
      }),
    read: (sub, id) =>
      Effect.suspend(() => {
        const a = approvals.get(id)
        if (down || a === undefined || a.sub !== sub) return unavailable()
        switch (a.state) {
          case "pending":
          case "expired":
            return Effect.succeed({ state: a.state })
          case "failed":
            return Effect.succeed({ state: "failed" as const, error: a.error! })
          case "collected":
            return Effect.succeed({ state: "collected" as const, agent_did: a.agentDid! })
          case "approved":
            // Handed over once: the next read answers collected.
            a.state = "collected"
            return Effect.delay(Effect.succeed(a.answer!), handOverDelayMs)
        }
      })
  })
  const wei = (tokens: string) => tokens === "" ? null : parseTokens(tokens)!.toString()
  return {
    layer,
    approvals,
    setDown: (value: boolean) => {
      down = value
    },
    setHandOverDelay: (ms: number) => {
      handOverDelayMs = ms
    },
    /** The owner approves with a passkey; the network registers what was asked. */
    approve: (id: string) => {
      const a = approvals.get(id)!
      const agentId = a.request.return_to?.split("/").pop() ?? "x"
      const agentDid = a.request.agent_did ?? `did:svc:machine:${a.sub}:${agentId}`
      const s = a.request.settings
      a.state = "approved"
      a.agentDid = agentDid
      a.answer = {
        state: "approved",
        kind: a.request.kind,
        agent_did: agentDid,
        network: {
          identity: { did: agentDid, controller_did: `did:svc:human:${a.sub}` },
          wallet: { address: `0xwallet${agentId}` },
          serving_nodes: (a.request.serving_nodes ?? []).map((n) => ({ ...n, dpop_jkt: "jkt" })),
          api_key: a.request.kind === "revoke" ? null : `netkey_${id}`
        },
        settings: s === undefined
          ? null
          : {
            agent_name: s.agent_name,
            capabilities: s.capabilities,
            max_transaction_value: wei(s.max_transaction_token),
            max_daily_spend: wei(s.max_daily_token),
            expires_in_days: s.expires_in_days,
            daily_limit_credits: s.daily_limit_credits,
            total_limit_credits: s.total_limit_credits
          }
      }
    },
    expire: (id: string) => {
      approvals.get(id)!.state = "expired"
    },
    fail: (id: string, error: string) => {
      const a = approvals.get(id)!
      a.state = "failed"
      a.error = error
    }
  }
}

const fakeNetwork = (initial: number) => {
  let nodes = initial
  const none = () => Effect.fail(new NetworkUnavailable({ reason: "not in this test" }))
  return {
    layer: Layer.succeed(Network, {
      network: "test",
      createHumanIdentity: none,
      servingNodes: Effect.suspend(() => Effect.succeed(simulatedNodes(nodes))),
      registerAgent: none,
      revokeAgent: none,
      issueAgentKey: none
    }),
    setNodes: (n: number) => {
      nodes = n
    }
  }
}

const machineClient = Layer.succeed(MachineClient, {
  models: () => Effect.succeed(["chat", "embed", "forecast"]),
  post: (_machine, path, body) => Effect.succeed(healthy(path, body as Record<string, unknown>))
})

// ---- the platform ----------------------------------------------------------------------------

const clock = movableClock()
const approvals = fakeApprovals()
const network = fakeNetwork(2)
const options = { agentApprovals: approvals.layer, network: network.layer, machineClient, clock: clock.clock, requestUrlFromShell: true }
// A forecast costs one credit.
const services = PlatformServices(stubCatalogue({ forecastCreditsPerRequest: 1 }), options).pipe(Layer.provideMerge(MemoryPlatformStores))
const runtime = ManagedRuntime.make(
  Layer.mergeAll(services, FirstStart.layer("owner@test.local").pipe(Layer.provide(services))).pipe(Layer.provideMerge(clockLayer(options)))
)
const run = <A, E>(effect: Effect.Effect<A, E, any>): Promise<A> => runtime.runPromise(effect as Effect.Effect<A, E, never>)

let handler: (request: Request) => Promise<Response>
let dispose: () => Promise<void>

beforeAll(async () => {
  await run(Effect.flatMap(FirstStart, Effect.succeed))
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
  await runtime.dispose()
})

interface Answer {
  readonly status: number
  readonly json: any
}

const send = async (secret: string, method: string, path: string, body?: unknown): Promise<Answer> => {
  const response = await handler(
    new Request(`http://platform.test${path}`, {
      method,
      headers: { authorization: `Bearer ${secret}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
  )
  const text = await response.text()
  return { status: response.status, json: text === "" ? undefined : JSON.parse(text) }
}

/**
 * An account (every permission) whose identity is ready, with a person and a passkey behind it
 * (unless `passkey: false`), and 100 credits; its key and id.
 */
const owner = async (options: { readonly ready?: boolean; readonly passkey?: boolean } = {}) => {
  const email = `owner-${crypto.randomUUID()}@test.local`
  const secret = await run(createAccount(email))
  const me = await send(secret, "GET", "/me")
  const accountId: string = me.json.id
  if (options.ready !== false) {
    const personId = options.passkey === false ? `per_${accountId}` : await run(standInPerson(accountId, email))
    await run(Effect.flatMap(PeopleStore, (people) =>
      people.saveIdentity({
        account_id: accountId,
        person_id: personId,
        state: "ready",
        did: `did:svc:human:${accountId}`,
        wallet_address: "0xowner",
        error: null,
        updated_at: new Date(clock.now()).toISOString()
      })))
  }
  await run(Effect.flatMap(Ledger, (l) =>
    l.credit(accountId, { ref: `seed_${accountId}`, machine_id: null, amount: 100n * MICRO_PER_CREDIT, type: "credit_added" })))
  return { secret, accountId }
}

const proposal = {
  name: "research.bot-1",
  capabilities: ["inference", "payments"],
  max_transaction_token: "0.5",
  max_daily_token: "2",
  daily_limit_credits: 10,
  total_limit_credits: 50.5,
  expires_in_days: 30
}

/** Proposes an agent; the answer and the id of its approval at the account service. */
const propose = async (secret: string, body: unknown = proposal, prefix = "") => {
  const answer = await send(secret, "POST", `${prefix}/agents`, body)
  expect(answer.status, JSON.stringify(answer.json)).toBe(200)
  return { agent: answer.json.agent, approvalId: (answer.json.approve_url as string).split("/").pop()! }
}

/** An active agent: proposed, approved and read. */
const activeAgent = async (secret: string, body: unknown = proposal) => {
  const { agent, approvalId } = await propose(secret, body)
  approvals.approve(approvalId)
  const read = await send(secret, "GET", `/agents/${agent.id}`)
  expect(read.json.status, JSON.stringify(read.json)).toBe("active")
  return read.json
}

const forecast = (secret: string) => send(secret, "POST", "/v1/forecasts", { model: "forecast", history: [1, 2, 3], horizon: 1 })

const lastApprovalId = () => [...approvals.approvals.keys()].pop()!

// ---- the tests -------------------------------------------------------------------------------

describe("agents: proposing", () => {
  it("POST /agents -> {approve_url, agent} awaiting approval, the proposal shown; the account service asked with the settings, the serving nodes and return_to", async () => {
    const { secret } = await owner()
    const answer = await send(secret, "POST", "/agents", proposal)
    expect(answer.status, JSON.stringify(answer.json)).toBe(200)
    const { approve_url, agent } = answer.json
    expect(approve_url).toMatch(/^https:\/\/accounts\.test\/approve\/apr_\d+$/)
    expect(agent).toMatchObject({
      name: "research.bot-1",
      status: "awaiting_approval",
      approval: { kind: "create", state: "pending", approve_url },
      capabilities: ["inference", "payments"],
      limits: null,
      proposed: {
        agent_name: "research.bot-1",
        capabilities: ["inference", "payments"],
        max_transaction_token: "0.5",
        max_daily_token: "2",
        daily_limit_credits: 10,
        total_limit_credits: 50.5,
        expires_in_days: 30
      },
      did: null,
      wallet_address: null,
      error: null,
      approved_at: null,
      activated_at: null,
      expires_at: null,
      revoked_at: null
    })
    expect(agent.id).toMatch(/^agt_/)
    expect(agent).not.toHaveProperty("spend")
    const asked = approvals.approvals.get(approve_url.split("/").pop())!
    expect(asked.request).toEqual({
      kind: "create",
      settings: {
        agent_name: "research.bot-1",
        capabilities: ["inference", "payments"],
        max_transaction_token: "0.5",
        max_daily_token: "2",
        daily_limit_credits: 10,
        total_limit_credits: 50.5,
        expires_in_days: 30
      },
      serving_nodes: simulatedNodes(2).map(({ machine_did, operator_did }) => ({ machine_did, operator_did })),
      return_to: `http://platform.test/agents/${agent.id}`
    })
    // Reading before the owner approved: still waiting.
    const read = await send(secret, "GET", `/agents/${agent.id}`)
    expect(read.json).toMatchObject({ status: "awaiting_approval", approval: { kind: "create", state: "pending" }, network_key_held: false })
  })

  it("defaults: capabilities [inference], caps unset (\"\" in proposed), expires_in_days 365", async () => {
    const { secret } = await owner()
    const { agent } = await propose(secret, { name: "minimal" })
    expect(agent.capabilities).toEqual(["inference"])
    expect(agent.proposed).toEqual({
      agent_name: "minimal",
      capabilities: ["inference"],
      max_transaction_token: "",
      max_daily_token: "",
      daily_limit_credits: null,
      total_limit_credits: null,
      expires_in_days: 365
    })
  })

  it("refuses a body outside the spec's validation (400), creating nothing", async () => {
    const { secret } = await owner()
    for (const body of [
      {},
      { name: "Upper" },
      { name: "x".repeat(65) },
      { name: "ok", capabilities: ["teleport"] },
      { name: "ok", capabilities: [] },
      { name: "ok", max_transaction_token: "1.0000000000000000001" },
      { name: "ok", max_daily_token: -1 },
      { name: "ok", daily_limit_credits: 0.0000001 },
      { name: "ok", expires_in_days: 0 },
      { name: "ok", expires_in_days: 3651 },
      { name: "ok", expires_in_days: 1.5 }
    ]) {
      const answer = await send(secret, "POST", "/agents", body)
      expect(answer.status, `${JSON.stringify(body)} -> ${JSON.stringify(answer.json)}`).toBe(400)
    }
    expect((await send(secret, "GET", "/agents")).json).toEqual({ data: [] })
  })

  it("an identity that is not ready: 409 identity_not_ready naming where to sign up and register a passkey", async () => {
    const { secret } = await owner({ ready: false })
    const answer = await send(secret, "POST", "/agents", proposal)
    expect(answer.status).toBe(409)
    expect(answer.json.error.code).toBe("identity_not_ready")
    expect(answer.json.error.message).toContain("passkey")
    expect(answer.json.error.message).toContain("http://platform.test/accounts/sign-up")
  })

  it("an account with no passkey (the owner before it is claimed): 409 passkey_required saying how to attach one, no approval asked, nothing stored", async () => {
    const { secret } = await owner({ passkey: false })
    const asked = approvals.approvals.size
    const answer = await send(secret, "POST", "/agents", proposal)
    expect([answer.status, answer.json.error.code], JSON.stringify(answer.json)).toEqual([409, "passkey_required"])
    expect(answer.json.error.message).toContain("POST /identity/claim-link")
    expect(answer.json).not.toHaveProperty("approve_url")
    expect(approvals.approvals.size).toBe(asked)
    expect((await send(secret, "GET", "/agents")).json).toEqual({ data: [] })
  })

  it("no serving nodes: 409 no_serving_nodes, nothing stored", async () => {
    const { secret } = await owner()
    network.setNodes(0)
    try {
      const answer = await send(secret, "POST", "/agents", proposal)
      expect([answer.status, answer.json.error.code]).toEqual([409, "no_serving_nodes"])
    } finally {
      network.setNodes(2)
    }
    expect((await send(secret, "GET", "/agents")).json).toEqual({ data: [] })
  })

  it("the account service unavailable: 503 approvals_unavailable, nothing stored; reads answer agents as stored", async () => {
    const { secret } = await owner()
    const { agent } = await propose(secret)
    approvals.setDown(true)
    try {
      const answer = await send(secret, "POST", "/agents", { name: "another" })
      expect([answer.status, answer.json.error.code]).toEqual([503, "approvals_unavailable"])
      const list = await send(secret, "GET", "/agents")
      expect(list.status).toBe(200)
      expect(list.json.data.map((a: any) => [a.id, a.status])).toEqual([[agent.id, "awaiting_approval"]])
      expect((await send(secret, "GET", `/agents/${agent.id}`)).json.status).toBe("awaiting_approval")
    } finally {
      approvals.setDown(false)
    }
  })
})

describe("agents: collecting approvals", () => {
  it("approved: the read collects it -> active with the approved limits, did, wallet, serving nodes; the network key held, not shown", async () => {
    const { secret, accountId } = await owner()
    const { agent, approvalId } = await propose(secret)
    approvals.approve(approvalId)
    const before = clock.now()
    const read = await send(secret, "GET", `/agents/${agent.id}`)
    expect(read.status).toBe(200)
    const active = read.json
    expect(active).toMatchObject({
      id: agent.id,
      status: "active",
      approval: null,
      proposed: null,
      capabilities: ["inference", "payments"],
      limits: {
        max_transaction_token: "0.5",
        max_daily_token: "2",
        daily_limit_credits: 10,
        total_limit_credits: 50.5,
        expires_in_days: 30
      },
      did: `did:svc:machine:per_${accountId}:${agent.id}`,
      wallet_address: `0xwallet${agent.id}`,
      serving: { nodes: 2, operators: 2 },
      error: null,
      revoked_at: null,
      spend: { today_credits: 0, total_credits: 0 },
      network_key_held: true
    })
    expect(Date.parse(active.activated_at)).toBeGreaterThanOrEqual(before)
    expect(active.approved_at).toBe(active.activated_at)
    expect(Date.parse(active.expires_at) - Date.parse(active.activated_at)).toBe(30 * 86_400_000)
    expect(JSON.stringify(active)).not.toContain("netkey_")
    // The result was handed over once; the next read does not need it.
    expect(approvals.approvals.get(approvalId)!.state).toBe("collected")
    expect((await send(secret, "GET", `/agents/${agent.id}`)).json.status).toBe("active")
    // The list shows it too, without spend and network_key_held.
    const [listed] = (await send(secret, "GET", "/agents")).json.data
    expect(listed.status).toBe("active")
    expect(listed).not.toHaveProperty("spend")
    expect(listed).not.toHaveProperty("network_key_held")
    // The network key itself is kept nowhere in the record.
    const stored = await run(Effect.flatMap(AgentStore, (s) => s.get(agent.id)))
    expect(JSON.stringify(stored, (_, v) => typeof v === "bigint" ? v.toString() : v)).not.toContain("netkey_")
  })

  it("read by two at once: one is handed the approved result, the other (answered collected) shows what the first writes", async () => {
    const { secret } = await owner()
    const { agent, approvalId } = await propose(secret)
    approvals.approve(approvalId)
    approvals.setHandOverDelay(60)
    try {
      const reads = await Promise.all([0, 1, 2].map(() => send(secret, "GET", `/agents/${agent.id}`)))
      expect(reads.map((r) => r.json.status)).toEqual(["active", "active", "active"])
    } finally {
      approvals.setHandOverDelay(0)
    }
  })

  it("a result handed to a process that died before writing it: the agent waits, then once the link has expired is applied with what is known", async () => {
    const { secret } = await owner()
    const { agent, approvalId } = await propose(secret)
    approvals.approve(approvalId)
    // Another process is handed the result, and dies.
    approvals.approvals.get(approvalId)!.state = "collected"
    expect((await send(secret, "GET", `/agents/${agent.id}`)).json.status).toBe("awaiting_approval")
    clock.advance(31 * 60_000)
    const read = (await send(secret, "GET", `/agents/${agent.id}`)).json
    expect(read).toMatchObject({
      status: "active",
      approval: null,
      did: approvals.approvals.get(approvalId)!.agentDid,
      wallet_address: null,
      limits: { max_transaction_token: "0.5", max_daily_token: "2", daily_limit_credits: 10, total_limit_credits: 50.5, expires_in_days: 30 },
      network_key_held: false
    })
    // A revocation lost the same way still revokes.
    const revoke = await send(secret, "POST", `/agents/${agent.id}/revoke`)
    const revokeId = revoke.json.approve_url.split("/").pop()
    approvals.approve(revokeId)
    approvals.approvals.get(revokeId)!.state = "collected"
    clock.advance(31 * 60_000)
    expect((await send(secret, "GET", `/agents/${agent.id}`)).json.status).toBe("revoked")
  })

  it("the list collects too", async () => {
    const { secret } = await owner()
    const { agent, approvalId } = await propose(secret)
    approvals.approve(approvalId)
    const list = await send(secret, "GET", "/agents")
    expect(list.json.data.map((a: any) => [a.id, a.status])).toEqual([[agent.id, "active"]])
  })

  it("the link expires unused -> expired, nothing waiting", async () => {
    const { secret } = await owner()
    const { agent, approvalId } = await propose(secret)
    approvals.expire(approvalId)
    const read = await send(secret, "GET", `/agents/${agent.id}`)
    expect(read.json).toMatchObject({ status: "expired", approval: null, proposed: null, limits: null, did: null })
  })

  it("the network refuses the registration -> failed with its reason as it is", async () => {
    const { secret } = await owner()
    const { agent, approvalId } = await propose(secret)
    approvals.fail(approvalId, "wallet quota exceeded for did:svc:human:x")
    const read = await send(secret, "GET", `/agents/${agent.id}`)
    expect(read.json).toMatchObject({ status: "failed", error: "wallet quota exceeded for did:svc:human:x", approval: null, did: null })
    // Final: nothing more happens to it.
    expect((await send(secret, "POST", `/agents/${agent.id}/settings`, { daily_limit_credits: 1 })).json.error.code).toBe("agent_not_active")
  })
})

describe("agents: settings, keys and revocation", () => {
  it("a settings change waits for approval while the old limits hold; a second is refused; approved, the new limits replace the old", async () => {
    const { secret } = await owner()
    const agent = await activeAgent(secret)
    const change = await send(secret, "POST", `/agents/${agent.id}/settings`, { daily_limit_credits: 20, max_daily_token: null })
    expect(change.status, JSON.stringify(change.json)).toBe(200)
    expect(change.json.approve_url).toMatch(/approve\/apr_/)
    expect(change.json.agent).toMatchObject({
      status: "active",
      approval: { kind: "update", state: "pending", approve_url: change.json.approve_url },
      limits: agent.limits,
      proposed: {
        agent_name: "research.bot-1",
        capabilities: ["inference", "payments"],
        max_transaction_token: "0.5",
        max_daily_token: "",
        daily_limit_credits: 20,
        total_limit_credits: 50.5,
        expires_in_days: 30
      }
    })
    const asked = approvals.approvals.get(lastApprovalId())!.request
    expect(asked).toMatchObject({ kind: "update", agent_did: agent.did, settings: { agent_name: "research.bot-1", daily_limit_credits: 20, max_daily_token: "" } })
    expect(asked.serving_nodes).toHaveLength(2)

    // One change at a time.
    const second = await send(secret, "POST", `/agents/${agent.id}/settings`, { total_limit_credits: 1 })
    expect([second.status, second.json.error.code]).toEqual([409, "change_pending"])
    // Still pending: the old limits hold.
    expect((await send(secret, "GET", `/agents/${agent.id}`)).json.limits).toEqual(agent.limits)

    approvals.approve(lastApprovalId())
    const after = await send(secret, "GET", `/agents/${agent.id}`)
    expect(after.json).toMatchObject({
      status: "active",
      approval: null,
      proposed: null,
      limits: { max_transaction_token: "0.5", max_daily_token: null, daily_limit_credits: 20, total_limit_credits: 50.5, expires_in_days: 30 },
      did: agent.did
    })
    // Now another change may wait.
    expect((await send(secret, "POST", `/agents/${agent.id}/settings`, { total_limit_credits: 1 })).status).toBe(200)
  })

  it("a change the network refuses lapses: the agent stays active with its limits, the reason shown", async () => {
    const { secret } = await owner()
    const agent = await activeAgent(secret)
    await send(secret, "POST", `/agents/${agent.id}/settings`, { expires_in_days: 3650 })
    approvals.fail(lastApprovalId(), "cap above the network's maximum")
    const read = await send(secret, "GET", `/agents/${agent.id}`)
    expect(read.json).toMatchObject({ status: "active", approval: null, limits: agent.limits, error: "cap above the network's maximum" })
  })

  it("settings bodies: the name cannot change, something must change (400)", async () => {
    const { secret } = await owner()
    const agent = await activeAgent(secret)
    for (const body of [{}, { name: "other" }, { expires_in_days: 0 }]) {
      const answer = await send(secret, "POST", `/agents/${agent.id}/settings`, body)
      expect(answer.status, `${JSON.stringify(body)} -> ${JSON.stringify(answer.json)}`).toBe(400)
    }
  })

  it("keys: only for active agents; permissions default to inference and must be held by the calling key; machine_id must exist", async () => {
    const { secret, accountId } = await owner()
    const { agent: waiting } = await propose(secret)
    const early = await send(secret, "POST", `/agents/${waiting.id}/keys`, { name: "too early" })
    expect([early.status, early.json.error.code]).toEqual([409, "agent_not_active"])

    const agent = await activeAgent(secret)
    const key = await send(secret, "POST", `/agents/${agent.id}/keys`, { name: "worker" })
    expect(key.status, JSON.stringify(key.json)).toBe(200)
    expect(key.json).toMatchObject({ name: "worker", permissions: ["inference"], agent_id: agent.id })
    expect(key.json.secret).toMatch(/^mpk_/)

    const pinned = await send(secret, "POST", `/agents/${agent.id}/keys`, { name: "pinned", machine_id: "only", permissions: ["inference", "read"] })
    expect(pinned.json).toMatchObject({ permissions: ["inference", "read"], agent_id: agent.id })
    const unknownMachine = await send(secret, "POST", `/agents/${agent.id}/keys`, { name: "x", machine_id: "nowhere" })
    expect([unknownMachine.status, unknownMachine.json.error.code]).toEqual([404, "machine_not_found"])
    const manage = await send(secret, "POST", `/agents/${agent.id}/keys`, { name: "x", permissions: ["manage"] })
    expect(manage.status).toBe(400)

    // A manage key without inference cannot grant it (as POST /keys).
    const limited = await send(secret, "POST", "/keys", { name: "manager", permissions: ["manage", "read"] })
    const refused = await send(limited.json.secret, "POST", `/agents/${agent.id}/keys`, { name: "x" })
    expect([refused.status, refused.json.error.code, refused.json.error.scope]).toEqual([403, "key_lacks_permission", "inference"])

    // The key calls a priced model, billed to the owner; GET shows the agent's spend.
    const called = await forecast(key.json.secret)
    expect(called.status, JSON.stringify(called.json)).toBe(200)
    await new Promise((r) => setTimeout(r, 100))
    const read = await send(secret, "GET", `/agents/${agent.id}`)
    expect(read.json.spend).toEqual({ today_credits: 1, total_credits: 1 })
    const balance = await run(Effect.flatMap(Ledger, (l) => l.balance(accountId)))
    expect(balance.total_credits).toBe(99)
  })

  it("revocation waits for approval; approved, the agent is revoked and its key's next call is 401; no keys after", async () => {
    const { secret } = await owner()
    const agent = await activeAgent(secret)
    const key = (await send(secret, "POST", `/agents/${agent.id}/keys`, { name: "worker" })).json
    expect((await forecast(key.secret)).status).toBe(200)

    const revoke = await send(secret, "POST", `/agents/${agent.id}/revoke`)
    expect(revoke.status, JSON.stringify(revoke.json)).toBe(200)
    expect(revoke.json.agent).toMatchObject({ status: "active", approval: { kind: "revoke", state: "pending" }, proposed: null })
    expect(approvals.approvals.get(lastApprovalId())!.request).toEqual({ kind: "revoke", agent_did: agent.did })
    // Not approved yet: the key still works.
    expect((await forecast(key.secret)).status).toBe(200)
    const again = await send(secret, "POST", `/agents/${agent.id}/revoke`)
    expect([again.status, again.json.error.code]).toEqual([409, "change_pending"])

    approvals.approve(lastApprovalId())
    const read = await send(secret, "GET", `/agents/${agent.id}`)
    expect(read.json).toMatchObject({ status: "revoked", approval: null })
    expect(read.json.revoked_at).not.toBeNull()
    const refused = await forecast(key.secret)
    expect([refused.status, refused.json.error.code]).toEqual([401, "invalid_api_key"])
    const late = await send(secret, "POST", `/agents/${agent.id}/keys`, { name: "late" })
    expect([late.status, late.json.error.code]).toEqual([409, "agent_not_active"])
    const revokeAgain = await send(secret, "POST", `/agents/${agent.id}/revoke`)
    expect([revokeAgain.status, revokeAgain.json.error.code]).toEqual([409, "agent_not_active"])
  })

  it("revocation replaces a pending update", async () => {
    const { secret } = await owner()
    const agent = await activeAgent(secret)
    await send(secret, "POST", `/agents/${agent.id}/settings`, { daily_limit_credits: 1 })
    const revoke = await send(secret, "POST", `/agents/${agent.id}/revoke`)
    expect(revoke.json.agent.approval.kind).toBe("revoke")
  })

  it("the delegation ends at expires_at: expired, its key refused with 403 agent_expired", async () => {
    const { secret } = await owner()
    const agent = await activeAgent(secret, { ...proposal, name: "short", expires_in_days: 1 })
    const key = (await send(secret, "POST", `/agents/${agent.id}/keys`, { name: "worker" })).json
    expect((await forecast(key.secret)).status).toBe(200)
    clock.advance(86_400_000 + 1000)
    const read = await send(secret, "GET", `/agents/${agent.id}`)
    expect(read.json).toMatchObject({ status: "expired", approval: null })
    const stored = await run(Effect.flatMap(AgentStore, (s) => s.get(agent.id)))
    expect(stored?.status).toBe("expired")
    const refused = await forecast(key.secret)
    expect([refused.status, refused.json.error.code]).toEqual([403, "agent_expired"])
    const change = await send(secret, "POST", `/agents/${agent.id}/settings`, { daily_limit_credits: 1 })
    expect([change.status, change.json.error.code]).toEqual([409, "agent_not_active"])
  })
})

describe("agents: addresses and accounts", () => {
  it("the same operations under /api, same payloads", async () => {
    const { secret } = await owner()
    const { agent, approvalId } = await propose(secret, proposal, "/api")
    approvals.approve(approvalId)
    const read = await send(secret, "GET", `/api/agents/${agent.id}`)
    expect(read.json).toMatchObject({ id: agent.id, status: "active", spend: { today_credits: 0, total_credits: 0 } })
    expect((await send(secret, "GET", "/api/agents")).json.data.map((a: any) => a.id)).toEqual([agent.id])
    expect((await send(secret, "POST", `/api/agents/${agent.id}/settings`, { daily_limit_credits: 3 })).json.agent.approval.kind).toBe("update")
    expect((await send(secret, "POST", `/api/agents/${agent.id}/keys`, { name: "k" })).json.agent_id).toBe(agent.id)
    expect((await send(secret, "POST", `/api/agents/${agent.id}/revoke`)).json.agent.approval.kind).toBe("revoke")
    expect((await send(secret, "GET", "/agents")).json.data.map((a: any) => a.id)).toEqual([agent.id])
  })

  it("an unknown agent, or another account's: 404 agent_not_found on every route", async () => {
    const mine = await owner()
    const theirs = await owner()
    const agent = await activeAgent(theirs.secret)
    for (const id of ["agt_nope", agent.id]) {
      for (const [method, path, body] of [
        ["GET", `/agents/${id}`, undefined],
        ["POST", `/agents/${id}/settings`, { daily_limit_credits: 1 }],
        ["POST", `/agents/${id}/keys`, { name: "k" }],
        ["POST", `/agents/${id}/revoke`, undefined]
      ] as const) {
        const answer = await send(mine.secret, method, path, body)
        expect([answer.status, answer.json.error.code], `${method} ${path}`).toEqual([404, "agent_not_found"])
      }
    }
    expect((await send(mine.secret, "GET", "/agents")).json).toEqual({ data: [] })
  })

  it("newest first", async () => {
    const { secret } = await owner()
    const first = await propose(secret, { name: "first" })
    clock.advance(1000)
    const second = await propose(secret, { name: "second" })
    expect((await send(secret, "GET", "/agents")).json.data.map((a: any) => a.id)).toEqual([second.agent.id, first.agent.id])
  })
})

describe("agents: without an account service or a network configured", () => {
  let bare: ManagedRuntime.ManagedRuntime<any, any>
  let bareHandler: (request: Request) => Promise<Response>
  let bareDispose: () => Promise<void>
  beforeAll(async () => {
    const s = PlatformServices(stubCatalogue(), { requestUrlFromShell: true }).pipe(Layer.provideMerge(MemoryPlatformStores))
    bare = ManagedRuntime.make(s)
    const context = await bare.context()
    const web = HttpRouter.toWebHandler(
      AppRoutes.pipe(Layer.provideMerge(Layer.succeedContext(context)), Layer.provide(HttpServer.layerServices)),
      { disableLogger: true, routerConfig: ROUTER_CONFIG }
    )
    bareHandler = web.handler
    bareDispose = web.dispose
  })
  afterAll(async () => {
    await bareDispose?.()
    await bare?.dispose()
  })

  it("the platform starts; POST /agents answers 409 no_serving_nodes", async () => {
    const secret = await bare.runPromise(createAccount("bare@test.local"))
    const me = await (await bareHandler(new Request("http://platform.test/me", { headers: { authorization: `Bearer ${secret}` } }))).json()
    const personId = await bare.runPromise(standInPerson(me.id, "bare@test.local"))
    await bare.runPromise(Effect.flatMap(PeopleStore, (people) =>
      people.saveIdentity({
        account_id: me.id,
        person_id: personId,
        state: "ready",
        did: `did:svc:human:${me.id}`,
        wallet_address: "0x",
        error: null,
        updated_at: new Date().toISOString()
      })))
    const response = await bareHandler(new Request("http://platform.test/agents", {
      method: "POST",
      headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "bot" })
    }))
    const json = await response.json()
    expect([response.status, json.error.code]).toEqual([409, "no_serving_nodes"])
  })
})

describe("agents: a write lost to another process is decided again", () => {
  it("collecting after a lost swap applies the same answer to the agent as stored now, once", async () => {
    // The agent store of a platform where, at the first write of an agent becoming active, another
    // process writes the agent first (its version moves on; a field it owns changes).
    let raced = 0
    const racing = Layer.effect(AgentStore, Effect.gen(function*() {
      const inner = yield* AgentStore
      return AgentStore.of({
        ...inner,
        swap: (next) =>
          Effect.gen(function*() {
            if (raced === 0 && next.status === "active") {
              raced++
              const current = (yield* inner.get(next.id))!
              expect(yield* inner.swap({ ...current, error: "written elsewhere", version: current.version + 1 })).toBe(true)
            }
            return yield* inner.swap(next)
          })
      })
    })).pipe(Layer.provide(AgentStoreMemory))
    const local = fakeApprovals()
    const s = PlatformServices(stubCatalogue(), { agentApprovals: local.layer, network: fakeNetwork(1).layer, requestUrlFromShell: true }).pipe(
      Layer.provideMerge(Layer.merge(MemoryPlatformStores, racing))
    )
    const rt = ManagedRuntime.make(s)
    try {
      const result = await rt.runPromise(Effect.gen(function*() {
        const accountId = "acct_race"
        yield* (yield* AccountStore).insert({ id: accountId, email: "race@test.local", created_at: new Date().toISOString() })
        yield* (yield* PeopleStore).saveIdentity({
          account_id: accountId, person_id: yield* standInPerson(accountId, "race@test.local"), state: "ready", did: "did:svc:human:acct_race", wallet_address: "0x", error: null,
          updated_at: new Date().toISOString()
        })
        const keys = yield* ApiKeys
        const key = yield* keys.issue(accountId, { name: "k", permissions: ["read", "manage", "inference"] })
        const caller = yield* keys.authenticate(key.secret)
        const agents = yield* Agents
        const { agent, approve_url } = yield* agents.propose(caller, { name: "racer" }, "https://accounts.test")
        local.approve(approve_url.split("/").pop()!)
        const read = yield* agents.get(caller, agent.id)
        const stored = (yield* (yield* AgentStore).get(agent.id))!
        return { read, stored }
      }))
      expect(raced).toBe(1)
      expect(result.read).toMatchObject({ status: "active", did: expect.stringMatching(/^did:svc:machine:per_acct_race:agt_/) })
      // Decided again from the agent as stored: the other write's version was built upon (0 -> 1 -> 2).
      expect(result.stored.version).toBe(2)
      expect(result.stored.status).toBe("active")
      // The approved step clears the error the other write set (an approved step leaves none).
      expect(result.stored.error).toBeNull()
    } finally {
      await rt.dispose()
    }
  })
})
