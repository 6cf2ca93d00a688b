import OpenAI from "openai"
import { inflateSync } from "node:zlib"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { crc32, PNG_SIGNATURE } from "../src/Png.ts"
import { startReferenceMachine } from "../src/ReferenceMachine.ts"
import type { ReferenceMachine } from "../src/ReferenceMachine.ts"
import { assertValid } from "./openaiSchema.ts"
import { client, post } from "./support.ts"

let machine: ReferenceMachine

beforeAll(async () => {
  machine = await startReferenceMachine({ port: 0 })
})
afterAll(() => machine.close())

/** Parses a PNG's chunks, checking every CRC, and returns its size and raw (inflated) scanlines. */
const readPng = (png: Buffer) => {
  expect(png.subarray(0, 8).equals(PNG_SIGNATURE)).toBe(true)
  let o = 8
  const chunks: Array<{ type: string; data: Buffer }> = []
  while (o < png.length) {
    const len = png.readUInt32BE(o)
    const type = png.toString("latin1", o + 4, o + 8)
    const data = png.subarray(o + 8, o + 8 + len)
    expect(png.readUInt32BE(o + 8 + len)).toBe(crc32(png.subarray(o + 4, o + 8 + len)))
    chunks.push({ type, data })
    o += 12 + len
  }
  expect(chunks.map((c) => c.type)).toEqual(["IHDR", "IDAT", "IEND"])
  const ihdr = chunks[0]!.data
  const width = ihdr.readUInt32BE(0)
  const height = ihdr.readUInt32BE(4)
  expect([ihdr[8], ihdr[9]]).toEqual([8, 2])
  const raw = inflateSync(chunks[1]!.data)
  expect(raw.length).toBe((width * 3 + 1) * height)
  return { width, height, raw }
}

describe("POST /v1/images/generations", () => {
  it("draws a real 64x64 PNG, the same for the same prompt", async () => {
    const a = await post(machine, "/v1/images/generations", { model: "ref-image", prompt: "a red fox at dawn" })
    expect(a.status).toBe(200)
    assertValid("ImagesResponse", a.body)
    const png = Buffer.from(a.body.data[0].b64_json, "base64")
    const { width, height, raw } = readPng(png)
    expect([width, height]).toEqual([64, 64])
    expect(new Set(raw).size).toBeGreaterThan(10)
    const b = await post(machine, "/v1/images/generations", { model: "ref-image", prompt: "a red fox at dawn" })
    expect(b.body.data[0].b64_json).toBe(a.body.data[0].b64_json)
    const c = await post(machine, "/v1/images/generations", { model: "ref-image", prompt: "a blue whale" })
    expect(c.body.data[0].b64_json).not.toBe(a.body.data[0].b64_json)
  })

  it("honours size up to 256 per side, n, and response_format url", async () => {
    const r = await post(machine, "/v1/images/generations", { model: "ref-image", prompt: "x", size: "128x32", n: 2 })
    expect(r.body.data).toHaveLength(2)
    expect(readPng(Buffer.from(r.body.data[0].b64_json, "base64"))).toMatchObject({ width: 128, height: 32 })
    expect(r.body.data[0].b64_json).not.toBe(r.body.data[1].b64_json)
    const big = await post(machine, "/v1/images/generations", { model: "ref-image", prompt: "x", size: "1024x512" })
    expect(readPng(Buffer.from(big.body.data[0].b64_json, "base64"))).toMatchObject({ width: 256, height: 128 })
    const url = await post(machine, "/v1/images/generations", { model: "ref-image", prompt: "x", response_format: "url" })
    assertValid("ImagesResponse", url.body)
    expect(url.body.data[0].url).toMatch(/^data:image\/png;base64,/)
  })

  it("works through the SDK and refuses bad bodies", async () => {
    const openai = client(machine)
    const r = await openai.images.generate({ model: "ref-image", prompt: "a lighthouse", response_format: "b64_json" })
    expect(r.data![0]!.b64_json!.length).toBeGreaterThan(100)
    const e = await openai.images.generate({ model: "ref-image", prompt: "" }).catch((e) => e)
    expect(e).toBeInstanceOf(OpenAI.BadRequestError)
    for (const body of [{ model: "ref-image", prompt: "x", size: "big" }, { model: "ref-image", prompt: "x", n: 9 }]) {
      const r2 = await post(machine, "/v1/images/generations", body)
      expect(r2.status).toBe(400)
      assertValid("ErrorResponse", r2.body)
    }
  })
})
