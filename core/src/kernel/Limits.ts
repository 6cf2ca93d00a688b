/**
 * Limits on what a request may carry, in one place (docs/limits.md lists every value): body sizes
 * per surface, JSON nesting depth, header sizes, string and array lengths. The HTTP boundary
 * (http/RequestLimits.ts) and the gateway's validation (gateway/Validation.ts) both read them here.
 */

/** Deepest JSON nesting accepted in any body (objects and arrays; a scalar at the top is depth 0). */
export const MAX_JSON_DEPTH = 64

/**
 * Whether a parsed JSON value nests deeper than `max` levels. Iterative, so a value nested far
 * deeper than the call stack allows is answered too (and never stringified or walked recursively).
 */
export const exceedsJsonDepth = (value: unknown, max: number = MAX_JSON_DEPTH): boolean => {
  const stack: Array<{ readonly value: unknown; readonly depth: number }> = [{ value, depth: 0 }]
  while (stack.length > 0) {
    const { value: v, depth } = stack.pop()!
    if (typeof v !== "object" || v === null) continue
    if (depth + 1 > max) return true
    const children = Array.isArray(v) ? v : Object.values(v)
    for (const child of children) {
      if (typeof child === "object" && child !== null) stack.push({ value: child, depth: depth + 1 })
    }
  }
  return false
}

// ---- body sizes ---------------------------------------------------------------------------------

/**
 * Bytes of a management body (every path outside /v1 and /forecasts): the largest valid one, an
 * order or a key with every field, is well under 2 KiB, so 64 KiB never refuses a real request.
 */
export const MAX_MANAGEMENT_BODY_BYTES = 64 * 1024

/**
 * Bytes of a card processor's webhook (POST /webhooks/{processor}): Stripe's events are a few
 * KiB, a checkout session with every field well under 64 KiB; 512 KiB leaves room without
 * letting a caller grow the server.
 */
export const MAX_WEBHOOK_BODY_BYTES = 512 * 1024

/** Bytes of one take on POST /ingest/items (the spec's 12 MB audio take). */
export const MAX_TAKE_BYTES = 12 * 1024 * 1024

/**
 * Bytes of one file on POST /datasets/{id}/items: streamed into the blob store, never held whole
 * (http/FileRoutes.ts). The Lambda shell's own request limit (6 MB) comes first there.
 */
export const MAX_UPLOAD_BYTES = 1024 * 1024 * 1024

/**
 * A generous bound on the JSON bytes of one token of text: a token is about 4 bytes of English,
 * and a token of a non-Latin script sent as JSON \u escapes takes up to 12.
 */
export const BYTES_PER_TOKEN = 16
/** JSON bytes of one forecast history value: `-1.2345678901234567e+308,` is 25. */
export const BYTES_PER_HISTORY_VALUE = 32
/** JSON bytes around one embedding text (quotes, comma, escapes of the first characters). */
export const BYTES_PER_EMBEDDING_TEXT = 64
/** Room for what is not the model's input: the other fields, a tool list, a system prompt's JSON. */
export const INFERENCE_BODY_OVERHEAD_BYTES = 64 * 1024
/** Never less than this, so a catalogue of small models still takes ordinary SDK bodies. */
export const MIN_INFERENCE_BODY_BYTES = 1024 * 1024
/** Texts of one embeddings request (the spec's "up to 256"). */
export const MAX_EMBEDDING_TEXTS = 256

interface CatalogueModels {
  readonly models: ReadonlyArray<{
    readonly endpoint: string
    readonly context_length: number
    readonly limits?: { readonly max_history?: number; readonly max_inputs?: number } | undefined
  }>
}

/**
 * Bytes of a /v1 body, from the catalogue: the largest input any of its models reads (its whole
 * context as text, the framing of 256 embedding texts, a forecast's full history), plus the other
 * fields. A body above it cannot be a request any model could take.
 */
export const inferenceBodyLimit = (catalogue: CatalogueModels): number => {
  let largest = 0
  for (const model of catalogue.models) {
    const texts = model.endpoint === "/v1/embeddings"
      ? Math.min(model.limits?.max_inputs ?? MAX_EMBEDDING_TEXTS, MAX_EMBEDDING_TEXTS)
      : 1
    const history = model.endpoint === "/v1/forecasts" ? model.limits?.max_history ?? model.context_length : 0
    const bytes = model.context_length * BYTES_PER_TOKEN + texts * BYTES_PER_EMBEDDING_TEXT +
      history * BYTES_PER_HISTORY_VALUE
    largest = Math.max(largest, bytes)
  }
  return Math.max(MIN_INFERENCE_BODY_BYTES, largest + INFERENCE_BODY_OVERHEAD_BYTES)
}

// ---- request head -------------------------------------------------------------------------------

/**
 * Bytes of the request line and headers together: Node's default `maxHeaderSize`, kept by the Node
 * server's parser and counted the same way by the boundary for the other shells (Lambda).
 */
export const MAX_HEADER_BYTES = 16 * 1024

// ---- string and array lengths -------------------------------------------------------------------

/**
 * Characters of an id (path ids, ids in bodies and queries): the catalogue's ids are 1 to 128; the
 * platform's own are shorter. Within every store's key limit (DynamoDB's 1024-byte sort key).
 */
export const MAX_ID_LENGTH = 128
/** Characters of a key's name. */
export const MAX_NAME_LENGTH = 128
/** Characters of an Idempotency-Key header (Stripe's 255). */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255
/** Characters of a short free-form field: an address, a transaction id, an amount, a query filter. */
export const MAX_SHORT_TEXT_LENGTH = 200
/** Entries of a key's `permissions` (13 values exist; duplicates are allowed and dropped). */
export const MAX_PERMISSIONS = 32
