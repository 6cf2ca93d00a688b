/**
 * Issue 10, finding 1: no sequence of requests from one key can cool a machine down. The machine
 * here is healthy for every well-formed call and fails, in every way a machine can fail, on calls
 * carrying a `poison` field (as a real machine resets a body above its own size limit, or crashes
 * on an input): no connection, no answer in time, retryable statuses, a body that breaks off or is
 * not JSON, a stream that breaks after its head, a forecast of nulls. Whatever one key sends, in
 * any order, the machine stays in service (the gateway's canaries pass) and another key is served.
 * And a machine that really fails (every call) is cooled down, by its canaries.
 */
import { ApiKeys } from "@model-platform/core/ApiKeys"
import { Catalogue } from "@model-platform/core/Catalogue"
import type { CatalogueConfig, ModelConfig } from "@model-platform/core/CatalogueConfig"
import { Gateway, type GatewayResponse } from "@model-platform/core/gateway/Gateway"
import type { Endpoint } from "@model-platform/core/gateway/Validation"
import { Ledger } from "@model-platform/core/Ledger"
import { AccountStore } from "@model-platform/core/ports/AccountStore"
import { MachineClient, MachineFailure, type MachineResponse } from "@model-platform/core/ports/MachineClient"
import { Effect, Layer, ManagedRuntime, Stream } from "effect"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { MemoryPlatformStores } from "../src/MemoryPlatformStores.ts"

const POISONS = ["reset", "timeout", "500", "502", "503", "429", "404", "broken-body", "not-json", "drop-stream", "nulls"] as const
type Poison = (typeof POISONS)[number]

const encoder = new TextEncoder()
const bytes = (text: string) => Stream.make(encoder.encode(text))
const json = (status: number, body: unknown): MachineResponse => ({
  status,
  headers: { "content-type": "application/json" },
  body: bytes(JSON.stringify(body))
})
const broken = (machineId: string, first: string): Stream.Stream<Uint8Array, MachineFailure> =>
  Stream.concat(bytes(first), Stream.fail(new MachineFailure({ machine_id: machineId, reason: "dropped", message: "reset mid-body" })))

const usage = { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 }
const chunk = (delta: unknown, extra: Record<string, unknown> = {}) =>
  `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", created: 1, model: "chat", choices: [{ index: 0, delta, finish_reason: null }], ...extra })}\n\n`

/** A well-formed answer for each endpoint. */
const healthy = (path: string, body: Record<string, unknown>): MachineResponse => {
  switch (path) {
    case "/chat/completions":
      return body.stream === true
        ? {
          status: 200,
          headers: { "content-type": "text/event-stream" },
          body: bytes(chunk({ role: "assistant", content: "ok" }) + `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", created: 1, model: "chat", choices: [], usage })}\n\ndata: [DONE]\n\n`)
        }
        : json(200, { id: "c1", object: "chat.completion", created: 1, model: "chat", choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }], usage })
    case "/embeddings":
      return json(200, { object: "list", model: "embed", data: [{ object: "embedding", index: 0, embedding: [0.6, 0.8] }], usage: { prompt_tokens: 1, total_tokens: 1 } })
    default:
      return json(200, { object: "forecast", model: "forecast", history_used: 2, point: [1], quantile_levels: [0.5], quantiles: [[1]], generation_time_ms: 1 })
  }
}

/** A machine that fails only on what a call carries: `poison` in the body. */
const machineClient = (alwaysFail: { value: boolean }) =>
  Layer.succeed(MachineClient)(MachineClient.of({
    models: () => Effect.succeed(["chat", "embed", "forecast"]),
    post: (machine, path, raw, options) =>
      Effect.suspend(() => {
        const body = raw as Record<string, unknown>
        const poison = (alwaysFail.value ? "500" : body.poison) as Poison | undefined
        const fail = (reason: "unreachable" | "timeout") => Effect.fail(new MachineFailure({ machine_id: machine.id, reason, message: reason }))
        switch (poison) {
          case undefined:
            return Effect.succeed(healthy(path, body))
          case "reset":
            return fail("unreachable")
          case "timeout":
            return Effect.andThen(Effect.sleep(Math.min(options.firstByteTimeoutMs, 20)), fail("timeout"))
          case "broken-body":
            return Effect.succeed({ status: 200, headers: {}, body: broken(machine.id, "{\"id\":") })
          case "not-json":
            return Effect.succeed({ status: 200, headers: {}, body: bytes("<html>oops</html>") })
          case "drop-stream":
            return Effect.succeed(
              body.stream === true
                ? { status: 200, headers: { "content-type": "text/event-stream" }, body: broken(machine.id, chunk({ content: "o" })) }
                : { status: 200, headers: {}, body: broken(machine.id, "{") }
            )
          case "nulls":
            return Effect.succeed(
              path === "/forecasts"
                ? json(200, { object: "forecast", model: "forecast", history_used: 2, point: [null], quantile_levels: [0.5], quantiles: [[null]], generation_time_ms: 1 })
                : json(500, { error: { message: "nulls" } })
            )
          default:
            return Effect.succeed(json(Number(poison), { error: { message: `injected ${poison}` } }))
        }
      })
  }))

const model = (id: string, endpoint: ModelConfig["endpoint"]): ModelConfig => ({
  id, name: id, family: "f", description: id, modality: "text", service: "svc", owned_by: "x", endpoint,
  context_length: 8192, max_output_tokens: endpoint === "/v1/chat/completions" ? 64 : 0, features: [],
  pricing: { input_credits_per_mtok: 0, output_credits_per_mtok: 0, credits_per_request: 0 },
  ...(endpoint === "/v1/forecasts" ? { limits: { max_history: 64, max_horizon: 8 } } : {})
})

