/**
 * What the gateway answers with a machine's answer, and which bodies never reach a machine
 * (issue 10, findings 3, 6, 7, 8): forecasts are held to the spec's shape and never charged when
 * broken, generation_time_ms is an integer, embeddings honour encoding_format, a history the
 * models cannot handle and a body nested too deep are refused with 400. And (issue 22, finding 7) a
 * machine is sent only the fields its endpoint's schema takes.
 */
import { base64Float32, Gateway } from "@model-platform/core/gateway"
import type { Endpoint } from "@model-platform/core/gateway"
import { LedgerStore } from "@model-platform/core/ledger"
import { UsageStore } from "@model-platform/core/billing"
import { Effect } from "effect"
import { afterEach, describe, expect, it } from "vitest"
import { call, healthy, json, newKey, startStubGateway, stubCatalogue, type StubMachine } from "./gatewayStub.ts"

const CREDITS = 1_000_000_000n
const stub: StubMachine = { alwaysFail: false, answers: {} }
let runtime: ReturnType<typeof startStubGateway> | undefined
const run = <A, E>(effect: Effect.Effect<A, E, any>): Promise<A> => runtime!.runPromise(effect as Effect.Effect<A, E, never>)
afterEach(async () => {
  await runtime?.dispose()
  runtime = undefined
  stub.answers = {}
})

const accountState = (accountId: string) =>
  Effect.gen(function*() {
    const scopes = yield* (yield* LedgerStore).balances(accountId)
    const records = yield* (yield* UsageStore).list({ account_id: accountId, from: "2000-01-01T00:00:00.000Z", to: "2100-01-01T00:00:00.000Z" })
    return {
      available: scopes.reduce((n, s) => n + s.posted - s.held, 0n),
      held: scopes.reduce((n, s) => n + s.held, 0n),
      records: records.length
    }
  })

const forecast = (extra: Record<string, unknown>) => (_: Record<string, unknown>) =>
  json(200, { object: "forecast", model: "forecast", history_used: 3, point: [1, 2], quantile_levels: [0.5], quantiles: [[1, 2]], ...extra })

describe("forecast answers (findings 6, 8)", () => {
  it("a machine answering points that are not numbers (an overflow): 502 machine_error, nothing charged or recorded", async () => {
    runtime = startStubGateway(stub, stubCatalogue({ forecastCreditsPerRequest: 0.25 }))
    stub.answers["/forecasts"] = forecast({ point: [null, null], quantiles: [[null, null]], generation_time_ms: 3 })
    const { accountId, auth } = await run(newKey(CREDITS))
    const answer = await run(call("/v1/forecasts", auth, { model: "forecast", history: [1, 2, 3], horizon: 2 }))
    expect(answer.status).toBe(502)
    expect(JSON.parse(answer.text).error.code).toBe("machine_error")
    await run(Effect.flatMap(Gateway, (g) => g.idle))
    expect(await run(accountState(accountId))).toEqual({ available: CREDITS, held: 0n, records: 0 })
  })

  it("generation_time_ms is answered as an integer (rounded), or null when the machine sent none; the call is charged once", async () => {
    runtime = startStubGateway(stub, stubCatalogue({ forecastCreditsPerRequest: 0.25 }))
    const { accountId, auth } = await run(newKey(CREDITS))
    stub.answers["/forecasts"] = forecast({ generation_time_ms: 9.82 })
    const first = await run(call("/v1/forecasts", auth, { model: "forecast", history: [1, 2, 3], horizon: 2 }))
    expect(first.status).toBe(200)
    expect(JSON.parse(first.text)).toMatchObject({ point: [1, 2], generation_time_ms: 10 })
    stub.answers["/forecasts"] = forecast({})
    const second = await run(call("/v1/forecasts", auth, { model: "forecast", history: [1, 2, 3], horizon: 2 }))
    expect(JSON.parse(second.text).generation_time_ms).toBeNull()
    await run(Effect.flatMap(Gateway, (g) => g.idle))
    expect(await run(accountState(accountId))).toEqual({ available: CREDITS - 500_000n, held: 0n, records: 2 })
  })

  it("history values beyond the models' magnitude (1e308) are refused: 400 invalid_history, before any machine", async () => {
    runtime = startStubGateway(stub, stubCatalogue({ forecastCreditsPerRequest: 0.25 }))
    const { accountId, auth } = await run(newKey(CREDITS))
    for (const history of [[1e308, -1e308, 1e308], [1, 2, 1e16], [-2e15, 1]]) {
      const answer = await run(call("/v1/forecasts", auth, { model: "forecast", history, horizon: 2 }))
      expect(answer.status).toBe(400)
      expect(JSON.parse(answer.text).error.code).toBe("invalid_history")
    }
    const ok = await run(call("/v1/forecasts", auth, { model: "forecast", history: [1e15, -1e15, 3], horizon: 2 }))
    expect(ok.status).toBe(200)
    await run(Effect.flatMap(Gateway, (g) => g.idle))
    expect((await run(accountState(accountId))).records).toBe(1)
  })
})

