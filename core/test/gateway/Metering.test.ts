/** Metering rules (exact micro-credit costs, bounds, usage reports, estimates) and the SSE splitter. */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fc from "fast-check"
import type { CatalogueConfig, ModelConfig } from "../../src/catalogue/CatalogueConfig.ts"
import { bearerSecret, isRetryableStatus, machinePath } from "../../src/gateway/Gateway.ts"
import {
  boundOf,
  costOf,
  estimatedUsage,
  isFree,
  type Prices,
  pricesOf,
  reportedUsage,
  unitOf
} from "../../src/gateway/Metering.ts"
import { SseSplitter } from "../../src/gateway/Streaming.ts"
import { validateCall, type ValidCall } from "../../src/gateway/Validation.ts"

const chatModel: ModelConfig = {
  id: "chat", name: "chat", family: "f", description: "", modality: "text", service: "chat", owned_by: "x",
  endpoint: "/v1/chat/completions", context_length: 8192, max_output_tokens: 100, features: [],
  pricing: { input_credits_per_mtok: 0.5, output_credits_per_mtok: 1.5, credits_per_request: 0 }
}
const config = {
  operators: [], machines: [], models: [chatModel], packages: [],
  payments: { card: null, stablecoin: null, charging_starts_at: null },
  prices: { credits_per_usd: null, services: [] },
  tiers: [{ tier: 0, name: "t", purchased_credits: 0, rpm: 1, monthly_limit_credits: 0 }]
} satisfies CatalogueConfig

const chatCall = (body: Record<string, unknown>): ValidCall =>
  Effect.runSync(validateCall("/v1/chat/completions", { model: "chat", ...body }, config))

describe("costs", () => {
  it("credits per million tokens are exact micro-credits; each call rounds up once", () => {
    const p = pricesOf(chatModel)
    expect(p).toEqual({ inputPerMtok: 500_000n, outputPerMtok: 1_500_000n, perRequest: 0n })
    // 3 input tokens at 0.5 micro each + 1 output at 1.5: 3 micro exactly.
    expect(costOf(p, { input_tokens: 3n, output_tokens: 1n, requests: 1n })).toBe(3n)
    // 1 input token: 0.5 micro, rounded up to 1.
    expect(costOf(p, { input_tokens: 1n, output_tokens: 0n, requests: 1n })).toBe(1n)
    expect(costOf(p, { input_tokens: 0n, output_tokens: 0n, requests: 1n })).toBe(0n)
    const perRequest: Prices = { inputPerMtok: 0n, outputPerMtok: 0n, perRequest: 250_000n }
    expect(costOf(perRequest, { input_tokens: 9n, output_tokens: 9n, requests: 3n })).toBe(750_000n)
    expect(isFree(perRequest)).toBe(false)
    expect(isFree({ inputPerMtok: 0n, outputPerMtok: 0n, perRequest: 0n })).toBe(true)
  })

  it("the cost never falls below the exact price and exceeds it by less than one micro-credit per call", () => {
    fc.assert(fc.property(
      fc.bigInt({ min: 0n, max: 10n ** 7n }),
      fc.bigInt({ min: 0n, max: 10n ** 7n }),
      fc.bigInt({ min: 0n, max: 10n ** 9n }),
      fc.bigInt({ min: 0n, max: 10n ** 9n }),
      (input, output, inP, outP) => {
        const exactTimesMillion = input * inP + output * outP
        const cost = costOf({ inputPerMtok: inP, outputPerMtok: outP, perRequest: 0n }, { input_tokens: input, output_tokens: output, requests: 1n })
        return exactTimesMillion === 0n
          ? cost === 0n
          : cost * 1_000_000n >= exactTimesMillion && (cost - 1n) * 1_000_000n < exactTimesMillion
      }
    ))
  })

  it("the bound covers the input bytes with per-message overhead and the capped max_tokens", () => {
    const call = chatCall({ messages: [{ role: "user", content: "hello" }], max_tokens: 5000 })
    expect(call.maxOutputTokens).toBe(100)
    const bound = boundOf(call)
    expect(bound.output_tokens).toBe(100n)
    expect(bound.input_tokens).toBeGreaterThan(BigInt(call.inputBytes))
    expect(bound.requests).toBe(1n)
  })
})

