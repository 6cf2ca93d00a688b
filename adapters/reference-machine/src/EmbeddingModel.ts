/**
 * `ref-embed`: hashed character n-gram embeddings, Matryoshka-nested, query/document aware.
 * See docs/reference-machine.md for the exact method.
 */
import { fnv1a, invalidInput } from "./Errors.ts"
import { countTokens } from "./Tokenizer.ts"

/** Full vector length. */
export const FULL_DIMENSIONS = 1024
/** The lengths a caller may ask for with `dimensions`. */
export const DIMENSIONS: ReadonlyArray<number> = [1024, 768, 512, 256, 128, 64, 32]
/** Most texts in one request. */
export const MAX_INPUTS = 256
/** Most tokens in one text. */
export const MAX_INPUT_TOKENS = 8192
/**
 * The nested bands: every feature lands in one bucket of each band, so the first d components
 * (d one of DIMENSIONS) always hold a complete, coarser sketch of the whole text.
 */
export const BANDS: ReadonlyArray<readonly [start: number, end: number]> = [
  [0, 32],
  [32, 64],
  [64, 128],
  [128, 256],
  [256, 512],
  [512, 768],
  [768, 1024]
]
/** Weight of the input-type feature relative to the norm of the text's features. */
export const INPUT_TYPE_WEIGHT = 0.25

export type InputType = "document" | "query"

export interface EmbeddingRequest {
  readonly model: string
  readonly inputs: ReadonlyArray<string>
  readonly dimensions: number
  readonly inputType: InputType
  readonly encoding: "float" | "base64"
}

/** Validates an embeddings body (model already checked by the caller). */
export const parseEmbeddingRequest = (body: Record<string, unknown>, model: string): EmbeddingRequest => {
  const raw = body.input
  let inputs: Array<string>
  if (typeof raw === "string") inputs = [raw]
  else if (Array.isArray(raw) && raw.every((s) => typeof s === "string")) inputs = raw as Array<string>
  else throw invalidInput("input", "input must be a string or an array of strings")
  if (inputs.length === 0 || inputs.length > MAX_INPUTS) {
    throw invalidInput("input", `input must hold 1 to ${MAX_INPUTS} texts`)
  }
  inputs.forEach((s, i) => {
    if (s.trim().length === 0) throw invalidInput(`input[${i}]`, "input texts must not be empty")
  })
  let dimensions = FULL_DIMENSIONS
  if (body.dimensions !== undefined && body.dimensions !== null) {
    if (typeof body.dimensions !== "number" || !DIMENSIONS.includes(body.dimensions)) {
      throw invalidInput("dimensions", `dimensions must be one of ${DIMENSIONS.join(", ")}`)
    }
    dimensions = body.dimensions
  }
  let inputType: InputType = "document"
  if (body.input_type !== undefined && body.input_type !== null) {
    if (body.input_type !== "document" && body.input_type !== "query") {
      throw invalidInput("input_type", "input_type must be \"document\" or \"query\"")
    }
    inputType = body.input_type
  }
  let encoding: "float" | "base64" = "float"
  if (body.encoding_format !== undefined && body.encoding_format !== null) {
    if (body.encoding_format !== "float" && body.encoding_format !== "base64") {
      throw invalidInput("encoding_format", "encoding_format must be \"float\" or \"base64\"")
    }
    encoding = body.encoding_format
  }
  return { model, inputs, dimensions, inputType, encoding }
}

/** The features of a text: character 3-grams of " " + text + " " and whole words. */
export const features = (text: string): Map<string, number> => {
  const norm = text.toLowerCase().replace(/\s+/g, " ").trim()
  const padded = ` ${norm} `
  const out = new Map<string, number>()
  const add = (f: string) => out.set(f, (out.get(f) ?? 0) + 1)
  for (let i = 0; i + 3 <= padded.length; i++) add(padded.slice(i, i + 3))
  for (const w of norm.split(" ")) if (w.length > 0) add(`\u0002${w}`)
  return out
}

/** A 32-bit mix (murmur3's finaliser). */
const mix = (h: number): number => {
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35)
  h ^= h >>> 16
  return h >>> 0
}

const addFeature = (v: Float64Array, feature: string, weight: number): void => {
  const h = fnv1a(feature)
  for (let k = 0; k < BANDS.length; k++) {
    const band = BANDS[k]!
    const g = mix(h ^ Math.imul(k + 1, 0x9e3779b9))
    const size = band[1] - band[0]
    const sign = (g & 0x80000000) === 0 ? 1 : -1
    v[band[0] + ((g & 0x7fffffff) % size)]! += sign * weight
  }
}

/** The embedding of one text: `dimensions` components, L2 norm 1, as float32 values. */
export const embed = (text: string, dimensions: number, inputType: InputType): Float32Array => {
  const v = new Float64Array(FULL_DIMENSIONS)
  let sumSq = 0
  for (const [f, count] of features(text)) {
    addFeature(v, f, count)
    sumSq += count * count
  }
  addFeature(v, `\u0001input_type:${inputType}`, INPUT_TYPE_WEIGHT * Math.sqrt(sumSq))
  let norm = 0
  for (let i = 0; i < dimensions; i++) norm += v[i]! * v[i]!
  norm = Math.sqrt(norm)
  const out = new Float32Array(dimensions)
  if (norm === 0) {
    out[0] = 1
    return out
  }
  for (let i = 0; i < dimensions; i++) out[i] = v[i]! / norm
  return out
}

/** Base64 of float32 little-endian values (OpenAI's `encoding_format: "base64"`). */
export const toBase64 = (v: Float32Array): string => {
  const buf = Buffer.allocUnsafe(v.length * 4)
  for (let i = 0; i < v.length; i++) buf.writeFloatLE(v[i]!, i * 4)
  return buf.toString("base64")
}

/** The whole response body. */
export const runEmbeddings = (req: EmbeddingRequest): Record<string, unknown> => {
  let tokens = 0
  const data = req.inputs.map((text, index) => {
    const n = countTokens(text)
    if (n > MAX_INPUT_TOKENS) {
      throw invalidInput(`input[${index}]`, `each text may hold at most ${MAX_INPUT_TOKENS} tokens; this one holds ${n}`)
    }
    tokens += n
    const v = embed(text, req.dimensions, req.inputType)
    return { object: "embedding", index, embedding: req.encoding === "base64" ? toBase64(v) : Array.from(v) }
  })
  return { object: "list", model: req.model, data, usage: { prompt_tokens: tokens, total_tokens: tokens } }
}

/** Cosine similarity of two equally long vectors. */
export const cosine = (a: ArrayLike<number>, b: ArrayLike<number>): number => {
  let dot = 0
  let na = 0
  let nb = 0
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!
    const y = b[i]!
    dot += x * y
    na += x * x
    nb += y * y
  }
  return dot / Math.sqrt(na * nb)
}
