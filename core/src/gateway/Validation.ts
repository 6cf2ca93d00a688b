/**
 * Validation of the bodies of the inference endpoints (/v1/chat/completions, /v1/embeddings,
 * /v1/forecasts, /v1/images/generations) against the catalogue, before anything is reserved or any
 * machine is called. It decides the error code of every malformed request (spec "Errors") and
 * prepares what the engine needs: the model, the machine asked for, the body to send on, and the
 * bounds used for metering. docs/gateway.md ("Validation") lists the rules.
 *
 * Never throws and never dies: every bad input is a GatewayError (answered 400, or 404 for an unknown model or machine).
 */
import { Effect, Result, Schema, SchemaIssue } from "effect"
import { exceedsJsonDepth, MAX_JSON_DEPTH } from "../kernel/Limits.ts"
import {
  type CatalogueConfig,
  dimensionsOf,
  imageSizesOf,
  maxHistoryOf,
  maxHorizonOf,
  maxInputsOf,
  type ModelConfig
} from "../catalogue/CatalogueConfig.ts"
import { type GatewayError, gatewayError, type GatewayErrorReason } from "./GatewayErrors.ts"
import {
  CHAT_FIELDS_NOT_SENT,
  ChatRequest,
  EmbeddingRequest,
  ForecastRequest,
  ImageRequest,
  MAX_EMBEDDING_TEXTS
} from "./Inference.ts"

export type Endpoint = "/v1/chat/completions" | "/v1/embeddings" | "/v1/forecasts" | "/v1/images/generations"

export interface ValidCall {
  readonly endpoint: Endpoint
  /** The model, from the catalogue configuration. */
  readonly model: ModelConfig
  /** body.machine if given (it exists in the catalogue); undefined lets the engine route. */
  readonly machine: string | undefined
  /** Chat only: the reply is streamed as server-sent events. false elsewhere. */
  readonly stream: boolean
  /**
   * What to send to the machine: the client's body (which holds only fields of its endpoint's
   * schema) minus `machine`; for chat without CHAT_FIELDS_NOT_SENT and with max_tokens set
   * to the effective cap (see `maxOutputTokens`) and enable_thinking kept only for reasoning
   * models; for embeddings without encoding_format (the machine is always asked for float
   * arrays; the gateway encodes them as the client asked, see `encodingFormat`); for forecasts
   * with the history cut to the model's history limit; for images with `size` one of the model's
   * sizes (its default when the client gave none or "auto").
   */
  readonly body: Record<string, unknown>
  /** Embeddings only: how the client wants its vectors (OpenAI's encoding_format; default float). */
  readonly encodingFormat?: "float" | "base64" | undefined
  /** Upper bound on output tokens (chat): the max_tokens the machine is sent. 0 elsewhere. */
  readonly maxOutputTokens: number
  /**
   * UTF-8 bytes of what the model reads: for chat the JSON of the messages plus the JSON of the
   * tools (an upper bound on the input tokens of any tokenizer that spends at least one byte per
   * token, with room for per-message overhead); for embeddings the input texts; for images the
   * prompt; 0 for forecasts.
   */
  readonly inputBytes: number
  /** Billable requests: 1, or n for images. */
  readonly requests: number
}

/** The feature that marks a reasoning model: only these accept enable_thinking: true. */
export const REASONING_FEATURE = "reasoning"
/** The feature that allows function calling (tools, tool_choice). */
export const TOOLS_FEATURE = "tools"

/** The schema of each endpoint's body: its fields are the only ones a body may carry. */
const ENDPOINT_SCHEMA = {
  "/v1/chat/completions": ChatRequest,
  "/v1/embeddings": EmbeddingRequest,
  "/v1/forecasts": ForecastRequest,
  "/v1/images/generations": ImageRequest
} as const satisfies Record<Endpoint, { readonly fields: object }>

