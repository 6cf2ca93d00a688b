/**
 * The contract kit's money properties (@model-platform/contract-kit/BillingProperties) on the
 * SQLite ledger store: conservation and no overspend, priced by this app's own price table and by
 * tables the kit generates. (Tiers only rise needs an OrderStore too: this app keeps none.)
 */
import { conservationProperty, noOverspendProperty } from "@model-platform/contract-kit/BillingProperties"
import type { PriceTable } from "@model-platform/contract-kit/BillingTables"
import { sqliteLedgerStore } from "../src/SqliteLedgerStore.ts"

/** This app's models: credits per million tokens in and out, and per request (whole micro-credits). */
const prices: PriceTable = [
  {
    id: "chat-mini", name: "Chat Mini", family: "demo", description: "A small chat model.", modality: "text",
    service: "chat", owned_by: "app", endpoint: "/v1/chat/completions", context_length: 8192, max_output_tokens: 1024,
    features: [], pricing: { input_credits_per_mtok: 0.15, output_credits_per_mtok: 0.6, credits_per_request: 0.000001 }
  },
  {
    id: "free-echo", name: "Free Echo", family: "demo", description: "Costs nothing.", modality: "text",
    service: "chat", owned_by: "app", endpoint: "/v1/chat/completions", context_length: 2048, max_output_tokens: 256,
    features: [], pricing: { input_credits_per_mtok: 0, output_credits_per_mtok: 0, credits_per_request: 0 }
  }
]

conservationProperty("SQLite: conservation, this app's prices", sqliteLedgerStore(":memory:"), { prices, numRuns: 30 })
conservationProperty("SQLite: conservation, generated prices", sqliteLedgerStore(":memory:"), { numRuns: 30 })
noOverspendProperty("SQLite: no overspend, this app's prices", sqliteLedgerStore(":memory:"), { prices, numRuns: 30 })
noOverspendProperty("SQLite: no overspend, generated prices", sqliteLedgerStore(":memory:"), { numRuns: 30 })