describe("embeddings encoding_format (finding 7)", () => {
  const embed = (extra: Record<string, unknown> = {}) => ({ model: "embed", input: "hello", ...extra })

  it("base64 answers little-endian float32 of the machine's floats; float (or none) answers the numbers", async () => {
    runtime = startStubGateway(stub)
    const { auth } = await run(newKey())
    const b64 = JSON.parse((await run(call("/v1/embeddings", auth, embed({ encoding_format: "base64" })))).text)
    expect(typeof b64.data[0].embedding).toBe("string")
    expect(base64Float32(b64.data[0].embedding)).toEqual([Math.fround(0.6), Math.fround(0.8)])
    expect(b64.usage).toEqual({ prompt_tokens: 1, total_tokens: 1 })
    for (const extra of [{}, { encoding_format: "float" }]) {
      const floats = JSON.parse((await run(call("/v1/embeddings", auth, embed(extra)))).text)
      expect(floats.data[0].embedding).toEqual([0.6, 0.8])
    }
  })

  it("a machine answering base64 anyway: decoded for a client asking floats, passed on for one asking base64", async () => {
    runtime = startStubGateway(stub)
    const { auth } = await run(newKey())
    const encoded = Buffer.from(new Float32Array([0.6, 0.8]).buffer).toString("base64")
    stub.answers["/embeddings"] = () =>
      json(200, { object: "list", model: "embed", data: [{ object: "embedding", index: 0, embedding: encoded }], usage: { prompt_tokens: 1, total_tokens: 1 } })
    const floats = JSON.parse((await run(call("/v1/embeddings", auth, embed()))).text)
    expect(floats.data[0].embedding).toEqual([Math.fround(0.6), Math.fround(0.8)])
    const b64 = JSON.parse((await run(call("/v1/embeddings", auth, embed({ encoding_format: "base64" })))).text)
    expect(b64.data[0].embedding).toBe(encoded)
  })
})

describe("bodies nested deeper than MAX_JSON_DEPTH (finding 3)", () => {
  /** JSON text of a value nested `levels` deep (built as text: JSON.stringify itself would overflow). */
  const deep = (levels: number): string => "{\"a\":".repeat(levels) + "1" + "}".repeat(levels)

  it("an extra field or a message nested ~5000 levels: 400 invalid_input naming the depth, no engine text leaked", async () => {
    runtime = startStubGateway(stub)
    const { auth } = await run(newKey())
    const bodies: ReadonlyArray<readonly [Endpoint, string]> = [
      ["/v1/chat/completions", `{"model":"chat","messages":[{"role":"user","content":"hi"}],"extra":${deep(5000)}}`],
      ["/v1/chat/completions", `{"model":"chat","messages":[{"role":"user","content":[{"type":"text","text":"hi","x":${deep(5000)}}]}]}`],
      ["/v1/embeddings", `{"model":"embed","input":"hi","extra":[[[${deep(100)}]]]}`]
    ]
    for (const [endpoint, body] of bodies) {
      const answer = await run(call(endpoint, auth, body))
      expect(answer.status).toBe(400)
      const error = JSON.parse(answer.text).error
      expect(error.code).toBe("invalid_input")
      expect(error.message).toContain("nests deeper than 64 levels")
      expect(error.message).not.toMatch(/RangeError|stack/i)
    }
    // 64 levels are fine.
    const ok = await run(call(
      "/v1/chat/completions",
      auth,
      `{"model":"chat","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","json_schema":${deep(61)}}}`
    ))
    expect(ok.status).toBe(200)
  })
})