const ENDPOINT_KIND: Record<Endpoint, string> = {
  "/v1/chat/completions": "a language model",
  "/v1/embeddings": "an embedding model",
  "/v1/forecasts": "a forecasting model",
  "/v1/images/generations": "an image model"
}

const bad = (reason: GatewayErrorReason, message: string) => gatewayError(reason, message)
const invalid = (message: string) => bad("invalid_input", message)

const isRecord = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u)

/** UTF-8 length of a string without Node's Buffer (core runs on every runtime). */
export const utf8Bytes = (s: string): number => {
  let n = 0
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c < 0x80) n += 1
    else if (c < 0x800) n += 2
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 4
      i++
    } else n += 3
  }
  return n
}

// ---- Schema issues as one line ------------------------------------------------------------

const formatter = SchemaIssue.makeFormatterStandardSchemaV1()

/** `messages[0].role` style path. */
export const formatPath = (path: ReadonlyArray<unknown>): string => {
  let out = ""
  for (const p of path) {
    const key = isRecord(p) && "key" in p ? p.key : p
    if (typeof key === "number") out += `[${key}]`
    else out += out === "" ? String(key) : `.${String(key)}`
  }
  return out
}

interface Issue {
  readonly path: string
  readonly message: string
}

const issuesOf = (error: Schema.SchemaError): ReadonlyArray<Issue> =>
  formatter(error.issue).issues.map((i) => ({
    path: formatPath(i.path ?? []),
    message: i.message
  }))

/** "field: problem; other: problem", at most a few, naming each field by its path. */
const describeIssues = (issues: ReadonlyArray<Issue>): string => {
  const shown = issues.slice(0, 5).map((i) => (i.path === "" ? i.message : `${i.path}: ${i.message}`))
  const more = issues.length > 5 ? `; and ${issues.length - 5} more` : ""
  return (shown.join("; ") + more).replace(/\s*\n\s*/g, " ")
}

/** Decodes with every issue collected; fails with one GatewayError whose code follows `codeOf`. */
const decode = <S extends Schema.Top & { readonly DecodingServices: never }>(
  schema: S,
  raw: unknown,
  codeOf: (path: string) => GatewayErrorReason = () => "invalid_input"
): Effect.Effect<S["Type"], GatewayError> => {
  let result: Result.Result<S["Type"], Schema.SchemaError>
  try {
    result = Schema.decodeUnknownResult(schema as any)(raw, { errors: "all" }) as any
  } catch (e) {
    // Decoding does not throw for data; guard anyway so a surprise never becomes a defect.
    return Effect.fail(invalid(`The request body could not be read: ${String(e)}`))
  }
  if (Result.isSuccess(result)) return Effect.succeed(result.success)
  const issues = issuesOf(result.failure)
  const first = issues[0]?.path ?? ""
  return Effect.fail(bad(codeOf(first), describeIssues(issues) || "The request body is invalid."))
}

