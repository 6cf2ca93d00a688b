/**
 * Answers through the platform's Node server, the official `openai` client and the reference
 * machine (issue 10, findings 3, 6, 7, 8), and machine clients that never die on a body; the
 * catalogue's bounds on forecast horizons and image sizes (issue 22, finding 7).
 */
import { startReferenceMachine, type ReferenceMachine } from "@model-platform/reference-machine/ReferenceMachine"
import { Gateway, MachineClient } from "@model-platform/core/gateway"
import { Effect } from "effect"
import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  balanceOf,
  gatewayCatalogue,
  type GatewayServer,
  MACHINE_CLIENTS,
  MACHINE_MODELS,
  newAccount,
  startGatewayServer,
  usageOf
} from "./gatewaySupport.ts"

const CREDITS = 1_000_000_000n

/** JSON text nested `levels` deep (JSON.stringify itself would overflow). */
const deep = (levels: number): string => "{\"a\":".repeat(levels) + "1" + "}".repeat(levels)

describe.each(MACHINE_CLIENTS)("machine client $name", ({ layer: machineClient }) => {
  let m: ReferenceMachine
  let server: GatewayServer
  beforeAll(async () => {
    m = await startReferenceMachine({ port: 0, models: MACHINE_MODELS })
    server = await startGatewayServer(gatewayCatalogue([{ id: "m-a", url: m.url, score: 0.9 }]), {}, machineClient)
  })
  afterAll(async () => {
    await server?.close()
    await m?.close()
  })
  const post = (secret: string, path: string, body: string) =>
    fetch(`${server.url}${path}`, { method: "POST", headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" }, body })

  it("finding 7: the official client's default embeddings call gets a unit vector of the model's full dimension", async () => {
    const { secret } = await server.run(newAccount({ credits: CREDITS }))
    const sdk = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: secret, maxRetries: 0 })
    // No encoding_format: the SDK asks for base64 and decodes it.
    const reply = await sdk.embeddings.create({ model: "ref-embed", input: "hello" })
    const vector = reply.data[0]!.embedding
    expect(vector).toHaveLength(1024)
    const norm = Math.sqrt(vector.reduce((n, x) => n + x * x, 0))
    expect(norm).toBeCloseTo(1, 5)
    // On the wire the default call is answered in base64, as it asked: SDK versions that decode
    // whatever comes back (the one in issue 10 read 1024 floats' JSON as 256 zeros) get the vector too.
    const raw = await (await sdk.embeddings.create({ model: "ref-embed", input: "hello" }).asResponse()).json()
    expect(typeof raw.data[0].embedding).toBe("string")
    const bytes = Buffer.from(raw.data[0].embedding, "base64")
    const wire = Array.from({ length: bytes.length / 4 }, (_, i) => bytes.readFloatLE(i * 4))
    expect(wire).toEqual(vector)
    const floats = await sdk.embeddings.create({ model: "ref-embed", input: "hello", encoding_format: "float" })
    expect(floats.data[0]!.embedding).toEqual(vector)
    const short = await sdk.embeddings.create({ model: "ref-embed", input: "hello", dimensions: 256 })
    expect(short.data[0]!.embedding).toHaveLength(256)
  })

  it("findings 6, 8: a forecast's generation_time_ms is an integer; a history of 1e308 is 400 invalid_history and not charged", async () => {
    const { accountId, secret } = await server.run(newAccount({ credits: CREDITS }))
    const ok = await post(secret, "/v1/forecasts", JSON.stringify({ model: "ref-forecast", history: [1, 2, 3, 5, 8, 13], horizon: 3 }))
    expect(ok.status).toBe(200)
    const answer = await ok.json()
    expect(answer.point).toHaveLength(3)
    expect(Number.isInteger(answer.generation_time_ms)).toBe(true)
    const huge = await post(secret, "/v1/forecasts", JSON.stringify({ model: "ref-forecast", history: [1e308, -1e308, 1e308], horizon: 3 }))
    expect(huge.status).toBe(400)
    expect((await huge.json()).error.code).toBe("invalid_history")
    await server.run(Effect.flatMap(Gateway, (g) => g.idle))
    expect((await server.run(usageOf(accountId))).length).toBe(1)
  })

  it("finding 3: chat bodies nested ~5000 levels (an extra field, inside a message) are 400 invalid_input, never 500, no engine text", async () => {
    const { secret } = await server.run(newAccount({ credits: CREDITS }))
    for (
      const body of [
        `{"model":"ref-chat","messages":[{"role":"user","content":"hi"}],"extra":${deep(5000)}}`,
        `{"model":"ref-chat","messages":[{"role":"user","content":"hi","x":${deep(5000)}}]}`
      ]
    ) {
      const res = await post(secret, "/v1/chat/completions", body)
      expect(res.status).toBe(400)
      const error = (await res.json()).error
      expect(error.code).toBe("invalid_input")
      expect(error.message).not.toMatch(/RangeError|call stack/i)
    }
  })

  it("finding 3: the machine client fails 'unsendable' on a body JSON cannot encode, and never dies", async () => {
    let nested: unknown = 1
    for (let i = 0; i < 20_000; i++) nested = { a: nested }
    for (const body of [{ model: "ref-chat", extra: nested }, { model: "ref-chat", n: 1n }]) {
      // A defect would reject this promise; the failure is the call's answer.
      const failure = await server.run(
        Effect.flatMap(MachineClient, (client) => client.post({ id: "m-a", base_url: m.url }, "/chat/completions", body, { firstByteTimeoutMs: 5_000 }))
          .pipe(Effect.flip, Effect.orDie) as unknown as Effect.Effect<{ readonly reason: string }>
      )
      expect(failure.reason).toBe("unsendable")
    }
  })
})

