/**
 * GET /metrics through the real Node server (docs/operations.md "Metrics"): after one streamed
 * chat call to a reference machine, the exposition shows the call's duration, its time to first
 * token, its tokens and the credits it was charged (exactly its usage record's), under bounded
 * labels only (operation, model, machine, route, status: never the account or the key); and who
 * may read it.
 */
import { startReferenceMachine, type ReferenceMachine } from "@model-platform/reference-machine/ReferenceMachine"
import type { UsageRecord } from "@model-platform/core/billing"
import { MemoryPlatformStores } from "@model-platform/memory-stores/MemoryPlatformStores"
import { type Exposition, parseExposition } from "@model-platform/test-harness/Prometheus"
import { Layer, Redacted } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Database } from "@model-platform/postgres-stores/database"
import { PgPlatformStores } from "@model-platform/postgres-stores"
import { gatewayCatalogue, MACHINE_MODELS, usageOf } from "./gatewaySupport.ts"
import { startNodeServer } from "./support.ts"

const CREDITS = 5_000_000n

describe.each([
  ["memory stores", () => MemoryPlatformStores],
  ["embedded Postgres", () => PgPlatformStores.pipe(Layer.provide(Database.layer({ dataDir: Database.MEMORY })))]
] as const)("GET /metrics on node-http, %s", (_name, stores) => {
  let machine: ReferenceMachine
  let platform: Awaited<ReturnType<typeof startNodeServer>>
  beforeAll(async () => {
    machine = await startReferenceMachine({ port: 0, id: "m-a", models: MACHINE_MODELS, tokenDelayMs: 5 })
    platform = await startNodeServer(gatewayCatalogue([{ id: "m-a", url: machine.url, score: 1 }]), stores(), {
      platform: { metricsToken: Redacted.make("scrape-secret-1") }
    })
  }, 60_000)
  afterAll(async () => {
    await platform?.close()
    await machine?.close()
  })

  const scrape = async (headers: Record<string, string> = {}): Promise<Exposition> => {
    const response = await platform.fetch("/metrics", { headers })
    expect(response.status, await response.clone().text()).toBe(200)
    expect(response.headers.get("content-type")).toContain("text/plain")
    return parseExposition(await response.text())
  }

  /** A new account with credits: its key and its id. */
  const fundedAccount = async () => {
    const accountKey = await platform.newAccount!()
    const me = (await (await platform.fetch("/me", { headers: { authorization: `Bearer ${accountKey}` } })).json()) as { id: string }
    await platform.postCredits([{
      id: `le_${crypto.randomUUID()}`, account_id: me.id, machine_id: null, amount: CREDITS, type: "credit_added",
      ref: `grant_${me.id}`, created_at: new Date().toISOString()
    }])
    return { accountKey, me }
  }

  it("after one streamed chat call: its duration, time to first token, tokens and credits", async () => {
    const { accountKey, me } = await fundedAccount()
    const before = await scrape()
    expect(before.find("gen_ai_server_request_duration_seconds_count", { gen_ai_request_model: "ref-chat" })).toEqual([])

    const response = await platform.fetch("/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${accountKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "ref-chat", stream: true, messages: [{ role: "user", content: "Count to twenty, slowly." }] })
    })
    expect(response.status).toBe(200)
    const events = await response.text()
    expect(events).toContain("data: [DONE]")

    // Metering is written in the background: wait for the call's usage record.
    let record: UsageRecord | undefined
    for (let i = 0; i < 100 && record === undefined; i++) {
      // The seed runs on the server's own services (its usage store among them).
      record = (await platform.seed!(usageOf(me.id) as never) as ReadonlyArray<UsageRecord>)[0]
      if (record === undefined) await new Promise((r) => setTimeout(r, 50))
    }
    expect(record).toBeDefined()
    const metrics = await scrape()
    const call = { gen_ai_operation_name: "chat", gen_ai_request_model: "ref-chat", machine: "m-a" }

    expect(metrics.value("gen_ai_server_request_duration_seconds_count", call)).toBe(1)
    const duration = metrics.value("gen_ai_server_request_duration_seconds_sum", call)!
    expect(duration).toBeGreaterThan(0)
    expect(metrics.value("gen_ai_server_time_to_first_token_seconds_count", call)).toBe(1)
    const ttft = metrics.value("gen_ai_server_time_to_first_token_seconds_sum", call)!
    expect(ttft).toBeGreaterThan(0)
    // The first token comes before the stream's end (the machine waits 5 ms between tokens).
    expect(ttft).toBeLessThan(duration)
    expect(metrics.types.get("gen_ai_server_time_to_first_token_seconds")).toBe("histogram")

    const tokens = { gen_ai_operation_name: "chat", gen_ai_request_model: "ref-chat" }
    expect(metrics.value("gen_ai_client_token_usage_sum", { ...tokens, gen_ai_token_type: "input" })).toBe(Number(record!.input_tokens))
    expect(metrics.value("gen_ai_client_token_usage_sum", { ...tokens, gen_ai_token_type: "output" })).toBe(Number(record!.output_tokens))
    expect(Number(record!.output_tokens)).toBeGreaterThan(0)
    const charged = metrics.value("model_platform_credits_charged_total", tokens)
    expect(record!.credits).toBeGreaterThan(0n)
    expect(charged).toBe(Number(record!.credits))

    expect(metrics.value("http_server_request_duration_seconds_count", {
      http_request_method: "POST", http_route: "/v1/chat/completions", http_response_status_code: "200"
    })).toBe(1)
    expect(metrics.value("model_platform_calls_in_flight", { gen_ai_operation_name: "chat" })).toBe(0)
    expect(metrics.value("model_platform_settlements_pending")).toBe(0)
    expect(metrics.value("model_platform_reservations_held")).toBe(0)
    expect(metrics.value("model_platform_credits_held")).toBe(0)
    expect(metrics.value("model_platform_machine_up", { machine: "m-a" })).toBe(1)
    expect(metrics.value("model_platform_machine_cooling_down", { machine: "m-a" })).toBe(0)

    // Bounded labels only: no account, no key, nothing a client wrote.
    const labels = new Set(metrics.samples.flatMap((s) => Object.keys(s.labels)))
    expect([...labels].sort()).toEqual(
      ["error_type", "gen_ai_operation_name", "gen_ai_request_model", "gen_ai_token_type", "http_request_method", "http_response_status_code",
        "http_route", "le", "machine", "store"].filter((l) => labels.has(l))
    )
    const text = JSON.stringify(metrics.samples)
    expect(text).not.toContain(me.id)
    expect(text).not.toContain(accountKey.slice(0, 12))
  }, 60_000)

  it("while a stream is in flight: the call counts in flight and its reservation and credits as held; after it, none", async () => {
    const { accountKey } = await fundedAccount()
    machine.faults.set({ token_delay_ms: 100 })
    try {
      const response = await platform.fetch("/v1/chat/completions", {
        method: "POST",
        headers: { authorization: `Bearer ${accountKey}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "ref-chat", stream: true, messages: [{ role: "user", content: "Tell a long story." }] })
      })
      expect(response.status).toBe(200)
      const reader = response.body!.getReader()
      await reader.read()
      const during = await scrape()
      expect(during.value("model_platform_calls_in_flight", { gen_ai_operation_name: "chat" })).toBe(1)
      expect(during.value("model_platform_reservations_held")).toBe(1)
      expect(during.value("model_platform_credits_held")).toBeGreaterThan(0)
      while (!(await reader.read()).done);
    } finally {
      machine.faults.reset()
    }
    let after = await scrape()
    for (let i = 0; i < 50 && after.value("model_platform_reservations_held") !== 0; i++) {
      await new Promise((r) => setTimeout(r, 50))
      after = await scrape()
    }
    expect(after.value("model_platform_calls_in_flight", { gen_ai_operation_name: "chat" })).toBe(0)
    expect(after.value("model_platform_reservations_held")).toBe(0)
    expect(after.value("model_platform_credits_held")).toBe(0)
  }, 60_000)

  it("a client leaving a stream: the stream is drained (counted), the call billed all the same, its duration marked client_closed", async () => {
    const { accountKey, me } = await fundedAccount()
    const before = (await scrape()).value("model_platform_streams_drained_total") ?? 0
    machine.faults.set({ token_delay_ms: 40 })
    try {
      const controller = new AbortController()
      const response = await platform.fetch("/v1/chat/completions", {
        method: "POST",
        headers: { authorization: `Bearer ${accountKey}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "ref-chat", stream: true, messages: [{ role: "user", content: "Count to 30." }] }),
        signal: controller.signal
      })
      expect(response.status).toBe(200)
      await response.body!.getReader().read()
      controller.abort()
      let record: UsageRecord | undefined
      for (let i = 0; i < 100 && record === undefined; i++) {
        record = (await platform.seed!(usageOf(me.id) as never) as ReadonlyArray<UsageRecord>)[0]
        if (record === undefined) await new Promise((r) => setTimeout(r, 50))
      }
      expect(record!.credits).toBeGreaterThan(0n)
    } finally {
      machine.faults.reset()
    }
    const after = await scrape()
    expect(after.value("model_platform_streams_drained_total")).toBe(before + 1)
    expect(after.find("gen_ai_server_request_duration_seconds_count", { error_type: "client_closed", gen_ai_request_model: "ref-chat" })
      .reduce((n, s) => n + s.value, 0)).toBeGreaterThanOrEqual(1)
  }, 60_000)

  it("a failed call is counted with its error code as error_type", async () => {
    const response = await platform.fetch("/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${platform.ownerSecret}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "no-such-model", messages: [{ role: "user", content: "hi" }] })
    })
    expect(response.status).toBe(404)
    const code = ((await response.json()) as { error: { code: string } }).error.code
    const metrics = await scrape()
    // The model the client named is not a catalogue id: it is no label.
    expect(metrics.find("gen_ai_server_request_duration_seconds_count", { error_type: code })).toEqual([
      { name: "gen_ai_server_request_duration_seconds_count", labels: { gen_ai_operation_name: "chat", error_type: code }, value: 1 }
    ])
    expect(JSON.stringify(metrics.samples)).not.toContain("no-such-model")
  })

  it("a client that says it is forwarded for another is not a loopback client: 403 without the token, 401 with a wrong one", async () => {
    const forwarded = await platform.fetch("/metrics", { headers: { "x-forwarded-for": "203.0.113.9" } })
    expect(forwarded.status).toBe(403)
    expect(await forwarded.json()).toEqual({ error: { code: "forbidden", message: expect.stringContaining("METRICS_TOKEN") } })
    const wrong = await platform.fetch("/metrics", { headers: { "forwarded": "for=203.0.113.9", authorization: "Bearer nope" } })
    expect(wrong.status).toBe(401)
    expect(await wrong.json()).toEqual({ error: { code: "invalid_metrics_token", message: expect.any(String) } })
    await scrape({ "x-forwarded-for": "203.0.113.9", authorization: "Bearer scrape-secret-1" })
  })
})
