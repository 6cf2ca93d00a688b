/**
 * The catalogue the fuzz suite runs on: every machine points at one reference machine started by
 * the test and serves every model, all online, so no valid request has a reason to get a 5xx
 * (there is always a machine serving the model). Both payment rails are set (the test card
 * processor, the simulated chain) so orders can be paid and the account funded; rpm is far above
 * what the suite sends, so rate limits never decide an answer.
 */
import type { CatalogueConfig, MachineConfig, ModelConfig } from "@model-platform/core/catalogue"
import { euCPlans, usBRent } from "./Fixtures.ts"

/** What the reference machine must serve for this catalogue (its `models` option). */
export const FUZZ_MACHINE_MODELS = [
  "ref-chat",
  "ref-embed",
  "ref-forecast",
  "ref-image",
  { id: "free-chat", kind: "chat" as const }
]

const hardware = { gpus: [{ model: "L4", count: 1, vram_gb: 24 }], cpu_cores: 8, memory_gb: 32, storage_gb: 100 }
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
  context_length: 8192, max_output_tokens: endpoint === "/v1/chat/completions" ? 256 : 0, features: ["tools"],
  pricing, ...extra
})

const MODEL_IDS = ["ref-chat", "free-chat", "ref-embed", "ref-forecast", "ref-image"]

/** `machineUrl`: the reference machine's base URL (ending in /v1). */
export const fuzzCatalogue = (machineUrl: string): CatalogueConfig => {
  const machine = (id: string, region: string, extra: Partial<MachineConfig>): MachineConfig => ({
    id, name: id, operator: "op-fuzz", region, base_url: machineUrl, hardware, serverless_models: MODEL_IDS,
    rent: null, subscribe: null, network, score: 0.9, initial_health: "online", ...extra
  })
  return {
    operators: [
      { id: "op-fuzz", name: "Fuzz Op", website: "https://op.example", description: "", featured: false, certifications: [] }
    ],
    machines: [
      machine("m-fuzz-a", "eu-west", {}),
      machine("m-fuzz-b", "us-east", { rent: usBRent, subscribe: euCPlans, score: 0.8 })
    ],
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
    packages: [
      { id: "starter", name: "Starter", description: "Credits.", kind: "package", amount_usd: 10, credits: 10000, machine_id: null },
      { id: "fuzz-offer", name: "Offer", description: "Pinned credits.", kind: "offer", amount_usd: 20, credits: 25000, machine_id: "m-fuzz-a" }
    ],
    payments: {
      card: { processor: "test" },
      stablecoin: { processor: "simulated", options: [{ chain: "base", token: "USDC", decimals: 6 }] },
      charging_starts_at: null
    },
    prices: {
      credits_per_usd: 1000,
      services: ["chat", "embeddings", "forecasts", "images"].map((service) => ({
        service, group: "inference", name: service, unit: "mtok", unit_label: "million tokens", credits_per_unit: 1, allowances: zero
      }))
    },
    tiers: [
      { tier: 0, name: "Starter", purchased_credits: 0, rpm: 1_000_000, monthly_limit_credits: 1_000_000 },
      { tier: 1, name: "Builder", purchased_credits: 10000, rpm: 1_000_000, monthly_limit_credits: 10_000_000 }
    ]
  }
}
