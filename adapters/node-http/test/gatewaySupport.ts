/**
 * Support for the gateway tests: a Node server serving the inference routes over memory stores,
 * with machines pointing at reference machines, and helpers to read balances and usage.
 */
import { ApiKeysLive, ErrorShapeMiddleware, InferenceRoutes } from "@model-platform/core/http"
import { NodeHttpServer } from "@effect/platform-node"
import { AccountStore, ApiKeys, KeyStore } from "@model-platform/core/keys"
import { Catalogue, MachineStatus } from "@model-platform/core/catalogue"
import type { CatalogueConfig, MachineConfig, ModelConfig } from "@model-platform/core/catalogue"
import { Gateway, type GatewayConfig, MachineHttpLayer } from "@model-platform/core/gateway"
import type { MachineClient } from "@model-platform/core/gateway"
import { Ledger, LedgerStore } from "@model-platform/core/ledger"
import type { Permission } from "@model-platform/core/keys"
import { type UsageRecord, UsageStore } from "@model-platform/core/billing"
import { MemoryStores } from "@model-platform/memory-stores/MemoryStores"
import { MemoryPlatformStores } from "@model-platform/memory-stores/MemoryPlatformStores"
import { Effect, Layer, ManagedRuntime } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { createServer } from "node:http"
import { MachineNodeHttpLayer } from "../src/MachineNodeHttp.ts"
import { V1Gate, V1Listener } from "../src/V1Listener.ts"

/** The machine clients the gateway tests run over: the Node shell's (node:http) and fetch (Lambda's). */
export const MACHINE_CLIENTS: ReadonlyArray<{ readonly name: string; readonly layer: Layer.Layer<MachineClient> }> = [
  { name: "node:http", layer: MachineNodeHttpLayer },
  { name: "fetch", layer: MachineHttpLayer }
]

const hardware = { gpus: [], cpu_cores: 8, memory_gb: 32, storage_gb: 100 }
const network = { status: "registered", reachability: "public" }
const zero = { free: 0, builder: 0, scale: 0, trial: 0 }

const model = (
  id: string,
  endpoint: ModelConfig["endpoint"],
  service: string,
  pricing: ModelConfig["pricing"],
  extra: Partial<ModelConfig> = {}
): ModelConfig => ({
  id, name: id, family: "ref", description: id, modality: "text", service, owned_by: "ref-lab", endpoint,
  context_length: 8192, max_output_tokens: endpoint === "/v1/chat/completions" ? 1024 : 0, features: ["tools"],
  pricing, ...extra
})

export const MODELS = ["ref-chat", "free-chat", "ref-embed", "ref-forecast", "ref-image"] as const
/** What a reference machine serves for this catalogue: the reference models and free-chat (a chat model). */
export const MACHINE_MODELS = ["ref-chat", "ref-embed", "ref-forecast", "ref-image", { id: "free-chat", kind: "chat" as const }]

/** A catalogue whose machines are the given base URLs (m-a first by score), card rail set: charging open. */
export const gatewayCatalogue = (
  machines: ReadonlyArray<{ readonly id: string; readonly url: string; readonly score: number }>,
  options: { readonly rpm?: number; readonly charging?: boolean } = {}
): CatalogueConfig => ({
  operators: [{ id: "op", name: "Op", website: "https://op.example", description: "", featured: false, certifications: [] }],
  machines: machines.map((m): MachineConfig => ({
    id: m.id, name: m.id, operator: "op", region: "eu-west", base_url: m.url, hardware,
    serverless_models: [...MODELS], rent: null, subscribe: null, network, score: m.score, initial_health: "online"
  })),
  models: [
    model("ref-chat", "/v1/chat/completions", "chat", { input_credits_per_mtok: 2, output_credits_per_mtok: 6, credits_per_request: 0 }),
    model("free-chat", "/v1/chat/completions", "chat", { input_credits_per_mtok: 0, output_credits_per_mtok: 0, credits_per_request: 0 }),
    model("ref-embed", "/v1/embeddings", "embeddings", { input_credits_per_mtok: 0.5, output_credits_per_mtok: 0, credits_per_request: 0 }, {
      limits: { dimensions: [1024, 256, 64], max_inputs: 256 }
    }),
    model("ref-forecast", "/v1/forecasts", "forecasts", { input_credits_per_mtok: 0, output_credits_per_mtok: 0, credits_per_request: 0.25 }, {
      limits: { max_history: 512, max_horizon: 64 }
    }),
    model("ref-image", "/v1/images/generations", "images", { input_credits_per_mtok: 0, output_credits_per_mtok: 0, credits_per_request: 1.5 })
  ],
  packages: [],
  payments: { card: options.charging === false ? null : { processor: "test" }, stablecoin: null, charging_starts_at: null },
  prices: {
    credits_per_usd: 1000,
    services: ["chat", "embeddings", "forecasts", "images"].map((service) => ({
      service, group: "inference", name: service, unit: "mtok", unit_label: "million tokens", credits_per_unit: 1, allowances: zero
    }))
  },
  tiers: [
    { tier: 0, name: "Starter", purchased_credits: 0, rpm: options.rpm ?? 1000, monthly_limit_credits: 1000 },
    { tier: 1, name: "Builder", purchased_credits: 10000, rpm: 5000, monthly_limit_credits: 50000 }
  ]
})

