/**
 * GET /v1/models (core/src/gateway/InferenceModels.ts) over the demo catalogue: only models a
 * machine serves now are listed, a machine going offline removes its models, the default machine;
 * and the keyless routes of core/src/http/InferenceApi.ts: /v1/models and /v1/openapi.json.
 */
import { Effect, Layer, Schema } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { readFileSync } from "node:fs"
import { resolve } from "node:path"
import { describe, expect, it } from "vitest"
import { InferenceCatalogueRoutes, inferenceOpenApiDocument } from "../../src/http/InferenceApi.ts"
import { Catalogue } from "../../src/catalogue/Catalogue.ts"
import { type CatalogueConfig, parseCatalogue } from "../../src/catalogue/CatalogueConfig.ts"
import { inferenceModels } from "../../src/gateway/InferenceModels.ts"
import { V1ModelList } from "../../src/gateway/Inference.ts"
import { type MachineState, MachineStatus } from "../../src/catalogue/MachineStatus.ts"

const demoText = readFileSync(resolve(import.meta.dirname, "../../../adapters/node-http/catalogue.demo.json"), "utf8")
const config: CatalogueConfig = Effect.runSync(parseCatalogue(demoText))

/** Sets the given machine states, then lists. */
const listAfter = (states: Record<string, MachineState>) =>
  Effect.gen(function*() {
    const status = yield* MachineStatus
    for (const [id, state] of Object.entries(states)) yield* status.set(id, state)
    return yield* inferenceModels(config)
  }).pipe(Effect.provide(MachineStatus.layerMemory(config)), Effect.runPromise)

const offline: MachineState = { health: "offline", serving_now: [] }
const summary = (list: V1ModelList) => Object.fromEntries(list.data.map((m) => [m.id, m.machines.map((x) => x.id)]))

describe("inferenceModels", () => {
  it("lists every served model with the spec's fields, machines best first", async () => {
    const list = await listAfter({})
    expect(Schema.decodeUnknownSync(V1ModelList)(list)).toEqual(list)
    expect(list.object).toBe("list")
    expect(list.default_machine).toBe("ref-local")
    expect(summary(list)).toEqual({
      "ref-chat": ["ref-local", "eu-gpu-1", "us-gpu-1"],
      "ref-embed": ["ref-local", "eu-gpu-1"],
      "ref-forecast": ["ref-local", "us-gpu-1"],
      "ref-image": ["ref-local", "eu-gpu-1"]
    })
    expect(list.data[0]).toEqual({
      id: "ref-chat",
      object: "model",
      owned_by: "ref-lab",
      name: "Reference Chat",
      modality: "text",
      endpoint: "/v1/chat/completions",
      context_length: 8192,
      max_output_tokens: 1024,
      features: ["tools", "streaming"],
      machines: [
        { id: "ref-local", name: "Reference machine (local)", region: "local" },
        { id: "eu-gpu-1", name: "Northwind EU GPU 1", region: "eu-west" },
        { id: "us-gpu-1", name: "Northwind US GPU 1", region: "us-east" }
      ]
    })
    expect(list.data.find((m) => m.id === "ref-embed")?.endpoint).toBe("/v1/embeddings")
  })

  it("removes a machine going offline, and a model when no machine serves it any more", async () => {
    const one = await listAfter({ "ref-local": offline })
    expect(summary(one)).toEqual({
      "ref-chat": ["eu-gpu-1", "us-gpu-1"],
      "ref-embed": ["eu-gpu-1"],
      "ref-forecast": ["us-gpu-1"],
      "ref-image": ["eu-gpu-1"]
    })
    expect(one.default_machine).toBe("eu-gpu-1")
    const two = await listAfter({ "ref-local": offline, "us-gpu-1": offline })
    expect(summary(two)).toEqual({ "ref-chat": ["eu-gpu-1"], "ref-embed": ["eu-gpu-1"], "ref-image": ["eu-gpu-1"] })
  })

  it("lists only what serving_now says, and ignores a machine marked offline that still reports models", async () => {
    const list = await listAfter({
      "ref-local": { health: "online", serving_now: ["ref-chat"] },
      "eu-gpu-1": { health: "offline", serving_now: ["ref-chat", "ref-embed", "ref-image"] },
      "us-gpu-1": { health: "online", serving_now: [] }
    })
    expect(summary(list)).toEqual({ "ref-chat": ["ref-local"] })
  })

  it("puts degraded machines after online ones and picks an online default", async () => {
    const list = await listAfter({ "ref-local": { health: "degraded", serving_now: ["ref-chat", "ref-embed", "ref-forecast", "ref-image"] } })
    expect(summary(list)["ref-chat"]).toEqual(["eu-gpu-1", "us-gpu-1", "ref-local"])
    expect(list.default_machine).toBe("eu-gpu-1")
  })

  it("lists nothing when nothing serves, and falls back to the first machine as default", async () => {
    const list = await listAfter({ "ref-local": offline, "eu-gpu-1": offline, "us-gpu-1": offline })
    expect(list.data).toEqual([])
    expect(list.default_machine).toBe("ref-local")
  })
})

