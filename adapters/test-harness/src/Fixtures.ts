/**
 * A small, fixed catalogue the shared tests rely on: three machines serving one chat model with
 * different health, scores and regions (so the route order is known), an embedding model, two
 * operators, packages and tiers, a credit price, and both payment rails (the test card processor,
 * the simulated chain). US B rents and EU C has a plan (offers an order can read); Idle's rent offer
 * is one an order cannot read (it says only a price per hour). No free allowance or trial (a priced call needs credits here); the
 * allowance suite has its own catalogue.
 */
import type { CatalogueConfig } from "@model-platform/core/catalogue"
import { euCPlans, propertyCatalogue } from "@model-platform/contract-kit/PropertyCatalogue"

const hardware = { gpus: [{ model: "L40S", count: 2, vram_gb: 48 }], cpu_cores: 32, memory_gb: 256, storage_gb: 2000 }
const cpuOnly = { gpus: [], cpu_cores: 8, memory_gb: 32, storage_gb: 200 }
const network = { status: "registered", reachability: "public" }
const zeroAllowances = { free: 0, builder: 0, scale: 0, trial: 0 }

/** US B's rent offer (plans/Offers.ts RentOffer): 1 core, 1 GB and 1 hour cost $0.024. */
export const usBRent = {
  currency: "USD",
  usd_per_hour: { cpu_core: 0.02, memory_gb: 0.004, gpu: 1.1, storage_gb: 0.0002 },
  min_hours: 1,
  max_hours: 720,
  max: { cpu_cores: 32, memory_gb: 256, gpu: 2, storage_gb: 2000 }
}

/** EU C's subscribe offer (plans/Offers.ts SubscribeOffer): the kit's properties run with the same one. */
export { euCPlans }

export const fixtureCatalogue: CatalogueConfig = {
  operators: [
    { id: "op-north", name: "North Compute", website: "https://north.example", description: "GPUs in the north.", featured: true, certifications: ["iso27001"] },
    { id: "op-south", name: "South Cloud", website: "https://south.example", description: "CPUs in the south.", featured: false, certifications: [] }
  ],
  machines: [
    {
      id: "m-eu-a", name: "EU A", operator: "op-north", region: "eu-west", base_url: "http://127.0.0.1:1/v1",
      hardware, serverless_models: ["chat-small", "embed-small"], rent: null, subscribe: null, network,
      score: 0.9, initial_health: "online"
    },
    {
      id: "m-us-b", name: "US B", operator: "op-north", region: "us-east", base_url: "http://127.0.0.1:1/v1",
      hardware, serverless_models: ["chat-small"], rent: usBRent, subscribe: null, network,
      score: 0.9, initial_health: "online"
    },
    {
      id: "m-eu-c", name: "EU C", operator: "op-south", region: "eu-west", base_url: "http://127.0.0.1:1/v1",
      hardware: cpuOnly, serverless_models: ["chat-small"], rent: null, subscribe: euCPlans, network,
      score: 1, initial_health: "offline"
    },
    {
      id: "m-idle", name: "Idle", operator: "op-south", region: "ap-south", base_url: "http://127.0.0.1:1/v1",
      hardware: cpuOnly, serverless_models: [], rent: { usd_per_hour: 0.5 }, subscribe: null, network,
      score: 0.5, initial_health: "online"
    }
  ],
  models: [
    {
      id: "chat-small", name: "Chat Small", family: "test", description: "A small chat model.", modality: "text",
      service: "chat", owned_by: "platform", endpoint: "/v1/chat/completions", context_length: 8192,
      max_output_tokens: 1024, features: ["tools"],
      pricing: { input_credits_per_mtok: 0.5, output_credits_per_mtok: 1.5, credits_per_request: 0 }
    },
    {
      id: "embed-small", name: "Embed Small", family: "test", description: "A small embedding model.",
      modality: "text", service: "embeddings", owned_by: "platform", endpoint: "/v1/embeddings",
      context_length: 512, max_output_tokens: 0, features: [],
      pricing: { input_credits_per_mtok: 0.02, output_credits_per_mtok: 0, credits_per_request: 0 },
      limits: { dimensions: [256, 128], max_inputs: 256 }
    },
    {
      id: "orphan", name: "Orphan", family: "test", description: "Served by no machine.", modality: "text",
      service: "chat", owned_by: "platform", endpoint: "/v1/chat/completions", context_length: 2048,
      max_output_tokens: 256, features: [],
      pricing: { input_credits_per_mtok: 1, output_credits_per_mtok: 1, credits_per_request: 0 }
    }
  ],
  packages: [
    { id: "starter", name: "Starter", description: "10 dollars of credits.", kind: "package", amount_usd: 10, credits: 10000, machine_id: null },
    { id: "eu-a-offer", name: "EU A offer", description: "Credits for EU A.", kind: "offer", amount_usd: 20, credits: 25000, machine_id: "m-eu-a" }
  ],
  payments: {
    card: { processor: "test" },
    stablecoin: { processor: "simulated", options: [{ chain: "base", token: "USDC", decimals: 6 }] },
    charging_starts_at: null
  },
  prices: {
    credits_per_usd: 1000,
    services: [
      { service: "chat", group: "inference", name: "Chat", unit: "mtok", unit_label: "million tokens", credits_per_unit: 1, allowances: { ...zeroAllowances, builder: 5000, scale: 30000 } },
      { service: "embeddings", group: "inference", name: "Embeddings", unit: "mtok", unit_label: "million tokens", credits_per_unit: 0.02, allowances: zeroAllowances }
    ]
  },
  // The kit's properties run with the same tiers (contract-kit PropertyCatalogue.ts).
  tiers: propertyCatalogue.tiers
}
