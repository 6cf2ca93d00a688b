/**
 * The catalogue the kit's payment properties run with (TopUpProperty.ts, RenewalProperty.ts,
 * DepositWatchProperty.ts): what they read of one, and no more. A credit price (1000 credits a
 * dollar), the test card processor and the simulated chain, one machine (EU C) with a plan a card
 * renews, and the usage tiers. The prices and tiers a store's billing is checked with are the
 * caller's (BillingProperties.ts); these only make the payments' sums known.
 */
import type { CatalogueConfig } from "@model-platform/core/catalogue"

/** EU C's subscribe offer (plans/Offers.ts SubscribeOffer): a Basic plan of 30 days. */
export const euCPlans = {
  currency: "USD",
  period_days: 30,
  plans: [{ id: "basic", name: "Basic", usd_per_period: 9.99, models: ["chat-small"], payment_methods: ["card", "stablecoin"] }]
}

const zeroAllowances = { free: 0, builder: 0, scale: 0, trial: 0 }

export const propertyCatalogue: CatalogueConfig = {
  operators: [
    { id: "op-south", name: "South Cloud", website: "https://south.example", description: "CPUs in the south.", featured: false, certifications: [] }
  ],
  machines: [
    {
      id: "m-eu-c", name: "EU C", operator: "op-south", region: "eu-west", base_url: "http://127.0.0.1:1/v1",
      hardware: { gpus: [], cpu_cores: 8, memory_gb: 32, storage_gb: 200 }, serverless_models: ["chat-small"], rent: null,
      subscribe: euCPlans, network: { status: "registered", reachability: "public" }, score: 1, initial_health: "offline"
    }
  ],
  models: [
    {
      id: "chat-small", name: "Chat Small", family: "test", description: "A small chat model.", modality: "text",
      service: "chat", owned_by: "platform", endpoint: "/v1/chat/completions", context_length: 8192,
      max_output_tokens: 1024, features: ["tools"],
      pricing: { input_credits_per_mtok: 0.5, output_credits_per_mtok: 1.5, credits_per_request: 0 }
    }
  ],
  packages: [],
  payments: {
    card: { processor: "test" },
    stablecoin: { processor: "simulated", options: [{ chain: "base", token: "USDC", decimals: 6 }] },
    charging_starts_at: null
  },
  prices: {
    credits_per_usd: 1000,
    services: [
      { service: "chat", group: "inference", name: "Chat", unit: "mtok", unit_label: "million tokens", credits_per_unit: 1, allowances: zeroAllowances }
    ]
  },
  tiers: [
    { tier: 0, name: "Starter", purchased_credits: 0, rpm: 60, monthly_limit_credits: 1000 },
    { tier: 1, name: "Builder", purchased_credits: 10000, rpm: 300, monthly_limit_credits: 50000 },
    { tier: 2, name: "Scale", purchased_credits: 100000, rpm: 1200, monthly_limit_credits: 500000 }
  ]
}
