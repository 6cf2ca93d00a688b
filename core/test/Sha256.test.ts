/**
 * The synchronous SHA-256 (Sha256.ts) is the standard digest: equal to WebCrypto's for any string,
 * at every length around the block boundaries, and on the FIPS 180-4 examples; Keys.hashSecret
 * answers the same on both of its paths.
 */
import * as fc from "fast-check"
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { hashSecret } from "../src/keys/Keys.ts"
import { sha256Hex, toHex } from "../src/kernel/Sha256.ts"

const webCrypto = async (text: string) =>
  toHex(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text))))

describe("Sha256", () => {
  it("the FIPS 180-4 examples", () => {
    expect(sha256Hex("")).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    expect(sha256Hex("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    expect(sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")).toBe(
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
    )
  })

  it("equals WebCrypto at every length from 0 to 300 bytes (block boundaries at 55, 56, 64, 119, 120...)", async () => {
    for (let n = 0; n <= 300; n++) {
      const text = "x".repeat(n)
      expect(sha256Hex(text)).toBe(await webCrypto(text))
    }
  })

  it("equals WebCrypto on any string, UTF-8 included", async () => {
    await fc.assert(fc.asyncProperty(fc.string({ unit: "grapheme", maxLength: 200 }), async (text) => {
      expect(sha256Hex(text)).toBe(await webCrypto(text))
    }), { numRuns: 300 })
  })

  it("Keys.hashSecret: the same digest on its synchronous and WebCrypto paths", async () => {
    for (const text of ["mpk_" + "A".repeat(43), "y".repeat(4096), "y".repeat(4097), "é".repeat(5000)]) {
      expect(await Effect.runPromise(hashSecret(text))).toBe(await webCrypto(text))
    }
  })
})