describe("usage reports", () => {
  const call = chatCall({ messages: [{ role: "user", content: "hello" }] })
  it("takes non-negative integer counts, refuses anything else", () => {
    expect(reportedUsage(call, { usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 } })).toEqual({
      input_tokens: 7n, output_tokens: 3n, requests: 1n
    })
    expect(reportedUsage(call, {})).toBeUndefined()
    expect(reportedUsage(call, { usage: null })).toBeUndefined()
    expect(reportedUsage(call, { usage: { prompt_tokens: -1, completion_tokens: -1 } })).toBeUndefined()
    expect(reportedUsage(call, { usage: { prompt_tokens: 1.5, completion_tokens: 1 } })).toBeUndefined()
  })
  it("estimates from bytes and characters, within the bound", () => {
    const estimate = estimatedUsage(call, 40)
    expect(estimate.output_tokens).toBe(10n)
    expect(estimate.input_tokens).toBe(BigInt(Math.ceil(call.inputBytes / 4)))
    expect(estimatedUsage(call, 10_000).output_tokens).toBe(100n)
  })
  it("units: tokens for token-priced models, requests for forecasts and images", () => {
    const p = pricesOf(chatModel)
    expect(unitOf(call, p, { input_tokens: 2n, output_tokens: 3n, requests: 1n })).toEqual({ unit: "tokens", quantity: 5n })
  })
})

describe("helpers", () => {
  it("bearer secrets, machine paths, retryable statuses", () => {
    expect(bearerSecret(undefined)).toBe("")
    expect(bearerSecret("Bearer  mpk_abc ")).toBe("mpk_abc")
    expect(bearerSecret("bearer mpk_abc")).toBe("mpk_abc")
    expect(bearerSecret("Basic bXBrX2FiYw==")).toBe("")
    expect(bearerSecret("mpk_abc")).toBe("")
    expect(machinePath("/v1/embeddings")).toBe("/embeddings")
    expect([400, 401, 413, 422].map(isRetryableStatus)).toEqual([false, false, false, false])
    expect([404, 408, 429, 500, 502, 503].map(isRetryableStatus)).toEqual([true, true, true, true, true, true])
  })
})

describe("SseSplitter", () => {
  const enc = (s: string) => new TextEncoder().encode(s)
  it("splits events across and within chunks, joins multi-line data, drops comments, accepts CRLF", () => {
    const s = new SseSplitter()
    expect(s.push(enc("data: {\"a\":1}\n\ndata: {\"b\""))).toEqual(["{\"a\":1}"])
    expect(s.push(enc(":2}\n"))).toEqual([])
    expect(s.push(enc("\n: keep-alive\n\ndata:x\r"))).toEqual(["{\"b\":2}"])
    expect(s.push(enc("\n\r\ndata: line1\ndata: line2\n\n"))).toEqual(["x", "line1\nline2"])
    expect(s.push(enc("event: ping\n\ndata: [DONE]"))).toEqual([])
    expect(s.end()).toEqual(["[DONE]"])
  })
  it("any chunking of a stream gives the same events", () => {
    const text = "data: {\"x\":\"é€😀\"}\n\n: c\n\ndata: two\r\n\r\ndata: [DONE]\n\n"
    const bytes = enc(text)
    fc.assert(fc.property(fc.array(fc.integer({ min: 0, max: bytes.length }), { maxLength: 8 }), (cuts) => {
      const points = [0, ...[...cuts].sort((a, b) => a - b), bytes.length]
      const s = new SseSplitter()
      const out: Array<string> = []
      for (let i = 1; i < points.length; i++) out.push(...s.push(bytes.slice(points[i - 1], points[i])))
      out.push(...s.end())
      expect(out).toEqual(["{\"x\":\"é€😀\"}", "two", "[DONE]"])
    }))
  })
})
