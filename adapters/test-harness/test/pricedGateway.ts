/**
 * A gateway whose one chat model is priced, over memory stores built once and a machine that
 * answers at once, called directly (no HTTP): for tests of what the gateway charges and holds
 * (Settlement.test.ts, GatewayLeases.test.ts). The stores are built by the test, so that a
 * "restarted" gateway finds what a killed one left; the test wraps their GatewayStore to count
 * or break its steps. gatewayStub.ts is its unpriced sibling, for what a machine answers; its
 * `newKey` makes the accounts here too.
 */
import { AccountNotices, type NoticeFollower } from "@model-platform/core/kernel"
import { ApiKeysLive } from "@model-platform/core/http"
import { Catalogue, type CatalogueConfig, type ModelConfig } from "@model-platform/core/catalogue"
import {
  Gateway,
  type GatewayConfig,
  GatewayStore,
  type GatewayStoreShape,
  MachineClient,
  type MachineResponse,
  type MeteringJournal
} from "@model-platform/core/gateway"
import { Ledger } from "@model-platform/core/ledger"
import { type Context, Effect, Layer, ManagedRuntime, Stream } from "effect"
import type { MemoryJournal } from "@model-platform/memory-stores/MemoryMeteringJournal"
import { MemoryPlatformStores } from "@model-platform/memory-stores/MemoryPlatformStores"

const encoder = new TextEncoder()
const bytes = (text: string) => Stream.make(encoder.encode(text))
/** Every answer reports this usage: 10 input and 5 output tokens, at 2 and 6 credits per Mtok. */
const usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 }
/** What each answered call is charged, in micro-credits (50): its usage at the model's prices, rounded up. */
export const COST = (10n * 2_000_000n + 5n * 6_000_000n + 999_999n) / 1_000_000n
/** What a test's account is granted: enough for every call a test makes. */
export const CREDIT = 1_000_000_000n

const answer = (stream: boolean): MachineResponse =>
  stream
    ? {
      status: 200,
      headers: { "content-type": "text/event-stream" },
      body: bytes(
        `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", created: 1, model: "chat", choices: [{ index: 0, delta: { content: "ok" }, finish_reason: null }] })}\n\n` +
          `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", created: 1, model: "chat", choices: [], usage })}\n\ndata: [DONE]\n\n`
      )
    }
    : {
      status: 200,
      headers: { "content-type": "application/json" },
      body: bytes(JSON.stringify({ id: "c1", object: "chat.completion", created: 1, model: "chat", choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }], usage }))
    }

/** A machine that answers at once (streamed when asked); 400 to a body with `user: "bad"`; never to `user: "hang"`. */
const machine = Layer.succeed(MachineClient)(MachineClient.of({
  models: () => Effect.succeed(["chat"]),
  post: (_machine, _path, raw) => {
    const { stream, user } = raw as { stream?: boolean; user?: string }
    if (user === "hang") return Effect.never
    return Effect.succeed(
      user === "bad"
        ? { status: 400, headers: { "content-type": "application/json" }, body: bytes("{\"error\":{\"message\":\"bad\"}}") }
        : answer(stream === true)
    )
  }
}))

const chat: ModelConfig = {
  id: "chat", name: "chat", family: "f", description: "chat", modality: "text", service: "chat", owned_by: "x",
  endpoint: "/v1/chat/completions", context_length: 8192, max_output_tokens: 64, features: [],
  pricing: { input_credits_per_mtok: 2, output_credits_per_mtok: 6, credits_per_request: 0 }
}

/** One operator, one machine "m" serving "chat", and one tier of `rpm` requests a minute. */
export const pricedCatalogue = (rpm = 100_000): CatalogueConfig => ({
  operators: [{ id: "op", name: "Op", website: "https://op.example", description: "", featured: false, certifications: [] }],
  machines: [{
    id: "m", name: "m", operator: "op", region: "eu", base_url: "http://m.invalid/v1",
    hardware: { gpus: [], cpu_cores: 1, memory_gb: 1, storage_gb: 1 }, serverless_models: ["chat"],
    rent: null, subscribe: null, network: { status: "registered", reachability: "public" }, score: 1, initial_health: "online"
  }],
  models: [chat],
  packages: [],
  payments: { card: { processor: "test" }, stablecoin: null, charging_starts_at: null },
  prices: { credits_per_usd: 1000, services: [{ service: "chat", group: "g", name: "chat", unit: "mtok", unit_label: "u", credits_per_unit: 1, allowances: { free: 0, builder: 0, scale: 0, trial: 0 } }] },
  tiers: [{ tier: 0, name: "t", purchased_credits: 0, rpm, monthly_limit_credits: 1_000_000 }]
})

