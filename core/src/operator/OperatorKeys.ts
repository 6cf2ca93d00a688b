/**
 * The operator's credential (docs/operations.md "The operator console"): not an account key, but
 * an `mpo_` secret whose SHA-256 is configured with a name, `OPERATOR_KEYS="ada:<sha256 hex>,…"`.
 * `./platform admin new-key <name>` makes one: it prints the secret once, and the entry to add to
 * OPERATOR_KEYS. The server keeps only the hashes; the name is who the audit log says acted.
 */
import { Data, Effect, Layer, Context } from "effect"
import { base64url, randomBytes } from "../kernel/Ids.ts"
import { sha256Hex } from "../kernel/Sha256.ts"

export const OPERATOR_SECRET_PREFIX = "mpo_"
const SECRET_SHAPE = /^mpo_[A-Za-z0-9_-]{43}$/
const NAME_SHAPE = /^[a-z0-9][a-z0-9._-]{0,63}$/
const HASH_SHAPE = /^[0-9a-f]{64}$/

export interface OperatorKey {
  /** Who holds it (1 to 64 of a-z 0-9 . _ -). */
  readonly name: string
  /** SHA-256 (hex) of the secret. */
  readonly hash: string
}

export class OperatorKeysError extends Data.TaggedError("OperatorKeysError")<{ readonly message: string }> {}

/** OPERATOR_KEYS' value: `name:hash` entries separated by commas (spaces ignored); empty: none. */
export const parseOperatorKeys = (value: string): Effect.Effect<ReadonlyArray<OperatorKey>, OperatorKeysError> =>
  Effect.suspend(() => {
    const keys: Array<OperatorKey> = []
    for (const entry of value.split(",").map((e) => e.trim()).filter((e) => e !== "")) {
      const [name = "", hash = "", ...rest] = entry.split(":")
      if (rest.length > 0 || !NAME_SHAPE.test(name) || !HASH_SHAPE.test(hash.toLowerCase())) {
        return Effect.fail(new OperatorKeysError({
          message: `OPERATOR_KEYS entries are name:sha256-hex (a name of a-z 0-9 . _ -, 64 hex digits), as ` +
            `\`./platform admin new-key <name>\` prints them; "${entry.slice(0, 20)}…" is not one.`
        }))
      }
      if (keys.some((k) => k.name === name)) {
        return Effect.fail(new OperatorKeysError({ message: `OPERATOR_KEYS names ${name} twice.` }))
      }
      keys.push({ name, hash: hash.toLowerCase() })
    }
    return Effect.succeed(keys)
  })

/** A new operator secret and its OPERATOR_KEYS entry. */
export const newOperatorKey = (name: string): Effect.Effect<{ readonly secret: string; readonly entry: string }, OperatorKeysError> =>
  NAME_SHAPE.test(name)
    ? Effect.map(randomBytes(32), (bytes) => {
      const secret = OPERATOR_SECRET_PREFIX + base64url(bytes)
      return { secret, entry: `${name}:${sha256Hex(secret)}` }
    })
    : Effect.fail(new OperatorKeysError({ message: "An operator's name is 1 to 64 of a-z 0-9 . _ - (starting with a letter or digit)." }))

export class OperatorKeys extends Context.Service<OperatorKeys, {
  /** The operator holding this secret, or undefined. */
  readonly operatorOf: (secret: string) => string | undefined
  /** Whether any operator key is configured. */
  readonly configured: boolean
}>()("@model-platform/core/operator/OperatorKeys") {
  static readonly layer = (keys: ReadonlyArray<OperatorKey>) =>
    Layer.succeed(OperatorKeys, {
      configured: keys.length > 0,
      operatorOf: (secret) => {
        if (!SECRET_SHAPE.test(secret)) return undefined
        // Looked up by the secret's hash: a map of hashes says nothing of the secrets.
        const hash = sha256Hex(secret)
        return keys.find((k) => k.hash === hash)?.name
      }
    })
}
