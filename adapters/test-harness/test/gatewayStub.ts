/**
 * A gateway over memory stores and a simulated machine ("only", serving chat, embed and forecast),
 * called directly (no HTTP): for tests of what the gateway does with what a machine answers. The
 * machine answers every well-formed call well and fails, in the way named, on a poisoned call
 * (`poisoned`: a field the gateway passes on carries the poison); `answers` may replace its answer
 * per path.
 */
import { ApiKeysLive, toInferenceError } from "@model-platform/core/http"
import { AccountStore, ApiKeys } from "@model-platform/core/keys"
import { Catalogue } from "@model-platform/core/catalogue"
import type { CatalogueConfig, ModelConfig } from "@model-platform/core/catalogue"
import {
  Gateway,
  type GatewayConfig,
  type GatewayResponse,
  MachineClient,
  MachineFailure,
  type MachineResponse
} from "@model-platform/core/gateway"
import type { Endpoint } from "@model-platform/core/gateway"
import { Ledger } from "@model-platform/core/ledger"
import { Effect, Layer, ManagedRuntime, Stream } from "effect"
import { MemoryPlatformStores } from "@model-platform/memory-stores/MemoryPlatformStores"
import { withPlan } from "../src/CataloguePlans.ts"

export const POISONS = ["reset", "timeout", "500", "502", "503", "429", "404", "broken-body", "not-json", "drop-stream", "nulls"] as const
export type Poison = (typeof POISONS)[number]

/**
 * A body the machine fails on, in the way named. The poison travels in a field the gateway passes
 * on (a body carries only its endpoint's fields): `user` for chat and embeddings, and for forecasts
 * a frequency_seconds of FORECAST_POISON_BASE plus the poison's index.
 */
const FORECAST_POISON_BASE = 1_000_000
export const poisoned = (body: Record<string, unknown>, poison: Poison): Record<string, unknown> =>
  "history" in body ? { ...body, frequency_seconds: FORECAST_POISON_BASE + POISONS.indexOf(poison) } : { ...body, user: `poison:${poison}` }

const poisonOf = (body: Record<string, unknown>): Poison | undefined => {
  if (typeof body.user === "string" && body.user.startsWith("poison:")) return body.user.slice("poison:".length) as Poison
  return typeof body.frequency_seconds === "number" && body.frequency_seconds >= FORECAST_POISON_BASE
    ? POISONS[body.frequency_seconds - FORECAST_POISON_BASE]
    : undefined
}

