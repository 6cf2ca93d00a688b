/**
 * The pure rules of the request boundary: the text rule (Text.ts) against the platform's own
 * well-formedness oracle (a string survives a UTF-8 round trip unchanged), the request target checks
 * and dot segments (http/RequestLimits.ts), and the /v1 body size from a catalogue (Limits.ts).
 */
import * as fc from "fast-check"
import { Schema } from "effect"
import { describe, expect, it } from "vitest"
import { jsonBodyProblem, resolveDotSegments, targetProblem } from "../src/http/RequestLimits.ts"
import { BYTES_PER_TOKEN, inferenceBodyLimit, MIN_INFERENCE_BODY_BYTES } from "../src/kernel/Limits.ts"
import { isText, textProblem } from "../src/kernel/Text.ts"

/** What every store keeps of a string: its UTF-8 round trip (lone surrogates become U+FFFD). */
const storedAs = (text: string) => new TextDecoder().decode(new TextEncoder().encode(text))

describe("Text: NUL and lone surrogates", () => {
  it("refuses NUL and each kind of lone surrogate, naming where", () => {
    expect(textProblem("a\u0000b")).toMatch(/NUL.*character 1/)
    expect(textProblem("x\ud800y")).toMatch(/lone surrogate \(U\+D800\) at character 1/)
    expect(textProblem("x\udc00")).toMatch(/lone surrogate \(U\+DC00\)/)
    expect(textProblem("end\ud83d")).toMatch(/lone surrogate/)
    expect(textProblem("\ude00\ud83d")).toMatch(/lone surrogate/)
  })
  it("takes any well-formed text, pairs included", () => {
    for (const text of ["", "plain", "é名", "\u{1F600}", "a\u{10FFFF}b", "\u0001\u007f"]) expect(textProblem(text)).toBeUndefined()
  })
  it("accepts a string exactly when every store keeps it as sent and it has no NUL", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 12 }), (text) => {
        const keptAsSent = storedAs(text) === text && !text.includes("\u0000")
        expect(textProblem(text) === undefined).toBe(keptAsSent)
      }),
      { numRuns: 2000 }
    )
  })
  it("as a schema check, fails with the rule's message", () => {
    const decode = Schema.decodeUnknownResult(Schema.String.check(isText))
    expect(decode("ok")._tag).toBe("Success")
    expect(String(decode("a\u0000")).includes("NUL")).toBe(true)
  })
})

describe("request target", () => {
  it("refuses paths and queries that are not percent-encoded text", () => {
    expect(targetProblem("/orders/%00")).toMatch(/path.*NUL/)
    expect(targetProblem("/orders/%ff%fe")).toMatch(/path.*not UTF-8/)
    expect(targetProblem("/orders/%E0%A4%A")).toMatch(/path/)
    expect(targetProblem("/models/%ED%A0%80")).toMatch(/path/)
    expect(targetProblem("/route?model=%00")).toMatch(/query.*NUL/)
    expect(targetProblem("/machines?region=%ff")).toMatch(/query/)
  })
  it("takes ordinary targets", () => {
    for (const url of ["/", "/orders/ord_1", "/route?model=chat-small&region=eu-west", "/keys/a%20b", "/x?q=%E2%82%AC+1", "/a?b"]) {
      expect(targetProblem(url)).toBeUndefined()
    }
  })
  it("resolves dot segments as WHATWG URL does, and leaves other paths alone", () => {
    expect(resolveDotSegments("/./me")).toBe("/me")
    expect(resolveDotSegments("/orders/../keys?limit=5")).toBe("/keys?limit=5")
    expect(resolveDotSegments("/orders/%2e%2e/keys")).toBe("/keys")
    expect(resolveDotSegments("/../../me")).toBe("/me")
    expect(resolveDotSegments("//orders/./x")).toBe("//orders/x")
    expect(resolveDotSegments("/orders/ord.1")).toBeUndefined()
    expect(resolveDotSegments("/orders/...")).toBeUndefined()
  })
})

describe("management JSON bodies", () => {
  const bytes = (text: string) => new TextEncoder().encode(text)
  it("must be UTF-8", () => {
    expect(jsonBodyProblem(new Uint8Array([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]))?.code).toBe("invalid_json")
  })
  it("must nest at most 64 deep; unparsable JSON is left to the handler's own 400", () => {
    expect(jsonBodyProblem(bytes(`{"a":${"[".repeat(64)}${"]".repeat(64)}}`))?.code).toBe("invalid_request")
    expect(jsonBodyProblem(bytes(`{"a":${"[".repeat(63)}${"]".repeat(63)}}`))).toBeUndefined()
    expect(jsonBodyProblem(bytes(`${"[".repeat(100_000)}${"]".repeat(100_000)}`))?.code).toBe("invalid_request")
    expect(jsonBodyProblem(bytes(`{"a":`))).toBeUndefined()
  })
})

describe("inferenceBodyLimit", () => {
  const model = (endpoint: string, context_length: number, limits?: { max_history?: number; max_inputs?: number }) => ({
    endpoint,
    context_length,
    ...(limits === undefined ? {} : { limits })
  })
  it("is never below the floor", () => {
    expect(inferenceBodyLimit({ models: [] })).toBe(MIN_INFERENCE_BODY_BYTES)
    expect(inferenceBodyLimit({ models: [model("/v1/chat/completions", 8192)] })).toBe(MIN_INFERENCE_BODY_BYTES)
  })
  it("grows with the largest context in the catalogue", () => {
    const large = inferenceBodyLimit({ models: [model("/v1/chat/completions", 8192), model("/v1/chat/completions", 1_000_000)] })
    expect(large).toBeGreaterThan(1_000_000 * BYTES_PER_TOKEN)
    expect(large).toBeLessThan(1_000_000 * BYTES_PER_TOKEN + 1024 * 1024)
  })
  it("leaves room for a forecast's whole history and 256 embedding texts", () => {
    const history = inferenceBodyLimit({ models: [model("/v1/forecasts", 512, { max_history: 100_000 })] })
    expect(history).toBeGreaterThan(100_000 * 25)
    const embeddings = inferenceBodyLimit({ models: [model("/v1/embeddings", 65_536, { max_inputs: 256 })] })
    expect(embeddings).toBeGreaterThan(inferenceBodyLimit({ models: [model("/v1/chat/completions", 65_536)] }))
  })
})
