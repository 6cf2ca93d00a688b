/** Ids and secrets (core/src/keys/Keys.ts): their encoding, shape and uniqueness. */
import { describe, expect, it } from "vitest"
import { Effect } from "effect"
import fc from "fast-check"
import { generateSecret, looksLikeSecret } from "../src/keys/Keys.ts"
import { base64url, generateId } from "../src/kernel/Ids.ts"

describe("Keys", () => {
  it("base64url encodes any bytes as RFC 4648 §5 without padding (as Node's Buffer does)", () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
      expect(base64url(bytes)).toBe(Buffer.from(bytes).toString("base64url"))
    }), { numRuns: 500 })
  })

  it("ids: the kind, an underscore and 22 base64url characters (128 bits), never twice in 20,000", () => {
    const ids = Effect.runSync(Effect.all(Array.from({ length: 20_000 }, () => generateId("usage"))))
    for (const id of ids) expect(id).toMatch(/^usage_[A-Za-z0-9_-]{22}$/)
    expect(new Set(ids).size).toBe(ids.length)
  })

  it("secrets have the shape of a platform secret and differ", () => {
    const secrets = Effect.runSync(Effect.all(Array.from({ length: 100 }, () => generateSecret)))
    for (const secret of secrets) expect(looksLikeSecret(secret)).toBe(true)
    expect(new Set(secrets).size).toBe(secrets.length)
  })
})