const encoder = new TextEncoder()
const bytes = (text: string) => Stream.make(encoder.encode(text))
export const json = (status: number, body: unknown): MachineResponse => ({
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
export const healthy = (path: string, body: Record<string, unknown>): MachineResponse => {
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

export interface StubMachine {
  /** Every call fails (500), well-formed or not. */
  alwaysFail: boolean
  /** Replaces the healthy answer of a path ("/forecasts", ...). */
  answers: Record<string, (body: Record<string, unknown>) => MachineResponse>
}

/** A machine that fails only on what a call carries: a poisoned body. */
const machineClient = (stub: StubMachine) =>
  Layer.succeed(MachineClient)(MachineClient.of({
    models: () => Effect.succeed(["chat", "embed", "forecast"]),
    post: (machine, path, raw, options) =>
      Effect.suspend(() => {
        const body = raw as Record<string, unknown>
        const poison = stub.alwaysFail ? "500" : poisonOf(body)
        const fail = (reason: "unreachable" | "timeout") => Effect.fail(new MachineFailure({ machine_id: machine.id, reason, message: reason }))
        switch (poison) {
          case undefined:
            return Effect.succeed((stub.answers[path] ?? ((b) => healthy(path, b)))(body))
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

export const stubCatalogue = (options: { readonly forecastCreditsPerRequest?: number } = {}): CatalogueConfig => ({
  operators: [{ id: "op", name: "Op", website: "https://op.example", description: "", featured: false, certifications: [] }],
  machines: [{
    id: "only", name: "only", operator: "op", region: "eu", base_url: "http://only.invalid/v1",
    hardware: { gpus: [], cpu_cores: 1, memory_gb: 1, storage_gb: 1 }, serverless_models: ["chat", "embed", "forecast"],
    rent: null, subscribe: null, network: { status: "registered", reachability: "public" }, score: 1, initial_health: "online"
  }],
  models: [
    model("chat", "/v1/chat/completions"),
    model("embed", "/v1/embeddings"),
    {
      ...model("forecast", "/v1/forecasts"),
      pricing: { input_credits_per_mtok: 0, output_credits_per_mtok: 0, credits_per_request: options.forecastCreditsPerRequest ?? 0 }
    }
  ],
  packages: [],
  // Charging is open (a card rail) when some model is priced.
  payments: { card: options.forecastCreditsPerRequest ? { processor: "test" } : null, stablecoin: null, charging_starts_at: null },
  prices: { credits_per_usd: null, services: [{ service: "svc", group: "g", name: "svc", unit: "u", unit_label: "u", credits_per_unit: 0, allowances: { free: 0, builder: 0, scale: 0, trial: 0 } }] },
  tiers: [{ tier: 0, name: "t", purchased_credits: 0, rpm: 100_000, monthly_limit_credits: 1_000_000 }]
})

/** `stubCatalogue` with a plan "p" of chat on its machine, for keys scoped to a plan. */
export const planCatalogue = (): CatalogueConfig =>
  withPlan(stubCatalogue(), { id: "p", name: "P", usd_per_period: 5, models: ["chat"], payment_methods: ["card"] })

/** The gateway's runtime (dispose it after); `stub` may be changed while it runs. */
export const startStubGateway = (
  stub: StubMachine = { alwaysFail: false, answers: {} },
  catalogue: CatalogueConfig = stubCatalogue(),
  config: Partial<GatewayConfig> = {}
) =>
  ManagedRuntime.make(
    Gateway.layer({ firstByteTimeoutMs: 50, canaryTimeoutMs: 500, canaryRetryMs: 5, cooldownMs: 60_000, keepAliveMs: 10, ...config }).pipe(
      Layer.provideMerge(Layer.mergeAll(Ledger.layer, ApiKeysLive, machineClient(stub))),
      Layer.provideMerge(Catalogue.layer(catalogue)),
      Layer.provideMerge(MemoryPlatformStores)
    )
  )

/** A new account with an inference key (and `credits` micro-credits); the key's id and Authorization header. */
export const newKey = (credits = 0n) =>
  Effect.gen(function*() {
    const id = `acct_${Math.random().toString(36).slice(2)}`
    yield* (yield* AccountStore).insert({ id, email: `${id}@test.local`, created_at: new Date().toISOString() })
    const key = yield* (yield* ApiKeys).issue(id, { name: "k", permissions: ["inference"], machine_id: null })
    if (credits > 0n) yield* (yield* Ledger).credit(id, { ref: `grant_${id}`, machine_id: null, amount: credits, type: "credit_added" })
    return { accountId: id, keyId: key.id, auth: `Bearer ${key.secret}` }
  })

/**
 * Runs one call to its end (a stream is read whole: the client stays); its status and body text.
 * A string body is sent as it is.
 */
export const call = (endpoint: Endpoint, auth: string, body: unknown) =>
  Effect.gen(function*() {
    const gateway = yield* Gateway
    // The gateway's, the key's and its standing's refusals answer in the inference shape as http answers them.
    const result = yield* Effect.result(
      gateway.call(endpoint, auth, typeof body === "string" ? body : JSON.stringify(body)).pipe(Effect.mapError(toInferenceError))
    )
    if (result._tag === "Failure") {
      const failure = result.failure
      return { status: failure.status, text: JSON.stringify({ error: failure.error }) }
    }
    const response: GatewayResponse = result.success
    if (response._tag === "Events") {
      const chunks = yield* Stream.runCollect(response.stream)
      return { status: 200, text: Array.from(chunks, (c) => new TextDecoder().decode(c)).join("") }
    }
    return { status: response.status, text: new TextDecoder().decode(response.body) }
  })

/** The status of one call run to its end. */
export const callOnce = (endpoint: Endpoint, auth: string, body: unknown) => Effect.map(call(endpoint, auth, body), (r) => r.status)