describe("keyless inference routes", () => {
  const start = () => {
    const services = Catalogue.layer(config)
    const { handler, dispose } = HttpRouter.toWebHandler(
      InferenceCatalogueRoutes.pipe(Layer.provide(services), Layer.provide(HttpServer.layerServices)),
      { disableLogger: true }
    )
    return { fetch: (path: string) => handler(new Request(`http://platform.test${path}`)), dispose }
  }

  it("GET /v1/models answers the list as JSON", async () => {
    const app = start()
    try {
      const response = await app.fetch("/v1/models")
      expect(response.status).toBe(200)
      expect(response.headers.get("content-type")).toContain("application/json")
      const body = await response.json()
      expect(body.object).toBe("list")
      expect(body.default_machine).toBe("ref-local")
      expect(body.data.map((m: { id: string }) => m.id)).toEqual(["ref-chat", "ref-embed", "ref-forecast", "ref-image"])
    } finally {
      await app.dispose()
    }
  })

  it("GET /v1/openapi.json answers an OpenAPI 3.1 document of the five paths (and /forecasts)", async () => {
    const app = start()
    try {
      const response = await app.fetch("/v1/openapi.json")
      expect(response.status).toBe(200)
      const doc = JSON.parse(await response.text())
      expect(doc).toEqual(JSON.parse(JSON.stringify(inferenceOpenApiDocument())))
      expect(doc.openapi).toMatch(/^3\.1\./)
      expect(doc.info.version).toBe("1.0.0")
      expect(Object.keys(doc.paths).sort()).toEqual([
        "/forecasts",
        "/v1/chat/completions",
        "/v1/embeddings",
        "/v1/forecasts",
        "/v1/images/generations",
        "/v1/models"
      ])
      expect(doc.paths["/v1/models"].get.security ?? []).toEqual([])
      for (const path of ["/v1/chat/completions", "/v1/embeddings", "/v1/forecasts", "/v1/images/generations"]) {
        const op = doc.paths[path].post
        expect(op.security).toEqual([{ bearer: [] }])
        expect(op.requestBody.content["application/json"].schema).toBeDefined()
        expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(["200", "400", "401", "402", "403", "404", "502", "503"]))
      }
      expect(doc.components.securitySchemes.bearer).toMatchObject({ type: "http", scheme: "Bearer" })
      // Errors are in the inference shape.
      const bad = doc.components.schemas.V1BadRequestEncoded
      expect(bad.properties.error.required.sort()).toEqual(["code", "message", "type"])
      // Chat may stream.
      expect(Object.keys(doc.paths["/v1/chat/completions"].post.responses["200"].content).sort())
        .toEqual(["application/json", "text/event-stream"])
    } finally {
      await app.dispose()
    }
  })
})
