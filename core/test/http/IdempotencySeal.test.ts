/**
 * The sealing of kept idempotent answers (core/src/http/IdempotencySeal.ts): it opens only with the
 * secret, record and fingerprint it was made for, holds nothing of the answer in clear, and never
 * seals one answer twice the same way.
 */
import { Effect } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { generateSecret } from "../../src/keys/Keys.ts"
import { seal, unseal } from "../../src/http/IdempotencySeal.ts"

const run = <A>(effect: Effect.Effect<A>) => Effect.runPromise(effect)
const record = { scope: "acct_1", key: "idem-1", fingerprint: "f".repeat(64) }

describe("IdempotencySeal", () => {
  it("opens with the same secret and record, to the answer as it was, for any text", async () => {
    const secret = await run(generateSecret)
    await fc.assert(fc.asyncProperty(fc.string({ unit: "grapheme", maxLength: 300 }), async (answer) => {
      expect(await run(unseal(secret, record, await run(seal(secret, record, answer))))).toBe(answer)
    }), { numRuns: 100 })
  })

  it("holds nothing of the answer in clear and seals it differently each time", async () => {
    const secret = await run(generateSecret)
    const answer = JSON.stringify({ secret: await run(generateSecret) })
    const [a, b] = [await run(seal(secret, record, answer)), await run(seal(secret, record, answer))]
    expect(a).toMatch(/^v1\.[A-Za-z0-9+/=]+\.[A-Za-z0-9+/=]+$/)
    expect(a).not.toBe(b)
    expect(a).not.toContain(JSON.parse(answer).secret.slice(4, 12))
  })

  it("does not open with another secret, another record, another fingerprint, or altered", async () => {
    const secret = await run(generateSecret)
    const sealed = await run(seal(secret, record, "{\"ok\":true}"))
    const [version, iv, data] = sealed.split(".") as [string, string, string]
    const flipped = `${data.slice(0, 5)}${data[5] === "A" ? "B" : "A"}${data.slice(6)}`
    const cases = [
      unseal(await run(generateSecret), record, sealed),
      unseal(secret, { ...record, scope: "acct_2" }, sealed),
      unseal(secret, { ...record, key: "idem-2" }, sealed),
      unseal(secret, { ...record, fingerprint: "e".repeat(64) }, sealed),
      unseal(secret, record, `${version}.${iv}.${flipped}`),
      unseal(secret, record, `v2.${iv}.${data}`),
      unseal(secret, record, "erased"),
      unseal(secret, record, "{\"secret\":\"in clear\"}")
    ]
    for (const opened of cases) expect(await run(opened)).toBeUndefined()
  })
})