export interface GatewayServer {
  readonly url: string
  readonly run: <A, E>(effect: Effect.Effect<A, E, Services>) => Promise<A>
  readonly close: () => Promise<void>
}

type Services = Gateway | Ledger | LedgerStore | UsageStore | AccountStore | KeyStore | ApiKeys | MachineStatus

export const startGatewayServer = async (
  catalogue: CatalogueConfig,
  config: Partial<GatewayConfig> = {},
  machineClient: Layer.Layer<MachineClient> = MachineNodeHttpLayer
): Promise<GatewayServer> => {
  const stores = MemoryPlatformStores
  const services = Gateway.layer(config).pipe(
    Layer.provideMerge(Layer.mergeAll(Ledger.layer, ApiKeysLive, machineClient)),
    Layer.provideMerge(Catalogue.layer(catalogue)),
    Layer.provideMerge(stores)
  )
  // As the Node shell serves them (Server.ts): the calls by the plain /v1 listener, the rest by the router.
  const gate = new V1Gate()
  const http = HttpRouter.serve(Layer.mergeAll(InferenceRoutes, ErrorShapeMiddleware), {
    disableListenLog: true,
    disableLogger: true
  }).pipe(
    Layer.provideMerge(V1Listener.layer(gate)),
    Layer.provideMerge(NodeHttpServer.layer(() => gate.install(createServer()), { port: 0, host: "127.0.0.1" }))
  )
  const runtime = ManagedRuntime.make(http.pipe(Layer.provideMerge(services)))
  const server = await runtime.runPromise(HttpServer.HttpServer)
  if (server.address._tag === "UnixPathAddress") throw new Error("expected a TCP address")
  return {
    url: `http://127.0.0.1:${server.address.port}`,
    run: (effect) => runtime.runPromise(effect),
    close: () => runtime.dispose()
  }
}

/** A new account with one key; credited `credits` micro-credits account-wide when given. */
export const newAccount = (
  options: { readonly credits?: bigint; readonly permissions?: ReadonlyArray<Permission>; readonly machine_id?: string } = {}
) =>
  Effect.gen(function*() {
    const accounts = yield* AccountStore
    const id = `acct_${Math.random().toString(36).slice(2)}`
    yield* accounts.insert({ id, email: `${id}@test.local`, created_at: new Date().toISOString() })
    const key = yield* (yield* ApiKeys).issue(id, {
      name: "test",
      permissions: options.permissions ?? ["inference", "read"],
      machine_id: options.machine_id ?? null
    })
    if (options.credits !== undefined && options.credits > 0n) {
      yield* (yield* Ledger).credit(id, { ref: `grant_${id}`, machine_id: null, amount: options.credits, type: "credit_added" })
    }
    return { accountId: id, keyId: key.id, secret: key.secret }
  })

/** Available micro-credits of an account (every scope), and what is held by pending reservations. */
export const balanceOf = (accountId: string) =>
  Effect.gen(function*() {
    const scopes = yield* (yield* LedgerStore).balances(accountId)
    return {
      available: scopes.reduce((n, s) => n + s.posted - s.held, 0n),
      held: scopes.reduce((n, s) => n + s.held, 0n)
    }
  })

export const usageOf = (accountId: string): Effect.Effect<ReadonlyArray<UsageRecord>, never, UsageStore> =>
  Effect.gen(function*() {
    return yield* (yield* UsageStore).list({
      account_id: accountId,
      from: "2000-01-01T00:00:00.000Z",
      to: "2100-01-01T00:00:00.000Z"
    })
  })

/** Cost in micro-credits at a price per million tokens given in micro-credits (rounded up). */
export const tokenCost = (input: number, output: number, inPerMtok: bigint, outPerMtok: bigint): bigint =>
  (BigInt(input) * inPerMtok + BigInt(output) * outPerMtok + 999_999n) / 1_000_000n
