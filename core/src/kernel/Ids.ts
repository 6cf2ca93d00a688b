/** Identifiers and random bytes from the platform's cryptographic source (Web Crypto). */
import { Effect, Schema } from "effect"

declare const IdKind: unique symbol
/**
 * An id of one kind (docs/architecture.md "Ids"): a plain string (from the wire, a store) is
 * accepted where one is expected, but an id of one kind is never accepted for another.
 */
export type IdOf<K extends string> = string & { readonly [IdKind]?: K }
export type AccountId = IdOf<"account">
export type KeyId = IdOf<"key">
export type AgentId = IdOf<"agent">
export type OrderId = IdOf<"order">

/** A string field of a record schema holding an id of one kind; it decodes and encodes as a string. */
export const IdString = <K extends string>(): Schema.Codec<IdOf<K>, string> => Schema.String

const BASE64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

/** base64url without padding (RFC 4648 §5). */
export const base64url = (bytes: Uint8Array): string => {
  let out = ""
  let i = 0
  for (; i + 2 < bytes.length; i += 3) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!
    out += BASE64URL[n >> 18]! + BASE64URL[(n >> 12) & 63]! + BASE64URL[(n >> 6) & 63]! + BASE64URL[n & 63]!
  }
  if (i < bytes.length) {
    const n = (bytes[i]! << 16) | ((bytes[i + 1] ?? 0) << 8)
    out += BASE64URL[n >> 18]! + BASE64URL[(n >> 12) & 63]!
    if (i + 1 < bytes.length) out += BASE64URL[(n >> 6) & 63]!
  }
  return out
}

// Ids take their bytes from a pool filled from the CSPRNG 4 KiB at a time: one system call per
// 256 ids instead of one per id (ids are made several times per inference call).
const ID_POOL_SIZE = 4096
let idPool = new Uint8Array(0)
let idPoolOffset = 0
const idBytes = (n: number): Uint8Array => {
  if (idPoolOffset + n > idPool.length) {
    idPool = crypto.getRandomValues(new Uint8Array(ID_POOL_SIZE))
    idPoolOffset = 0
  }
  const bytes = idPool.subarray(idPoolOffset, idPoolOffset + n)
  idPoolOffset += n
  return bytes
}

/** Random bytes from the CSPRNG. Effect's Random service is not cryptographic, so secrets avoid it. */
export const randomBytes = (n: number): Effect.Effect<Uint8Array> =>
  Effect.sync(() => crypto.getRandomValues(new Uint8Array(n)))

/** The kind of id each prefix makes. */
interface IdOfPrefix {
  readonly acct: AccountId
  readonly key: KeyId
  readonly agt: AgentId
  readonly ord: OrderId
  readonly ord_auto: OrderId
}

/** A random identifier with a readable type prefix, e.g. `key_…`, 128 bits. */
export function generateId<P extends keyof IdOfPrefix>(prefix: P): Effect.Effect<IdOfPrefix[P]>
export function generateId(prefix: string): Effect.Effect<string>
export function generateId(prefix: string): Effect.Effect<string> {
  return Effect.sync(() => `${prefix}_${base64url(idBytes(16))}`)
}
