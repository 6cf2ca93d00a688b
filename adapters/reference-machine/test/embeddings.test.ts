import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { cosine, DIMENSIONS, embed, toBase64 } from "../src/EmbeddingModel.ts"
import { startReferenceMachine } from "../src/ReferenceMachine.ts"
import type { ReferenceMachine } from "../src/ReferenceMachine.ts"
import { countTokens } from "../src/Tokenizer.ts"
import { assertValid } from "./openaiSchema.ts"
import { client, post } from "./support.ts"

let machine: ReferenceMachine
let openai: OpenAI

beforeAll(async () => {
  machine = await startReferenceMachine({ port: 0 })
  openai = client(machine)
})
afterAll(() => machine.close())

const norm = (v: ArrayLike<number>): number => {
  let s = 0
  for (let i = 0; i < v.length; i++) s += v[i]! * v[i]!
  return Math.sqrt(s)
}

/** Extra body fields the SDK's types do not know (it passes them through). */
const params = (p: OpenAI.EmbeddingCreateParams & { input_type?: string }): OpenAI.EmbeddingCreateParams => p

describe("POST /v1/embeddings", () => {
  it("returns unit vectors of 1024 floats through the SDK (base64 on the wire)", async () => {
    const r = await openai.embeddings.create({ model: "ref-embed", input: "The quick brown fox" })
    expect(r.object).toBe("list")
    expect(r.data).toHaveLength(1)
    const v = r.data[0]!.embedding
    expect(v).toHaveLength(1024)
    expect(norm(v)).toBeCloseTo(1, 5)
    expect(r.usage).toEqual({ prompt_tokens: 4, total_tokens: 4 })
  })

  it("validates against OpenAI's schema with encoding_format float, and base64 is float32 LE of the same", async () => {
    const f = await post(machine, "/v1/embeddings", { model: "ref-embed", input: ["a b", "c"], encoding_format: "float" })
    expect(f.status).toBe(200)
    assertValid("CreateEmbeddingResponse", f.body)
    const b = await post(machine, "/v1/embeddings", { model: "ref-embed", input: ["a b", "c"], encoding_format: "base64" })
    const bytes = Buffer.from(b.body.data[0].embedding, "base64")
    expect(bytes.length).toBe(1024 * 4)
    const decoded = Array.from({ length: 1024 }, (_, i) => bytes.readFloatLE(i * 4))
    expect(decoded).toEqual(f.body.data[0].embedding)
    expect(b.body.data.map((d: { index: number }) => d.index)).toEqual([0, 1])
  })

  it("gives every listed dimension as a re-normalised prefix, and refuses others", async () => {
    const full = embed("Matryoshka vectors nest", 1024, "document")
    for (const d of DIMENSIONS) {
      const r = await openai.embeddings.create({ model: "ref-embed", input: "Matryoshka vectors nest", dimensions: d })
      const v = r.data[0]!.embedding
      expect(v).toHaveLength(d)
      expect(norm(v)).toBeCloseTo(1, 5)
      // the prefix of the full vector, re-normalised
      const prefix = Array.from(full.subarray(0, d))
      const scale = norm(prefix)
      v.forEach((x, i) => expect(x).toBeCloseTo(prefix[i]! / scale, 5))
    }
    for (const d of [1, 100, 1536, 2048]) {
      const e = await openai.embeddings.create({ model: "ref-embed", input: "x", dimensions: d }).catch((e) => e)
      expect(e).toBeInstanceOf(OpenAI.BadRequestError)
      expect(e).toMatchObject({ status: 400, param: "dimensions" })
    }
  })

  it("scores similar texts above unrelated ones, at every dimension", async () => {
    const texts = [
      "The cat sat on the mat.",
      "A cat was sitting on the mat.",
      "Quarterly revenue grew by twelve percent.",
      "Revenue for the quarter rose twelve percent."
    ]
    for (const d of DIMENSIONS) {
      const r = await openai.embeddings.create({ model: "ref-embed", input: texts, dimensions: d })
      const [cat1, cat2, rev1, rev2] = r.data.map((x) => x.embedding) as [number[], number[], number[], number[]]
      expect(cosine(cat1, cat2)).toBeGreaterThan(cosine(cat1, rev1))
      expect(cosine(cat1, cat2)).toBeGreaterThan(cosine(cat1, rev2))
      expect(cosine(rev1, rev2)).toBeGreaterThan(cosine(rev1, cat2))
    }
    const big = (await openai.embeddings.create({ model: "ref-embed", input: texts })).data.map((x) => x.embedding)
    expect(cosine(big[0]!, big[1]!)).toBeGreaterThan(0.5)
    expect(cosine(big[0]!, big[2]!)).toBeLessThan(0.2)
  })

  it("makes query vectors differ from document vectors while staying close", async () => {
    const text = "how do I reset my password"
    const doc = await openai.embeddings.create(params({ model: "ref-embed", input: text, input_type: "document" }))
    const dflt = await openai.embeddings.create({ model: "ref-embed", input: text })
    const query = await openai.embeddings.create(params({ model: "ref-embed", input: text, input_type: "query" }))
    expect(dflt.data[0]!.embedding).toEqual(doc.data[0]!.embedding)
    const c = cosine(doc.data[0]!.embedding, query.data[0]!.embedding)
    expect(c).toBeLessThan(0.9999)
    expect(c).toBeGreaterThan(0.9)
    const answer = await openai.embeddings.create(params({
      model: "ref-embed",
      input: ["To reset your password, open settings.", "Bananas are rich in potassium."],
      input_type: "document"
    }))
    const q = query.data[0]!.embedding
    expect(cosine(q, answer.data[0]!.embedding)).toBeGreaterThan(cosine(q, answer.data[1]!.embedding))
    const bad = await openai.embeddings.create(params({ model: "ref-embed", input: "x", input_type: "passage" }))
      .catch((e) => e)
    expect(bad).toBeInstanceOf(OpenAI.BadRequestError)
  })

  it("takes up to 256 texts and counts their tokens", async () => {
    const texts = Array.from({ length: 256 }, (_, i) => `text number ${i}, with words`)
    const r = await openai.embeddings.create({ model: "ref-embed", input: texts, dimensions: 32 })
    expect(r.data).toHaveLength(256)
    expect(r.data.map((d) => d.index)).toEqual(texts.map((_, i) => i))
    const tokens = texts.reduce((n, t) => n + countTokens(t), 0)
    expect(r.usage).toEqual({ prompt_tokens: tokens, total_tokens: tokens })
    const tooMany = await openai.embeddings.create({ model: "ref-embed", input: [...texts, "one more"] }).catch((e) => e)
    expect(tooMany).toBeInstanceOf(OpenAI.BadRequestError)
    for (const input of [[], "", "   ", [1, 2, 3]]) {
      const e = await post(machine, "/v1/embeddings", { model: "ref-embed", input })
      expect(e.status).toBe(400)
      assertValid("ErrorResponse", e.body)
    }
  })

  it("is deterministic and base64-encodes little-endian float32", () => {
    const a = embed("same text", 256, "query")
    const b = embed("same text", 256, "query")
    expect(Array.from(a)).toEqual(Array.from(b))
    const bytes = Buffer.from(toBase64(a), "base64")
    expect(bytes.readFloatLE(4)).toBe(a[1])
  })
})
