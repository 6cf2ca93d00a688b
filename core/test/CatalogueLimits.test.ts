/**
 * The limits of a model as GET /models/{id} shows them (Catalogue.model): by the model's kind, the
 * catalogue's defaults filled in where its entry sets none (docs/catalogue.md "Model"), the same
 * bounds the gateway holds a call to.
 */
import { Effect, Schema } from "effect"
import { readFileSync } from "node:fs"
import { resolve } from "node:path"
import { describe, expect, it } from "vitest"
import { Catalogue, ModelWithRoutes } from "../src/catalogue/Catalogue.ts"
import { type CatalogueConfig, parseCatalogue } from "../src/catalogue/CatalogueConfig.ts"

const demoText = readFileSync(resolve(import.meta.dirname, "../../adapters/node-http/catalogue.demo.json"), "utf8")
const demo: CatalogueConfig = Effect.runSync(parseCatalogue(demoText))
const unlimited = (id: string, as: string) => {
  const { limits: _, ...model } = demo.models.find((m) => m.id === id)!
  return { ...model, id: as }
}
const config: CatalogueConfig = {
  ...demo,
  models: [...demo.models, unlimited("ref-forecast", "plain-forecast"), unlimited("ref-image", "plain-image"), unlimited("ref-embed", "plain-embed")]
}

const limitsOf = (id: string) =>
  Effect.gen(function*() {
    const model = yield* (yield* Catalogue).model(id)
    expect(Schema.decodeUnknownSync(ModelWithRoutes)(model)).toEqual(model)
    return model.limits
  }).pipe(Effect.provide(Catalogue.layer(config)), Effect.runPromise)

describe("GET /models/{id}: limits", () => {
  it("shows the catalogue's limits of each kind of model", async () => {
    expect(await limitsOf("ref-forecast")).toEqual({ max_history: 512, max_horizon: 64 })
    expect(await limitsOf("ref-image")).toEqual({ image_sizes: ["64x64", "128x128", "256x256"] })
    expect(await limitsOf("ref-embed")).toEqual({ dimensions: [1024, 768, 512, 256, 128, 64, 32], max_inputs: 256 })
    expect(await limitsOf("ref-chat")).toEqual({})
  })

  it("fills in the defaults where a model's entry sets none", async () => {
    const context = demo.models.find((m) => m.id === "ref-forecast")!.context_length
    expect(await limitsOf("plain-forecast")).toEqual({ max_history: context, max_horizon: 64 })
    expect(await limitsOf("plain-image")).toEqual({ image_sizes: ["1024x1024", "512x512", "256x256"] })
    expect(await limitsOf("plain-embed")).toEqual({ dimensions: [], max_inputs: 256 })
  })
})