const catalogue: CatalogueConfig = {
  operators: [{ id: "op", name: "Op", website: "https://op.example", description: "", featured: false, certifications: [] }],
  machines: [{
    id: "only", name: "only", operator: "op", region: "eu", base_url: "http://only.invalid/v1",
    hardware: { gpus: [], cpu_cores: 1, memory_gb: 1, storage_gb: 1 }, serverless_models: ["chat", "embed", "forecast"],
    rent: null, subscribe: null, network: { status: "registered", reachability: "public" }, score: 1, initial_health: "online"
  }],
  models: [model("chat", "/v1/chat/completions"), model("embed", "/v1/embeddings"), model("forecast", "/v1/forecasts")],
  packages: [],
  payments: { card: null, stablecoin: null, charging_starts_at: null },
  prices: { credits_per_usd: null, services: [{ service: "svc", group: "g", name: "svc", unit: "u", unit_label: "u", credits_per_unit: 0, allowances: { free: 0, builder: 0, scale: 0, trial: 0 } }] },
  tiers: [{ tier: 0, name: "t", purchased_credits: 0, rpm: 100_000, monthly_limit_credits: 0 }]
}

const start = (alwaysFail: { value: boolean }) =>
  ManagedRuntime.make(
    Gateway.layer({ firstByteTimeoutMs: 50, canaryTimeoutMs: 500, canaryRetryMs: 5, cooldownMs: 60_000, keepAliveMs: 10 }).pipe(
      Layer.provideMerge(Layer.mergeAll(Ledger.layer, ApiKeys.layer, machineClient(alwaysFail))),
      Layer.provideMerge(Catalogue.layer(catalogue)),
      Layer.provideMerge(MemoryPlatformStores)
    )
  )

const newKey = Effect.gen(function*() {
  const id = `acct_${Math.random().toString(36).slice(2)}`
  yield* (yield* AccountStore).insert({ id, email: `${id}@test.local`, created_at: new Date().toISOString() })
  const key = yield* (yield* ApiKeys).issue(id, { name: "k", permissions: ["inference"], machine_id: null })
  return `Bearer ${key.secret}`
})

/** Runs one call to its end: a stream is read whole (the client stays to the end). */
const callOnce = (endpoint: Endpoint, auth: string, body: unknown) =>
  Effect.gen(function*() {
    const gateway = yield* Gateway
    const result = yield* Effect.result(gateway.call(endpoint, auth, JSON.stringify(body)))
    if (result._tag === "Failure") return "status" in result.failure ? result.failure.status : 429 // RateLimited
    const response: GatewayResponse = result.success
    if (response._tag === "Events") yield* Stream.runDrain(response.stream)
    return response._tag === "Body" ? response.status : 200
  })

interface Call {
  readonly endpoint: Endpoint
  readonly stream: boolean
  readonly poison: Poison | undefined
}

const bodyOf = (call: Call): Record<string, unknown> => {
  const poison = call.poison === undefined ? {} : { poison: call.poison }
  switch (call.endpoint) {
    case "/v1/chat/completions":
      return { model: "chat", messages: [{ role: "user", content: "hi" }], ...(call.stream ? { stream: true } : {}), ...poison }
    case "/v1/embeddings":
      return { model: "embed", input: "hi", ...poison }
    default:
      return { model: "forecast", history: [1, 2, 3], horizon: 1, ...poison }
  }
}

const callArb: fc.Arbitrary<Call> = fc.record({
  endpoint: fc.constantFrom<Endpoint>("/v1/chat/completions", "/v1/embeddings", "/v1/forecasts"),
  stream: fc.boolean(),
  poison: fc.option(fc.constantFrom(...POISONS), { nil: undefined, freq: 5 })
}).map((c) => ({ ...c, stream: c.endpoint === "/v1/chat/completions" && c.stream }))

describe("gateway failure accounting (issue 10, finding 1)", () => {
  it("no sequence of requests from one key cools a machine down: its canaries pass, another key is served", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(callArb, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 6 }),
        async (rounds) => {
          const runtime = start({ value: false })
          try {
            await runtime.runPromise(Effect.gen(function*() {
              const attacker = yield* newKey
              // Rounds one after another, the calls of a round at once.
              for (const round of rounds) {
                yield* Effect.forEach(round, (call) => callOnce(call.endpoint, attacker, bodyOf(call)), { concurrency: "unbounded" })
              }
              const gateway = yield* Gateway
              yield* gateway.idle
              expect(yield* gateway.coolingDown).toEqual([])
              const victim = yield* newKey
              expect(yield* callOnce("/v1/chat/completions", victim, bodyOf({ endpoint: "/v1/chat/completions", stream: false, poison: undefined })))
                .toBe(200)
            }))
          } finally {
            await runtime.dispose()
          }
        }
      ),
      { numRuns: 40 }
    )
  }, 60_000)

  it("a machine failing every call is cooled down by its failed canaries", async () => {
    const alwaysFail = { value: true }
    const runtime = start(alwaysFail)
    try {
      await runtime.runPromise(Effect.gen(function*() {
        const key = yield* newKey
        expect(yield* callOnce("/v1/embeddings", key, { model: "embed", input: "hi" })).toBe(502)
        const gateway = yield* Gateway
        yield* gateway.idle
        expect(yield* gateway.coolingDown).toEqual(["only"])
        // The only machine cools down: 503 no_capacity, and it is not called.
        expect(yield* callOnce("/v1/embeddings", key, { model: "embed", input: "hi" })).toBe(503)
      }))
    } finally {
      await runtime.dispose()
    }
  })
})