const topField = (path: string) => path.split(/[.[]/)[0] ?? ""

// ---- The common part: model, endpoint, machine -----------------------------------------

interface Located {
  readonly raw: Record<string, unknown>
  readonly model: ModelConfig
  readonly machine: string | undefined
}

const locate = (endpoint: Endpoint, raw: unknown, config: CatalogueConfig): Effect.Effect<Located, GatewayError> => {
  if (!isRecord(raw)) {
    return Effect.fail(invalid("The request body must be a JSON object."))
  }
  const modelId = raw.model
  if (modelId === undefined || modelId === null || modelId === "") {
    return Effect.fail(bad(
      "missing_model",
      `The request body needs "model": the id of ${ENDPOINT_KIND[endpoint]} (see GET /v1/models).`
    ))
  }
  if (typeof modelId !== "string") {
    return Effect.fail(invalid("model: must be a string, the id of a model (see GET /v1/models)."))
  }
  const model = config.models.find((m) => m.id === modelId)
  if (model === undefined) {
    return Effect.fail(gatewayError("model_not_found", `No model "${modelId}"; GET /v1/models lists them.`))
  }
  if (model.endpoint !== endpoint) {
    return Effect.fail(bad(
      "wrong_endpoint",
      `${model.id} is ${ENDPOINT_KIND[model.endpoint]}: call POST ${model.endpoint}`
    ))
  }
  const machine = raw.machine
  if (machine === undefined || machine === null) return Effect.succeed({ raw, model, machine: undefined })
  if (typeof machine !== "string" || machine === "") {
    return Effect.fail(invalid("machine: must be a machine id (a non-empty string), or left out."))
  }
  if (!config.machines.some((m) => m.id === machine)) {
    return Effect.fail(gatewayError("machine_not_found", `No machine "${machine}"; GET /machines lists them.`))
  }
  return Effect.succeed({ raw, model, machine })
}

/** Field names as a message shows them: quoted (control characters escaped), each cut to 64 characters. */
const fieldNames = (names: ReadonlyArray<string>): string => {
  const shown = names.slice(0, 5).map((n) => JSON.stringify(n.length > 64 ? `${n.slice(0, 64)}…` : n))
  return shown.join(", ") + (names.length > 5 ? ` and ${names.length - 5} more` : "")
}

/**
 * A field the endpoint's schema does not list is refused, as OpenAI refuses it ("Unrecognized
 * request argument supplied"): sent on, `best_of`, `top_k` or a vendor's extra would make the
 * machine do work the platform neither checks nor bills; dropped, the client would believe it took
 * effect. docs/gateway.md "Validation".
 */
const refuseUnknownFields = (endpoint: Endpoint, raw: Record<string, unknown>): Effect.Effect<void, GatewayError> => {
  const fields = ENDPOINT_SCHEMA[endpoint].fields
  const unknown = Object.keys(raw).filter((name) => !Object.hasOwn(fields, name))
  if (unknown.length === 0) return Effect.void
  return Effect.fail(invalid(
    `Unrecognized request argument${unknown.length === 1 ? "" : "s"} supplied: ${fieldNames(unknown)}. ` +
      `POST ${endpoint} takes only the fields listed in GET /v1/openapi.json.`
  ))
}

/** A copy without `keys` (Object.fromEntries keeps a "__proto__" key as a plain field). */
const without = (body: Record<string, unknown>, ...keys: ReadonlyArray<string>): Record<string, unknown> =>
  Object.fromEntries(Object.entries(body).filter(([k]) => !keys.includes(k)))

// ---- Per endpoint -------------------------------------------------------------------------

const chat = Effect.fnUntraced(function*({ raw, model, machine }: Located) {
  const req = yield* decode(ChatRequest, raw)
  const features = model.features
  if (raw.n !== undefined && raw.n !== null && raw.n !== 1) {
    return yield* invalid("n: must be 1 (one choice per request).")
  }
  const streamOptions = raw.stream_options
  if (streamOptions !== undefined && streamOptions !== null) {
    if (!isRecord(streamOptions)) return yield* invalid("stream_options: must be an object, e.g. {\"include_usage\": true}.")
    if (req.stream !== true) return yield* invalid("stream_options: only allowed when stream is true.")
  }
  const toolsAllowed = features.includes(TOOLS_FEATURE)
  const hasTools = req.tools !== undefined && req.tools.length > 0
  const choosesTool = req.tool_choice !== undefined && req.tool_choice !== "none"
  if ((hasTools || choosesTool) && !toolsAllowed) {
    return yield* invalid(
      `${model.id} does not support function calling: remove "tools" and "tool_choice" (models with the "tools" feature in GET /v1/models accept them).`
    )
  }
  const reasoning = features.includes(REASONING_FEATURE)
  if (req.enable_thinking === true && !reasoning) {
    return yield* invalid(
      `enable_thinking: ${model.id} is not a reasoning model (models with the "reasoning" feature in GET /v1/models accept it).`
    )
  }
  const mct = req.max_completion_tokens
  // The cap: the model's max_output_tokens (a chat model with 0 declares none: then its context).
  const cap = model.max_output_tokens > 0 ? model.max_output_tokens : model.context_length
  const asked = [req.max_tokens, mct].filter((n): n is number => typeof n === "number")
  const maxOutputTokens = Math.min(cap, ...asked)

  // Dropped: `machine` (ours), OpenAI's service fields, enable_thinking (off) on other models, and
  // an empty tools list or tool_choice "none" on a model without tools, which would only confuse
  // its machine.
  const dropped = [
    "machine",
    "max_completion_tokens",
    ...CHAT_FIELDS_NOT_SENT,
    ...(reasoning ? [] : ["enable_thinking"]),
    ...(toolsAllowed ? [] : ["tools", "tool_choice"])
  ]
  const body = without(raw, ...dropped)
  body.max_tokens = maxOutputTokens
  if (typeof mct === "number") body.max_completion_tokens = maxOutputTokens
  const inputBytes = utf8Bytes(JSON.stringify(raw.messages)) + (hasTools ? utf8Bytes(JSON.stringify(req.tools)) : 0)
  return {
    endpoint: "/v1/chat/completions",
    model,
    machine,
    stream: req.stream === true,
    body,
    maxOutputTokens,
    inputBytes,
    requests: 1
  } satisfies ValidCall
})

const embeddings = Effect.fnUntraced(function*({ raw, model, machine }: Located) {
  if (Array.isArray(raw.input) && raw.input.length > MAX_EMBEDDING_TEXTS) {
    return yield* invalid(`input: at most ${MAX_EMBEDDING_TEXTS} texts per request (got ${raw.input.length}).`)
  }
  if (Array.isArray(raw.input) && raw.input.length > 0 && raw.input.every((x) => typeof x === "number" || Array.isArray(x))) {
    return yield* invalid("input: token arrays are not accepted; send the text (a string or an array of strings).")
  }
  const req = yield* decode(EmbeddingRequest, raw)
  const texts = typeof req.input === "string" ? [req.input] : req.input
  const empty = texts.findIndex((t) => t.length === 0)
  if (empty >= 0) {
    return yield* invalid(typeof req.input === "string" ? "input: must not be empty." : `input[${empty}]: must not be empty.`)
  }
  const maxInputs = maxInputsOf(model)
  if (texts.length > maxInputs) {
    return yield* invalid(`input: ${model.id} takes at most ${maxInputs} texts per request (got ${texts.length}).`)
  }
  if (req.dimensions !== undefined) {
    const allowed = dimensionsOf(model)
    if (!allowed.includes(req.dimensions)) {
      return yield* invalid(
        allowed.length === 0
          ? `dimensions: ${model.id} does not support shorter vectors; leave dimensions out.`
          : `dimensions: ${model.id} supports ${allowed.join(", ")} (got ${req.dimensions}).`
      )
    }
  }
  return {
    endpoint: "/v1/embeddings",
    model,
    machine,
    stream: false,
    body: without(raw, "machine", "encoding_format"),
    encodingFormat: req.encoding_format ?? "float",
    maxOutputTokens: 0,
    inputBytes: texts.reduce((n, t) => n + utf8Bytes(t), 0),
    requests: 1
  } satisfies ValidCall
})

const forecastCode = (path: string): GatewayErrorReason => {
  const top = topField(path)
  return top === "history" ? "invalid_history" : top === "horizon" ? "invalid_horizon" : "invalid_input"
}

/**
 * The largest history magnitude accepted. Beyond it a model's arithmetic breaks down: squares and
 * sums of squares of 512 values stay finite even in float32 (the precision of GPU forecasting
 * models) only below about 1e17, and 1e308 overflows float64 at once (the answer would be null
 * points). Beyond 2^53 integers are not even exact. A series this large can be rescaled.
 */
export const MAX_HISTORY_MAGNITUDE = 1e15

const forecasts = Effect.fnUntraced(function*({ raw, model, machine }: Located) {
  const req = yield* decode(ForecastRequest, raw, forecastCode)
  const huge = req.history.findIndex((x) => Math.abs(x) > MAX_HISTORY_MAGNITUDE)
  if (huge >= 0) {
    return yield* bad(
      "invalid_history",
      `history[${huge}]: ${req.history[huge]} is beyond the largest magnitude a forecasting model takes (${MAX_HISTORY_MAGNITUDE}); rescale the series.`
    )
  }
  // Always bounded (the catalogue's default when the model sets none): a forecast is priced per request.
  const maxHorizon = maxHorizonOf(model)
  if (req.horizon > maxHorizon) {
    return yield* bad("invalid_horizon", `horizon: ${model.id} forecasts at most ${maxHorizon} steps (got ${req.horizon}).`)
  }
  const maxHistory = maxHistoryOf(model)
  const history = req.history.length > maxHistory ? req.history.slice(-maxHistory) : req.history
  const body = without(raw, "machine")
  body.history = history
  return {
    endpoint: "/v1/forecasts",
    model,
    machine,
    stream: false,
    body,
    maxOutputTokens: 0,
    inputBytes: 0,
    requests: 1
  } satisfies ValidCall
})

const imageCode = (path: string): GatewayErrorReason => (topField(path) === "size" ? "invalid_size" : "invalid_input")

const images = Effect.fnUntraced(function*({ raw, model, machine }: Located) {
  const req = yield* decode(ImageRequest, raw, imageCode)
  // Always one of the model's sizes (the catalogue's default list when it sets none): an image is
  // priced per request, so its size is bounded; without one (or "auto") the model's default is
  // sent, so the machine never picks a larger one itself.
  const sizes = imageSizesOf(model)
  const size = req.size === undefined || req.size === null || req.size === "auto" ? sizes[0]! : req.size
  if (!sizes.includes(size)) {
    return yield* bad("invalid_size", `size: ${model.id} draws ${sizes.join(", ")} (got ${req.size}).`)
  }
  const body = without(raw, "machine")
  body.size = size
  return {
    endpoint: "/v1/images/generations",
    model,
    machine,
    stream: false,
    body,
    maxOutputTokens: 0,
    inputBytes: utf8Bytes(req.prompt),
    requests: req.n ?? 1
  } satisfies ValidCall
})

/** `raw` is the parsed JSON body (the route answers invalid_json itself when the body is not JSON). */
export const validateCall = (
  endpoint: Endpoint,
  raw: unknown,
  config: CatalogueConfig
): Effect.Effect<ValidCall, GatewayError> => {
  // Depth first, before any decoding: schema decoding, JSON.stringify and every recursive walk of
  // a body nested thousands of levels would overflow the stack.
  if (exceedsJsonDepth(raw)) {
    return Effect.fail(invalid(`The request body nests deeper than ${MAX_JSON_DEPTH} levels of objects and arrays.`))
  }
  return Effect.flatMap(locate(endpoint, raw, config), (located): Effect.Effect<ValidCall, GatewayError> => {
    const known = refuseUnknownFields(endpoint, located.raw)
    switch (endpoint) {
      case "/v1/chat/completions":
        return Effect.andThen(known, chat(located))
      case "/v1/embeddings":
        return Effect.andThen(known, embeddings(located))
      case "/v1/forecasts":
        return Effect.andThen(known, forecasts(located))
      case "/v1/images/generations":
        return Effect.andThen(known, images(located))
    }
  }).pipe(
    // Last line of defence: a defect in validation answers 400, never a 500, and its text (a
    // stack overflow, an engine message) stays in the log.
    Effect.catchDefect((defect) =>
      Effect.andThen(
        Effect.logError("gateway: validation died on a request body", defect),
        Effect.fail(invalid("The request body could not be validated."))
      )
    )
  )
}
