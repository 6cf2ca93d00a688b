/**
 * The tables the billing properties price with (BillingProperties.ts), as a catalogue carries
 * them (core/src/catalogue/CatalogueConfig.ts): a price table is models with their pricing (credits
 * per million tokens and per request, at most 6 decimals: whole micro-credits per million tokens and per
 * request), a tier table is usage tiers (core/src/billing/Tiers.ts). A caller passes its own
 * catalogue's `models` and `tiers`, or lets the arbitraries below make them.
 */
import type { TierConfig } from "@model-platform/core/billing"
import type { CatalogueConfig, ModelConfig } from "@model-platform/core/catalogue"
import { microToCredits } from "@model-platform/core/kernel"
import fc from "fast-check"

/** Models and their prices (a catalogue's `models`); the properties read `id` and `pricing`. */
export type PriceTable = ReadonlyArray<ModelConfig>
/** Usage tiers (a catalogue's `tiers`). */
export type TierTable = CatalogueConfig["tiers"]

/** A credit amount with at most 6 decimals, from whole micro-credits in [min, max]. */
const creditsArb = (min: bigint, max: bigint): fc.Arbitrary<number> => fc.bigInt({ min, max }).map(microToCredits)

/** One micro-credit per token is 1 credit per million tokens; prices up to 100 credits per million tokens. */
const perMtokArb = fc.oneof(
  { weight: 1, arbitrary: fc.constant(0) },
  { weight: 4, arbitrary: creditsArb(1n, 100_000_000n) }
)

/** A model of a price table: a chat model whose prices are any whole micro-credits (0 included). */
export const pricedModelArb = (id: string): fc.Arbitrary<ModelConfig> =>
  fc.record({
    input_credits_per_mtok: perMtokArb,
    output_credits_per_mtok: perMtokArb,
    credits_per_request: fc.oneof(fc.constant(0), creditsArb(1n, 1_000_000n))
  }).map((pricing) => ({
    id,
    name: id,
    family: "kit",
    description: "A model of a generated price table.",
    modality: "text",
    service: "chat",
    owned_by: "platform",
    endpoint: "/v1/chat/completions" as const,
    context_length: 8192,
    max_output_tokens: 4096,
    features: [],
    pricing
  }))

/** A price table of 1 to 4 models (`model-0`, `model-1`, ...), free ones and dear ones included. */
export const priceTableArb: fc.Arbitrary<PriceTable> = fc.integer({ min: 1, max: 4 }).chain((n) =>
  fc.tuple(...Array.from({ length: n }, (_, i) => pricedModelArb(`model-${i}`)))
)

/**
 * A tier table as a catalogue must list it (validateCatalogue): 1 to 5 tiers, the first at 0
 * purchased credits, thresholds strictly rising, and rpm and monthly limits rising with them.
 */
export const tierTableArb: fc.Arbitrary<TierTable> = fc.array(
  fc.record({
    threshold: fc.bigInt({ min: 1n, max: 50_000n * 1_000_000n }),
    rpm: fc.integer({ min: 0, max: 1_000 }),
    limit: fc.bigInt({ min: 0n, max: 100_000n * 1_000_000n })
  }),
  { minLength: 0, maxLength: 4 }
).chain((steps) =>
  fc.record({ rpm: fc.integer({ min: 1, max: 600 }), limit: fc.bigInt({ min: 0n, max: 10_000n * 1_000_000n }) }).map((first) => {
    let threshold = 0n
    let rpm = first.rpm
    let limit = first.limit
    const tiers: Array<TierConfig> = [{ tier: 0, name: "Tier 0", purchased_credits: 0, rpm, monthly_limit_credits: microToCredits(limit) }]
    steps.forEach((step, i) => {
      threshold += step.threshold
      rpm += step.rpm
      limit += step.limit
      tiers.push({
        tier: i + 1,
        name: `Tier ${i + 1}`,
        purchased_credits: microToCredits(threshold),
        rpm,
        monthly_limit_credits: microToCredits(limit)
      })
    })
    return tiers
  })
)
