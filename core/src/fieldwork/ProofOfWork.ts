/**
 * The participant's proof of work (docs/fieldwork.md "Proof of work"): SHA-256 of the UTF-8 text
 * `challenge + nonce` must start with `difficulty` zero bits. The browser searches; the platform
 * checks with one hash.
 */
import { sha256 } from "../kernel/Sha256.ts"

const encoder = new TextEncoder()

/** The leading zero bits of a digest. */
export const leadingZeroBits = (digest: Uint8Array): number => {
  let bits = 0
  for (const byte of digest) {
    if (byte === 0) {
      bits += 8
      continue
    }
    return bits + Math.clz32(byte) - 24
  }
  return bits
}

export const solves = (challenge: string, nonce: string, difficulty: number): boolean =>
  leadingZeroBits(sha256(encoder.encode(challenge + nonce))) >= difficulty

/** The first decimal nonce that solves the challenge (tests and scripts; ~2^difficulty hashes). */
export const solve = (challenge: string, difficulty: number): string => {
  for (let n = 0;; n++) if (solves(challenge, String(n), difficulty)) return String(n)
}
