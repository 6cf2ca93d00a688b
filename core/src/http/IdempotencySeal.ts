/**
 * The sealing of the answers the Idempotency-Key mechanism keeps (docs/api-decisions.md
 * "Idempotency"). An answer may carry a secret (a new key's, an agent key's), and a store must
 * never hold a secret readable. So a kept answer is encrypted (AES-256-GCM, WebCrypto) under a
 * key derived (HKDF-SHA-256) from the bearer secret of the request that made it, the record's
 * scope and its Idempotency-Key. A store holds only the SHA-256 of a bearer secret, which does
 * not give the key: the database alone cannot read a kept answer, a request with the same
 * secret can.
 */
import { Effect, Result } from "effect"
import { Base64 } from "effect/encoding"

/** The version of the sealed form, its first field: a later change of scheme can tell them apart. */
const VERSION = "v1"
/** HKDF's salt: fixed, so the derived key depends only on the secret and the record (RFC 5869 §3.1). */
const SALT = new TextEncoder().encode("model-platform idempotency record")
const IV_BYTES = 12

export interface SealContext {
  /** The record's scope and Idempotency-Key: the key derived for one record opens no other. */
  readonly scope: string
  readonly key: string
  /** The request's fingerprint, authenticated with the answer (AES-GCM's additional data). */
  readonly fingerprint: string
}

const encoder = new TextEncoder()

const deriveKey = (secret: string, context: SealContext) =>
  Effect.promise(async () => {
    const material = await crypto.subtle.importKey("raw", encoder.encode(secret), "HKDF", false, ["deriveKey"])
    return crypto.subtle.deriveKey(
      { name: "HKDF", hash: "SHA-256", salt: SALT, info: encoder.encode(JSON.stringify([context.scope, context.key])) },
      material,
      { name: "AES-GCM", length: 256 },
      false,
      ["encrypt", "decrypt"]
    )
  })

/** `answer` sealed for the holder of `secret`: `v1.<iv>.<ciphertext>`, base64. */
export const seal = (secret: string, context: SealContext, answer: string): Effect.Effect<string> =>
  Effect.flatMap(deriveKey(secret, context), (key) =>
    Effect.promise(async () => {
      const iv = crypto.getRandomValues(new Uint8Array(IV_BYTES))
      const sealed = await crypto.subtle.encrypt(
        { name: "AES-GCM", iv, additionalData: encoder.encode(context.fingerprint) },
        key,
        encoder.encode(answer)
      )
      return `${VERSION}.${Base64.encode(iv)}.${Base64.encode(new Uint8Array(sealed))}`
    }))

/** The answer `seal` sealed, or undefined when `sealed` does not open with this secret and record. */
export const unseal = (secret: string, context: SealContext, sealed: string): Effect.Effect<string | undefined> => {
  const [version, iv, data] = sealed.split(".")
  const bytes = (text: string | undefined) => {
    const decoded = text === undefined ? undefined : Result.getOrUndefined(Base64.decode(text))
    return decoded === undefined ? undefined : new Uint8Array(decoded)
  }
  const ivBytes = bytes(iv)
  const dataBytes = bytes(data)
  if (version !== VERSION || ivBytes === undefined || dataBytes === undefined) return Effect.undefined
  return Effect.flatMap(deriveKey(secret, context), (key) =>
    Effect.promise(() =>
      crypto.subtle.decrypt({ name: "AES-GCM", iv: ivBytes, additionalData: encoder.encode(context.fingerprint) }, key, dataBytes)
        .then((plain) => new TextDecoder().decode(plain), () => undefined)
    ))
}
