/**
 * Agent keys at the gateway (docs/agents.md "Agent keys at the gateway"): billed to the owner's
 * credits with the agent on every usage record; the agent's daily and total limits checked in the
 * same store step as the balance, so 32 concurrent calls stop exactly at the daily limit; 401 once
 * the agent is revoked, 403 agent_expired once its delegation has ended — each read at the call.
 */
import { makeAgent } from "@model-platform/contract-kit/AgentContract"
import { AccountStore, ApiKeys } from "@model-platform/core/keys"
import { Ledger } from "@model-platform/core/ledger"
import { MICRO_PER_CREDIT } from "@model-platform/core/kernel"
import { AgentStore } from "@model-platform/core/agents"
import { UsageStore } from "@model-platform/core/billing"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { AgentRecord } from "@model-platform/core/agents"
import { call, startStubGateway, stubCatalogue } from "./gatewayStub.ts"

let runtime: ReturnType<typeof startStubGateway>
const run = <A, E>(effect: Effect.Effect<A, E, any>): Promise<A> => runtime.runPromise(effect as Effect.Effect<A, E, never>)
beforeAll(() => {
  // A forecast costs one credit.
  runtime = startStubGateway(undefined, stubCatalogue({ forecastCreditsPerRequest: 1 }))
})
afterAll(async () => {
  await runtime.dispose()
})

const credits = (n: number) => BigInt(n) * MICRO_PER_CREDIT
const forecast = { model: "forecast", history: [1, 2, 3], horizon: 1 }
const codeOf = (text: string) => JSON.parse(text).error?.code

/** An account with 100 credits, an active agent (limits of `overrides`) and a key of it. */
const agentKey = (overrides: Partial<AgentRecord> = {}) =>
  Effect.gen(function*() {
    const accountId = `acct_${Math.random().toString(36).slice(2)}`
    yield* (yield* AccountStore).insert({ id: accountId, email: `${accountId}@test.local`, created_at: new Date().toISOString() })
    yield* (yield* Ledger).credit(accountId, { ref: `seed_${accountId}`, machine_id: null, amount: credits(100), type: "credit_added" })
    const base = yield* makeAgent(accountId, { approval: null, expires_at: new Date(Date.now() + 86_400_000).toISOString() })
    const agent: AgentRecord = { ...base, settings: { ...base.settings!, daily_limit: credits(10), total_limit: credits(50) }, ...overrides }
    yield* (yield* AgentStore).insert(agent)
    const key = yield* (yield* ApiKeys).issue(accountId, { name: "agent key", permissions: ["inference"], machine_id: null, agent_id: agent.id })
    return { accountId, agent, auth: `Bearer ${key.secret}` }
  })

describe("agent keys at the gateway", () => {
  it("32 concurrent calls against a daily limit of 10 credits: 10 answered, the rest 402 agent_daily_limit; usage carries the agent", async () => {
    const { accountId, agent, auth } = await run(agentKey())
    const answers = await Promise.all(Array.from({ length: 32 }, () => run(call("/v1/forecasts", auth, forecast))))
    expect(answers.filter((a) => a.status === 200)).toHaveLength(10)
    for (const refused of answers.filter((a) => a.status !== 200)) {
      expect([refused.status, codeOf(refused.text)], refused.text).toEqual([402, "agent_daily_limit"])
    }
    // Exactly 10 credits were charged to the owner, each call's record naming the agent.
    await new Promise((r) => setTimeout(r, 200))
    const balance = await run(Effect.flatMap(Ledger, (l) => l.balance(accountId)))
    expect(balance.total_credits).toBe(90)
    const usage = await run(Effect.flatMap(UsageStore, (u) => u.list({ account_id: accountId, from: "2000-01-01T00:00:00.000Z", to: "2100-01-01T00:00:00.000Z" })))
    expect(usage.map((r) => r.agent_id)).toEqual(Array(10).fill(agent.id))
  })

  it("the total limit stops calls across days: 402 agent_total_limit", async () => {
    const { auth } = await run(agentKey({ settings: { capabilities: ["inference"], max_transaction_wei: null, max_daily_wei: null, daily_limit: null, total_limit: credits(3), expires_in_days: 30 } }))
    for (let i = 0; i < 3; i++) expect((await run(call("/v1/forecasts", auth, forecast))).status).toBe(200)
    const refused = await run(call("/v1/forecasts", auth, forecast))
    expect([refused.status, codeOf(refused.text)], refused.text).toEqual([402, "agent_total_limit"])
  })

  it("a revoked agent's key: its next call is 401; an expired delegation: 403 agent_expired", async () => {
    const { agent, auth } = await run(agentKey())
    expect((await run(call("/v1/forecasts", auth, forecast))).status).toBe(200)
    expect(await run(Effect.flatMap(AgentStore, (s) => s.swap({ ...agent, status: "revoked", revoked_at: new Date().toISOString(), version: 1 })))).toBe(true)
    const revoked = await run(call("/v1/forecasts", auth, forecast))
    expect([revoked.status, codeOf(revoked.text)], revoked.text).toEqual([401, "invalid_api_key"])

    const lapsed = await run(agentKey({ expires_at: new Date(Date.now() - 1).toISOString() }))
    const expired = await run(call("/v1/forecasts", lapsed.auth, forecast))
    expect([expired.status, codeOf(expired.text)], expired.text).toEqual([403, "agent_expired"])
  })
})
