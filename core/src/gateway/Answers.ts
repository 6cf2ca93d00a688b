/**
 * What the gateway does to a machine's whole (non-streamed) answer before passing it on
 * (docs/gateway.md "Answers"). Chat and image answers go on as the machine sent them. Two kinds
 * are held to the spec's shape, because a client cannot tell a broken one from a real one:
 *
 * - forecasts: `point`, every row of `quantiles` and `quantile_levels` must be numbers (JSON has
 *   no NaN or Infinity, a machine that overflowed writes null), `history_used` an integer:
 *   otherwise the answer is broken (502 machine_error, not charged). `generation_time_ms` is an integer or null, as the spec says: rounded when the
 *   machine sent a fraction, null when it sent none.
 * - embeddings: `encoding_format` is honoured as OpenAI does, whatever the machine supports (it is
 *   always asked for floats): "base64" answers each vector as base64 of its little-endian float32
 *   values (what OpenAI's SDKs ask for by default and decode), "float" as an array of numbers
 *   (a machine answering base64 anyway is decoded).
 */
import { Base64 } from "effect/encoding"
import { Result } from "effect"
import type { ValidCall } from "./Validation.ts"

export type Answer =
  /** Pass the machine's bytes on as they came. */
  | { readonly _tag: "Pass" }
  /** Pass this JSON on instead. */
  | { readonly _tag: "Rewritten"; readonly json: unknown }
  /** The answer breaks the spec's shape: the machine's fault, nothing is passed on or charged. */
  | { readonly _tag: "Broken"; readonly reason: string }

const PASS: Answer = { _tag: "Pass" }

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)
const isNumbers = (u: unknown): u is ReadonlyArray<number> =>
  Array.isArray(u) && u.every((x) => typeof x === "number" && Number.isFinite(x))

/** Base64 of the values as little-endian float32 (OpenAI's encoding_format "base64"). */
export const float32Base64 = (values: ReadonlyArray<number>): string => {
  const bytes = new Uint8Array(values.length * 4)
  const view = new DataView(bytes.buffer)
  values.forEach((v, i) => view.setFloat32(i * 4, v, true))
  return Base64.encode(bytes)
}

/** The values of base64 little-endian float32, or undefined when the text is not that. */
export const base64Float32 = (text: string): Array<number> | undefined => {
  const decoded = Base64.decode(text)
  if (Result.isFailure(decoded) || decoded.success.length % 4 !== 0) return undefined
  const bytes = decoded.success
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  return Array.from({ length: bytes.length / 4 }, (_, i) => view.getFloat32(i * 4, true))
}

const forecast = (json: unknown): Answer => {
  if (!isRecord(json)) return { _tag: "Broken", reason: "a forecast that is not a JSON object" }
  if (!isNumbers(json.point)) return { _tag: "Broken", reason: "a forecast whose point is not a list of numbers" }
  const quantiles = json.quantiles
  if (quantiles !== undefined && !(Array.isArray(quantiles) && quantiles.every(isNumbers))) {
    return { _tag: "Broken", reason: "a forecast whose quantiles are not lists of numbers" }
  }
  if (json.quantile_levels !== undefined && !isNumbers(json.quantile_levels)) {
    return { _tag: "Broken", reason: "a forecast whose quantile_levels are not numbers" }
  }
  if (json.history_used !== undefined && !Number.isInteger(json.history_used)) {
    return { _tag: "Broken", reason: "a forecast whose history_used is not an integer" }
  }
  const ms = json.generation_time_ms
  if (ms === null || (typeof ms === "number" && Number.isInteger(ms))) return PASS
  const time = typeof ms === "number" && Number.isFinite(ms) ? Math.max(0, Math.round(ms)) : null
  return { _tag: "Rewritten", json: { ...json, generation_time_ms: time } }
}

const embeddings = (call: ValidCall, json: unknown): Answer => {
  if (!isRecord(json) || !Array.isArray(json.data)) return PASS
  const base64 = call.encodingFormat === "base64"
  let changed = false
  const data: Array<unknown> = []
  for (const item of json.data) {
    const embedding = isRecord(item) ? item.embedding : undefined
    if (base64 && isNumbers(embedding)) {
      data.push({ ...item, embedding: float32Base64(embedding) })
      changed = true
    } else if (!base64 && typeof embedding === "string") {
      const values = base64Float32(embedding)
      if (values === undefined) return { _tag: "Broken", reason: "an embedding that is neither numbers nor base64 float32" }
      data.push({ ...item, embedding: values })
      changed = true
    } else if (typeof embedding !== "string" && !isNumbers(embedding)) {
      return { _tag: "Broken", reason: "an embedding that is not a list of numbers" }
    } else {
      data.push(item)
    }
  }
  return changed ? { _tag: "Rewritten", json: { ...json, data } } : PASS
}

/** How the gateway answers with the machine's parsed JSON answer of a successful call. */
export const shapeAnswer = (call: ValidCall, json: unknown): Answer => {
  switch (call.endpoint) {
    case "/v1/forecasts":
      return forecast(json)
    case "/v1/embeddings":
      return embeddings(call, json)
    default:
      return PASS
  }
}
