/**
 * The contract kit's table arbitraries (BillingTables.ts) make only tables a catalogue admits: a
 * catalogue (no machines) whose models are a generated price table and whose tiers a generated
 * tier table decodes strictly and passes validateCatalogue.
 */
import { describe, expect, it } from "@effect/vitest"
import { priceTableArb, tierTableArb } from "@model-platform/contract-kit/BillingTables"
import { propertyCatalogue } from "@model-platform/contract-kit/PropertyCatalogue"
import { CatalogueConfig, validateCatalogue } from "@model-platform/core/catalogue"
import { creditsToMicro } from "@model-platform/core/kernel"
import { Schema } from "effect"
import fc from "fast-check"

const decode = Schema.decodeUnknownSync(CatalogueConfig)

describe("the kit's price and tier table arbitraries", () => {
  it("make tables a catalogue admits, tiers rising in threshold, rpm and monthly limit", () => {
    fc.assert(
      fc.property(priceTableArb, tierTableArb, (models, tiers) => {
        const config = decode(JSON.parse(JSON.stringify({ ...propertyCatalogue, machines: [], models, tiers })), { onExcessProperty: "error" })
        expect(validateCatalogue(config)).toEqual([])
        for (const m of models) {
          for (const price of Object.values(m.pricing)) expect(creditsToMicro(price)).toBeTypeOf("bigint")
        }
        tiers.forEach((t, i) => {
          if (i === 0) return
          const before = tiers[i - 1]!
          expect(t.rpm).toBeGreaterThanOrEqual(before.rpm)
          expect(creditsToMicro(t.monthly_limit_credits)! >= creditsToMicro(before.monthly_limit_credits)!).toBe(true)
        })
      }),
      { numRuns: 500 }
    )
  })
})