export type Stores = Layer.Success<typeof MemoryPlatformStores>

/** The memory stores, built once, so that a "restarted" gateway finds what the killed one left. */
export const buildStores = () => ManagedRuntime.make(MemoryPlatformStores).context()

export interface PricedGatewayOptions<N> {
  /** Over `speculativeDispatch: false`: the machine is called only after admission (core/src/gateway/GatewayConfig.ts). */
  readonly config?: Partial<GatewayConfig> | undefined
  /** The stores' GatewayStore as the gateway sees it: the test's counting or failing wrapper. */
  readonly store: (store: GatewayStoreShape) => GatewayStoreShape
  readonly journal?: { readonly layer: Layer.Layer<MeteringJournal> } | undefined
  /** AccountNotices, or Layer.empty: without notices no lease is lent (core/src/gateway/Leases.ts). */
  readonly notices: Layer.Layer<N>
  /** The tier's rpm (pricedCatalogue). */
  readonly rpm?: number | undefined
}

/** A gateway process on `stores` (dispose it after). */
export const pricedGateway = <N>(stores: Context.Context<Stores>, options: PricedGatewayOptions<N>) => {
  const wrapped = Layer.effect(GatewayStore, Effect.map(GatewayStore, (store) => GatewayStore.of(options.store(store))))
  return ManagedRuntime.make(
    Gateway.layer({ speculativeDispatch: false, ...options.config }).pipe(
      Layer.provideMerge(options.journal === undefined ? Layer.empty : options.journal.layer),
      Layer.provideMerge(Layer.mergeAll(Ledger.layer, ApiKeysLive, machine)),
      Layer.provideMerge(Catalogue.layer(pricedCatalogue(options.rpm))),
      Layer.provideMerge(options.notices),
      Layer.provideMerge(Layer.merge(Layer.succeedContext(stores), wrapped.pipe(Layer.provide(Layer.succeedContext(stores)))))
    )
  )
}

/**
 * Notices in memory: every follower hears every `tell`, and they are always live. One layer given
 * to several gateways makes them processes that hear each other's notices.
 */
export const inProcessNotices = () => {
  const followers = new Set<NoticeFollower>()
  return Layer.succeed(AccountNotices)(AccountNotices.of({
    live: () => true,
    follow: (follower) =>
      Effect.acquireRelease(Effect.sync(() => void followers.add(follower)), () => Effect.sync(() => void followers.delete(follower))),
    tell: (accountId) => Effect.sync(() => followers.forEach((f) => f.changed(accountId)))
  }))
}

/**
 * A gateway process on `stores`, leasing (notices of its own unless `notices` is given);
 * `counted.admits` counts its admission store steps (GatewayLeases.test.ts, GatewayLeases.property.test.ts).
 */
export const leasingGateway = (
  stores: Context.Context<Stores>,
  options: {
    readonly rpm?: number
    readonly journal?: MemoryJournal
    readonly config?: Partial<GatewayConfig>
    readonly notices?: Layer.Layer<AccountNotices>
    /** The store's admission answers arrive this much later, as over a network (0: at once). */
    readonly admitLatencyMs?: number
  } = {}
) => {
  const counted = { admits: 0 }
  const runtime = pricedGateway(stores, {
    config: { creditLeases: true, ...options.config },
    journal: options.journal,
    notices: options.notices ?? inProcessNotices(),
    rpm: options.rpm,
    store: (store) => ({
      admit: (admissions) =>
        Effect.suspend(() => {
          counted.admits += 1
          const latency = options.admitLatencyMs ?? 0
          return latency === 0 ? store.admit(admissions) : Effect.tap(store.admit(admissions), () => Effect.sleep(latency))
        }),
      commit: store.commit
    })
  })
  return { runtime, counted }
}

/** A chat call's body: "hi" to "chat", with `extra` fields. */
export const chatBody = (extra: Record<string, unknown> = {}) =>
  JSON.stringify({ model: "chat", messages: [{ role: "user", content: "hi" }], ...extra })

/** One call to its end (a stream read whole); its exit. */
export const callOnce = (auth: string, extra: Record<string, unknown> = {}) =>
  Effect.exit(Effect.gen(function*() {
    const response = yield* (yield* Gateway).call("/v1/chat/completions", auth, chatBody(extra))
    if (response._tag === "Events") yield* Stream.runDrain(response.stream)
    return response
  }))
