/**
 * A software passkey authenticator for in-process tests of the account service's ceremonies: what
 * a browser and its platform authenticator answer to @simplewebauthn/browser's startRegistration
 * and startAuthentication, without a browser. ES256 keys from WebCrypto, "none" attestation,
 * resident (discoverable) credentials, a signature counter per credential. Just enough CBOR to
 * write the attestation object and the COSE key.
 *
 * `create` and `get` take the options the service handed out and the origin the "page" runs on;
 * tests pass another origin, an old challenge or a lowered counter to check the refusals.
 */
import { base64url } from "@model-platform/core/kernel"
import { Effect, Ref } from "effect"

export interface SoftCredential {
  readonly id: string
  readonly rpId: string
  readonly userHandle: string
  readonly keys: CryptoKeyPair
  readonly counter: number
}

// ---- CBOR (the subset WebAuthn needs) ---------------------------------------------------------

type Cbor = number | string | Uint8Array | ReadonlyMap<number | string, Cbor>

const head = (major: number, length: number): Array<number> => {
  if (length < 24) return [(major << 5) | length]
  if (length < 256) return [(major << 5) | 24, length]
  if (length < 65536) return [(major << 5) | 25, length >> 8, length & 255]
  return [(major << 5) | 26, (length >>> 24) & 255, (length >> 16) & 255, (length >> 8) & 255, length & 255]
}

export const cbor = (value: Cbor): Uint8Array => {
  if (typeof value === "number") return Uint8Array.from(value >= 0 ? head(0, value) : head(1, -1 - value))
  if (typeof value === "string") {
    const bytes = new TextEncoder().encode(value)
    return concat(Uint8Array.from(head(3, bytes.length)), bytes)
  }
  if (value instanceof Uint8Array) return concat(Uint8Array.from(head(2, value.length)), value)
  const parts: Array<Uint8Array> = [Uint8Array.from(head(5, value.size))]
  for (const [k, v] of value) parts.push(cbor(k), cbor(v))
  return concat(...parts)
}

const concat = (...parts: ReadonlyArray<Uint8Array>): Uint8Array => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0))
  let offset = 0
  for (const p of parts) {
    out.set(p, offset)
    offset += p.length
  }
  return out
}

// ---- helpers ----------------------------------------------------------------------------------

const sha256 = (bytes: Uint8Array) =>
  Effect.promise(() => crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>)).pipe(
    Effect.map((d) => new Uint8Array(d))
  )
const utf8 = (text: string) => new TextEncoder().encode(text)
const u32 = (n: number) => Uint8Array.from([(n >>> 24) & 255, (n >> 16) & 255, (n >> 8) & 255, n & 255])

/** WebCrypto's raw r||s ECDSA signature as the DER sequence WebAuthn carries. */
const derSignature = (raw: Uint8Array): Uint8Array => {
  const integer = (bytes: Uint8Array) => {
    let i = 0
    while (i < bytes.length - 1 && bytes[i] === 0) i++
    const trimmed = bytes.subarray(i)
    const body = trimmed[0]! & 0x80 ? concat(Uint8Array.of(0), trimmed) : trimmed
    return concat(Uint8Array.of(0x02, body.length), body)
  }
  const seq = concat(integer(raw.subarray(0, 32)), integer(raw.subarray(32)))
  return concat(Uint8Array.of(0x30, seq.length), seq)
}

const FLAG_UP = 0x01
const FLAG_UV = 0x04
const FLAG_AT = 0x40

interface CreationOptions {
  readonly challenge: string
  readonly rp: { readonly id?: string }
  readonly user: { readonly id: string }
  readonly excludeCredentials?: ReadonlyArray<{ readonly id: string }>
}
interface RequestOptions {
  readonly challenge: string
  readonly rpId?: string
}

const asCreation = (options: unknown) => options as CreationOptions
const asRequest = (options: unknown) => options as RequestOptions

