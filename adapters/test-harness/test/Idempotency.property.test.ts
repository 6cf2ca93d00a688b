/**
 * Property: for any sequence of POST /keys requests drawing Idempotency-Keys and bodies from small
 * pools, the first request under a key decides: a later one with the same body replays its exact
 * response, with another body gets 409, and exactly one key is created per Idempotency-Key used.
 */
import fc from "fast-check"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { fixtureCatalogue } from "../src/Fixtures.ts"
import type { ShellUnderTest } from "../src/HttpSuite.ts"
import { startInProcess } from "../src/InProcess.ts"
import { MemoryStores } from "@model-platform/memory-stores/MemoryStores"

describe("idempotency replay (property)", () => {
  let platform: ShellUnderTest
  beforeAll(async () => {
    platform = await startInProcess(fixtureCatalogue, MemoryStores)
  })
  afterAll(() => platform.close())

  const post = async (idempotencyKey: string | undefined, body: object) => {
    const response = await platform.fetch("/keys", {
      method: "POST",
      headers: {
        authorization: `Bearer ${platform.ownerSecret}`,
        "content-type": "application/json",
        ...(idempotencyKey === undefined ? {} : { "idempotency-key": idempotencyKey })
      },
      body: JSON.stringify(body)
    })
    return { status: response.status, text: await response.text() }
  }
  const listKeyNames = async () => {
    const response = await platform.fetch("/keys", { headers: { authorization: `Bearer ${platform.ownerSecret}` } })
    return ((await response.json()) as { data: Array<{ name: string }> }).data.map((k) => k.name)
  }

  it("first request under a key wins; replays are exact; other bodies conflict", async () => {
    let run = 0
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ key: fc.option(fc.integer({ min: 0, max: 3 }), { nil: undefined }), body: fc.integer({ min: 0, max: 2 }) }), { minLength: 1, maxLength: 12 }),
        async (requests) => {
          run++
          const tag = `run${run}`
          const first = new Map<number, { body: number; text: string }>()
          let withoutKey = 0
          for (const { key, body } of requests) {
            const name = `${tag}-body${body}`
            const res = await post(key === undefined ? undefined : `${tag}-key${key}`, { name, permissions: ["read"] })
            if (key === undefined) {
              expect(res.status).toBe(200)
              withoutKey++
              continue
            }
            const seen = first.get(key)
            if (seen === undefined) {
              expect(res.status).toBe(200)
              first.set(key, { body, text: res.text })
            } else if (seen.body === body) {
              expect(res.status).toBe(200)
              expect(res.text).toBe(seen.text)
            } else {
              expect(res.status).toBe(409)
            }
          }
          const created = (await listKeyNames()).filter((n) => n.startsWith(`${tag}-`))
          expect(created.length).toBe(first.size + withoutKey)
        }
      ),
      { numRuns: 60 }
    )
  })
})