describe("what a machine is sent (issue 22, finding 7)", () => {
  /** Records every body the machine gets, and answers it as a healthy machine does. */
  const recording = () => {
    const received: Array<Record<string, unknown>> = []
    for (const path of ["/chat/completions", "/embeddings", "/forecasts"]) {
      stub.answers[path] = (body) => {
        received.push(body)
        return healthy(path, body)
      }
    }
    return received
  }
  const hi = [{ role: "user", content: "hi" }]

  it("best_of, top_k and a vendor's extras are refused with 400 and never reach the machine; nothing is charged", async () => {
    runtime = startStubGateway(stub, stubCatalogue({ forecastCreditsPerRequest: 0.25 }))
    const received = recording()
    const { accountId, auth } = await run(newKey(CREDITS))
    const refused: ReadonlyArray<readonly [Endpoint, Record<string, unknown>]> = [
      ["/v1/chat/completions", { model: "chat", messages: hi, best_of: 8 }],
      ["/v1/chat/completions", { model: "chat", messages: hi, stream: true, top_k: 1, ignore_eos: true, min_tokens: 64 }],
      ["/v1/embeddings", { model: "embed", input: "hi", truncate: "NONE" }],
      ["/v1/forecasts", { model: "forecast", history: [1, 2, 3], horizon: 2, num_samples: 10_000 }]
    ]
    for (const [endpoint, body] of refused) {
      const answer = await run(call(endpoint, auth, body))
      expect(answer.status, answer.text).toBe(400)
      const error = JSON.parse(answer.text).error
      expect(error.code).toBe("invalid_input")
      expect(error.message).toMatch(/^Unrecognized request arguments? supplied: /)
    }
    await run(Effect.flatMap(Gateway, (g) => g.idle))
    expect(received).toEqual([])
    expect(await run(accountState(accountId))).toEqual({ available: CREDITS, held: 0n, records: 0 })
  })

  it("the machine gets the fields the endpoint takes, without the platform's machine and OpenAI's service fields", async () => {
    runtime = startStubGateway(stub)
    const received = recording()
    const { auth } = await run(newKey())
    const chat = {
      model: "chat", messages: hi, temperature: 0.3, seed: 7, logprobs: true, top_logprobs: 2,
      response_format: { type: "json_object" }, user: "u-1"
    }
    const sent: ReadonlyArray<readonly [Endpoint, Record<string, unknown>]> = [
      ["/v1/chat/completions", { ...chat, machine: "only", store: true, metadata: { run: "7" }, service_tier: "default" }],
      ["/v1/embeddings", { model: "embed", input: ["a", "b"], input_type: "query", user: "u-1", machine: "only" }],
      ["/v1/forecasts", { model: "forecast", history: [1, 2, 3], horizon: 2, quantiles: [0.1, 0.9], machine: "only" }]
    ]
    for (const [endpoint, body] of sent) expect((await run(call(endpoint, auth, body))).status).toBe(200)
    expect(received).toEqual([
      { ...chat, max_tokens: 64 },
      { model: "embed", input: ["a", "b"], input_type: "query", user: "u-1" },
      { model: "forecast", history: [1, 2, 3], horizon: 2, quantiles: [0.1, 0.9] }
    ])
  })
})