export const makeSoftAuthenticator = Effect.gen(function*() {
  const credentials = yield* Ref.make<ReadonlyArray<SoftCredential>>([])

  /** The RegistrationResponseJSON for `options` (from beginSignUp, beginAddPasskey, beginRecovery) at `origin`. */
  const create = (rawOptions: unknown, origin: string) =>
    Effect.gen(function*() {
      const options = asCreation(rawOptions)
      const rpId = options.rp.id ?? new URL(origin).hostname
      const keys = yield* Effect.promise(() =>
        crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, false, ["sign", "verify"])
      )
      const jwk = yield* Effect.promise(() => crypto.subtle.exportKey("jwk", keys.publicKey))
      const fromB64 = (s: string) => Uint8Array.from(atob(s.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0))
      const coseKey = cbor(new Map<number, Cbor>([[1, 2], [3, -7], [-1, 1], [-2, fromB64(jwk.x!)], [-3, fromB64(jwk.y!)]]))
      const idBytes = crypto.getRandomValues(new Uint8Array(16))
      const id = base64url(idBytes)
      const authData = concat(
        yield* sha256(utf8(rpId)),
        Uint8Array.of(FLAG_UP | FLAG_UV | FLAG_AT),
        u32(0),
        new Uint8Array(16),
        Uint8Array.of(0, idBytes.length),
        idBytes,
        coseKey
      )
      const clientData = utf8(JSON.stringify({ type: "webauthn.create", challenge: options.challenge, origin, crossOrigin: false }))
      const attestationObject = cbor(new Map<string, Cbor>([["fmt", "none"], ["attStmt", new Map()], ["authData", authData]]))
      yield* Ref.update(credentials, (all) => [...all, { id, rpId, userHandle: options.user.id, keys, counter: 0 }])
      return {
        id,
        rawId: id,
        type: "public-key",
        response: {
          clientDataJSON: base64url(clientData),
          attestationObject: base64url(attestationObject),
          transports: ["internal"]
        },
        clientExtensionResults: {},
        authenticatorAttachment: "platform"
      }
    })

  /**
   * The AuthenticationResponseJSON for `options` at `origin`, signed by `credentialId` (default: the
   * newest credential of the rpID). The counter goes up by one unless `counter` is given.
   */
  const get = (rawOptions: unknown, origin: string, pick: { readonly credentialId?: string; readonly counter?: number } = {}) =>
    Effect.gen(function*() {
      const options = asRequest(rawOptions)
      const rpId = options.rpId ?? new URL(origin).hostname
      const all = yield* Ref.get(credentials)
      const credential = pick.credentialId === undefined
        ? [...all].reverse().find((c) => c.rpId === rpId)
        : all.find((c) => c.id === pick.credentialId)
      if (credential === undefined) return yield* Effect.die(new Error(`no soft credential for ${rpId}`))
      const counter = pick.counter ?? credential.counter + 1
      yield* Ref.update(credentials, (cs) => cs.map((c) => (c.id === credential.id ? { ...c, counter } : c)))
      const authData = concat(yield* sha256(utf8(rpId)), Uint8Array.of(FLAG_UP | FLAG_UV), u32(counter))
      const clientData = utf8(JSON.stringify({ type: "webauthn.get", challenge: options.challenge, origin, crossOrigin: false }))
      const signed = concat(authData, yield* sha256(clientData))
      const raw = yield* Effect.promise(() =>
        crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, credential.keys.privateKey, signed as Uint8Array<ArrayBuffer>)
      )
      return {
        id: credential.id,
        rawId: credential.id,
        type: "public-key",
        response: {
          clientDataJSON: base64url(clientData),
          authenticatorData: base64url(authData),
          signature: base64url(derSignature(new Uint8Array(raw))),
          userHandle: credential.userHandle
        },
        clientExtensionResults: {},
        authenticatorAttachment: "platform"
      }
    })

  return { create, get, credentials: Ref.get(credentials) }
})
export type SoftAuthenticator = Effect.Success<typeof makeSoftAuthenticator>