describe("issue 22, finding 7: forecast horizons and image sizes bounded by the catalogue, defaults where it sets none", () => {
  let m: ReferenceMachine
  let server: GatewayServer
  beforeAll(async () => {
    m = await startReferenceMachine({ port: 0, models: MACHINE_MODELS })
    // ref-forecast without its limits; ref-image sets none either: the catalogue's defaults apply.
    const catalogue = gatewayCatalogue([{ id: "m-a", url: m.url, score: 0.9 }])
    const models = catalogue.models.map((model) => {
      const { limits: _, ...rest } = model
      return model.id === "ref-forecast" ? rest : model
    })
    server = await startGatewayServer({ ...catalogue, models })
  })
  afterAll(async () => {
    await server?.close()
    await m?.close()
  })
  const post = (secret: string, path: string, body: unknown) =>
    fetch(`${server.url}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
      body: JSON.stringify(body)
    })
  /** Width and height of a PNG, from its header. */
  const pngSize = (b64: string) => {
    const png = Buffer.from(b64, "base64")
    return `${png.readUInt32BE(16)}x${png.readUInt32BE(20)}`
  }

  it("a horizon above 64 or a size the model does not draw is 400, reaches no machine and costs nothing", async () => {
    const { accountId, secret } = await server.run(newAccount({ credits: CREDITS }))
    const horizon = await post(secret, "/v1/forecasts", { model: "ref-forecast", history: [1, 2, 3], horizon: 10_000 })
    expect(horizon.status).toBe(400)
    expect((await horizon.json()).error).toMatchObject({ code: "invalid_horizon", message: "horizon: ref-forecast forecasts at most 64 steps (got 10000)." })
    for (const size of ["4096x4096", "1792x1024"]) {
      const image = await post(secret, "/v1/images/generations", { model: "ref-image", prompt: "a lighthouse", size })
      expect(image.status).toBe(400)
      expect((await image.json()).error).toMatchObject({ code: "invalid_size", message: `size: ref-image draws 1024x1024, 512x512, 256x256 (got ${size}).` })
    }
    expect(m.stats().requests).not.toHaveProperty("POST /v1/forecasts")
    expect(m.stats().requests).not.toHaveProperty("POST /v1/images/generations")
    await server.run(Effect.flatMap(Gateway, (g) => g.idle))
    expect(await server.run(usageOf(accountId))).toEqual([])
    expect(await server.run(balanceOf(accountId))).toMatchObject({ available: CREDITS, held: 0n })
  })

  it("the bounds themselves are served, and an image asked without a size is drawn at the model's default", async () => {
    const { secret } = await server.run(newAccount({ credits: CREDITS }))
    expect((await post(secret, "/v1/forecasts", { model: "ref-forecast", history: [1, 2, 3], horizon: 64 })).status).toBe(200)
    const listed = await post(secret, "/v1/images/generations", { model: "ref-image", prompt: "a lighthouse", size: "256x256" })
    expect(listed.status).toBe(200)
    expect(pngSize((await listed.json()).data[0].b64_json)).toBe("256x256")
    // The machine, asked for "auto", draws 64x64; it is asked for the model's default, 1024x1024,
    // which the reference machine scales down to its largest, 256x256.
    const auto = await post(secret, "/v1/images/generations", { model: "ref-image", prompt: "a lighthouse", size: "auto" })
    expect(auto.status).toBe(200)
    expect(pngSize((await auto.json()).data[0].b64_json)).toBe("256x256")
  })
})
