/**
 * Bodies of the inference endpoints under /v1 and of forecasting: chat (OpenAI's chat completion
 * request), embeddings, forecasts and image generation, with the responses the platform itself
 * shapes. Chat responses are OpenAI's and come from the machine. Every body may name a `machine`.
 * A request body takes only the fields its schema lists (docs/gateway.md "Validation": any other
 * field is refused, so nothing the platform does not know of reaches a machine); inside chat
 * messages and tools, OpenAI's further fields are kept as sent.
 */
import { Schema } from "effect"
import { MAX_EMBEDDING_TEXTS } from "../kernel/Limits.ts"

const Rest = [Schema.Record(Schema.String, Schema.Unknown)] as const
const ModelId = Schema.String.check(Schema.isNonEmpty({ expected: "a model id" }))
const MachineId = Schema.String.check(Schema.isNonEmpty({ expected: "a machine id" }))
const IntAtLeast = (minimum: number) =>
  Schema.Int.check(Schema.isGreaterThanOrEqualTo(minimum, { expected: `an integer of at least ${minimum}` }))

// ---- Chat (POST /v1/chat/completions) -----------------------------------------------------

export const ChatRoleValues = ["system", "developer", "user", "assistant", "tool", "function"] as const
export const ChatRole = Schema.Literals(ChatRoleValues)
export type ChatRole = typeof ChatRole.Type

/**
 * An OpenAI chat message: role and content (text, or content parts), plus whatever else OpenAI
 * allows on it (name, tool_calls, tool_call_id, ...), kept as sent. content may be null or
 * absent on an assistant message that carries tool_calls.
 */
export const ChatMessage = Schema.StructWithRest(
  Schema.Struct({
    role: ChatRole,
    content: Schema.optionalKey(Schema.NullOr(Schema.Union([
      Schema.String,
      Schema.Array(Schema.StructWithRest(Schema.Struct({ type: Schema.String }), Rest))
    ])))
  }),
  Rest
)
export type ChatMessage = typeof ChatMessage.Type

/** A function tool {type: function, function: {name, description?, parameters?, strict?}} or another tool type. */
export const ChatTool = Schema.StructWithRest(
  Schema.Struct({
    type: Schema.String,
    function: Schema.optionalKey(Schema.StructWithRest(Schema.Struct({ name: Schema.String }), Rest))
  }),
  Rest
)
export type ChatTool = typeof ChatTool.Type

/** none | auto | required, or an object naming the tool. */
export const ChatToolChoice = Schema.Union([
  Schema.Literals(["none", "auto", "required"]),
  Schema.StructWithRest(Schema.Struct({ type: Schema.String }), Rest)
])
export type ChatToolChoice = typeof ChatToolChoice.Type

/** OpenAI's stop: one string or up to 4. */
export const ChatStop = Schema.Union([
  Schema.String,
  Schema.Array(Schema.String).check(Schema.isBetweenLength(1, 4, { expected: "1 to 4 stop sequences" }))
])

const Penalty = Schema.optionalKey(Schema.NullOr(
  Schema.Finite.check(Schema.isBetween({ minimum: -2, maximum: 2 }, { expected: "a number from -2 to 2" }))
))

/**
 * OpenAI's chat fields that concern OpenAI's own service (stored completions, their metadata,
 * service tiers, prompt caching, abuse monitoring): accepted, so a client written for OpenAI keeps
 * working, and never sent to a machine, which has no use for them.
 */
export const CHAT_FIELDS_NOT_SENT = ["store", "metadata", "service_tier", "prompt_cache_key", "safety_identifier"] as const

/**
 * The chat body: the spec's fields, and the OpenAI fields a machine acts on and bills in tokens.
 * Fields OpenAI marks nullable accept null as "unset". Any other field is refused
 * (docs/gateway.md "Validation"): `best_of`, `top_k` or a vendor's extra would make a machine do
 * work the platform neither checks nor bills.
 */
export const ChatRequest = Schema.Struct({
  model: ModelId,
  messages: Schema.Array(ChatMessage).check(Schema.isNonEmpty({ expected: "at least one message" })),
  stream: Schema.optionalKey(Schema.NullOr(Schema.Boolean)),
  /** Only with stream: true, e.g. {"include_usage": true} (checked in gateway/Validation.ts). */
  stream_options: Schema.optionalKey(Schema.NullOr(Schema.Record(Schema.String, Schema.Unknown))),
  /** Capped at the model's max_output_tokens. */
  max_tokens: Schema.optionalKey(Schema.NullOr(IntAtLeast(1))),
  /** OpenAI's newer name for max_tokens; capped the same way. */
  max_completion_tokens: Schema.optionalKey(Schema.NullOr(IntAtLeast(1))),
  /** One choice per request: 1 (checked in gateway/Validation.ts). */
  n: Schema.optionalKey(Schema.NullOr(Schema.Int)),
  temperature: Schema.optionalKey(Schema.NullOr(
    Schema.Finite.check(Schema.isBetween({ minimum: 0, maximum: 2 }, { expected: "a number from 0 to 2" }))
  )),
  top_p: Schema.optionalKey(Schema.NullOr(
    Schema.Finite.check(Schema.isBetween({ minimum: 0, maximum: 1 }, { expected: "a number from 0 to 1" }))
  )),
  frequency_penalty: Penalty,
  presence_penalty: Penalty,
  logit_bias: Schema.optionalKey(Schema.NullOr(Schema.Record(Schema.String, Schema.Finite))),
  logprobs: Schema.optionalKey(Schema.NullOr(Schema.Boolean)),
  top_logprobs: Schema.optionalKey(Schema.NullOr(
    Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 20 }, { expected: "an integer from 0 to 20" }))
  )),
  stop: Schema.optionalKey(Schema.NullOr(ChatStop)),
  seed: Schema.optionalKey(Schema.NullOr(Schema.Int)),
  /** {type: text | json_object | json_schema, ...}. */
  response_format: Schema.optionalKey(Schema.NullOr(Schema.StructWithRest(Schema.Struct({ type: Schema.String }), Rest))),
  /** Only for models with the `tools` feature. */
  tools: Schema.optionalKey(Schema.Array(ChatTool)),
  tool_choice: Schema.optionalKey(ChatToolChoice),
  parallel_tool_calls: Schema.optionalKey(Schema.NullOr(Schema.Boolean)),
  /** The caller's end user, as OpenAI has it; passed on. */
  user: Schema.optionalKey(Schema.String),
  /** Reasoning models only; default off. */
  enable_thinking: Schema.optionalKey(Schema.Boolean),
  machine: Schema.optionalKey(MachineId),
  // Accepted and never sent on (CHAT_FIELDS_NOT_SENT).
  store: Schema.optionalKey(Schema.NullOr(Schema.Boolean)),
  metadata: Schema.optionalKey(Schema.NullOr(Schema.Record(Schema.String, Schema.String))),
  service_tier: Schema.optionalKey(Schema.NullOr(Schema.String)),
  prompt_cache_key: Schema.optionalKey(Schema.String),
  safety_identifier: Schema.optionalKey(Schema.String)
})
export type ChatRequest = typeof ChatRequest.Type

// ---- Embeddings (POST /v1/embeddings) -----------------------------------------------------

/** Texts of one embeddings request (core/src/kernel/Limits.ts). */
export { MAX_EMBEDDING_TEXTS }

export const EmbeddingRequest = Schema.Struct({
  model: ModelId,
  input: Schema.Union([
    Schema.String,
    Schema.Array(Schema.String).check(
      Schema.isBetweenLength(1, MAX_EMBEDDING_TEXTS, { expected: `1 to ${MAX_EMBEDDING_TEXTS} texts` })
    )
  ]),
  /** A shorter vector, where the model supports that length. */
  dimensions: Schema.optionalKey(IntAtLeast(1)),
  input_type: Schema.optionalKey(Schema.Literals(["document", "query"])),
  /**
   * How each vector is answered: float (default) an array of numbers, base64 the base64 of its
   * little-endian float32 values; OpenAI's SDKs ask for base64 by default (docs/gateway.md "Answers").
   */
  encoding_format: Schema.optionalKey(Schema.Literals(["float", "base64"])),
  user: Schema.optionalKey(Schema.String),
  machine: Schema.optionalKey(MachineId)
})
export type EmbeddingRequest = typeof EmbeddingRequest.Type

export const Embedding = Schema.Struct({
  object: Schema.Literal("embedding"),
  index: Schema.Int,
  /** Numbers, or with encoding_format "base64" the base64 of the little-endian float32 values. */
  embedding: Schema.Union([Schema.Array(Schema.Number), Schema.String])
})

export const EmbeddingResponse = Schema.Struct({
  object: Schema.Literal("list"),
  model: Schema.String,
  data: Schema.Array(Embedding),
  usage: Schema.Struct({ prompt_tokens: Schema.Int, total_tokens: Schema.Int })
})
export type EmbeddingResponse = typeof EmbeddingResponse.Type

// ---- Forecasts (POST /v1/forecasts, /forecasts) -------------------------------------------

export const ForecastRequest = Schema.Struct({
  model: ModelId,
  /** Oldest first; the model uses up to its history limit. */
  history: Schema.Array(Schema.Finite).check(Schema.isMinLength(2, { expected: "at least 2 values" })),
  /** Up to the model's horizon limit. */
  horizon: IntAtLeast(1),
  quantiles: Schema.optionalKey(Schema.Array(
    Schema.Finite.check(Schema.isBetween({ minimum: 0, maximum: 1, exclusiveMinimum: true, exclusiveMaximum: true }, {
      expected: "a quantile strictly between 0 and 1"
    }))
  )),
  frequency_seconds: Schema.optionalKey(IntAtLeast(1)),
  machine: Schema.optionalKey(MachineId)
})
export type ForecastRequest = typeof ForecastRequest.Type

export const ForecastResponse = Schema.Struct({
  object: Schema.Literal("forecast"),
  model: Schema.String,
  history_used: Schema.Int,
  point: Schema.Array(Schema.Number),
  quantile_levels: Schema.Array(Schema.Number),
  /** One row per level, each `horizon` long. */
  quantiles: Schema.Array(Schema.Array(Schema.Number)),
  generation_time_ms: Schema.NullOr(Schema.Int)
})
export type ForecastResponse = typeof ForecastResponse.Type

// ---- Images (POST /v1/images/generations) -------------------------------------------------

export const MAX_IMAGES_PER_REQUEST = 10

/** model and prompt are the spec's; n, size and response_format as in OpenAI's images API; seed is ours. */
export const ImageRequest = Schema.Struct({
  model: ModelId,
  prompt: Schema.String.check(Schema.isNonEmpty({ expected: "a non-empty prompt" })),
  n: Schema.optionalKey(Schema.NullOr(Schema.Int.check(
    Schema.isBetween({ minimum: 1, maximum: MAX_IMAGES_PER_REQUEST }, { expected: `1 to ${MAX_IMAGES_PER_REQUEST} images` })
  ))),
  /** One of the model's sizes (its catalogue limits), or auto or null for its default. */
  size: Schema.optionalKey(Schema.NullOr(
    Schema.String.check(Schema.isPattern(/^(auto|\d{2,5}x\d{2,5})$/, { expected: "a size WIDTHxHEIGHT, e.g. 1024x1024" }))
  )),
  /** Images are returned inline only. */
  response_format: Schema.optionalKey(
    Schema.NullOr(Schema.Literal("b64_json"))
      .annotate({ expected: "\"b64_json\" or null (images are returned inline, never as URLs)" })
  ),
  seed: Schema.optionalKey(Schema.NullOr(Schema.Int)),
  machine: Schema.optionalKey(MachineId)
})
export type ImageRequest = typeof ImageRequest.Type

/** OpenAI's images response: created in Unix seconds, one base64 image per item. */
export const ImageResponse = Schema.Struct({
  created: Schema.Int,
  data: Schema.Array(Schema.Struct({
    b64_json: Schema.String,
    revised_prompt: Schema.optionalKey(Schema.String)
  }))
})
export type ImageResponse = typeof ImageResponse.Type

// ---- Model list (GET /v1/models) ----------------------------------------------------------

/** An item of GET /v1/models: OpenAI's model object plus where and how the model is called. */
export const V1Model = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("model"),
  owned_by: Schema.String,
  name: Schema.String,
  modality: Schema.String,
  /** The path where the model is called, e.g. /v1/chat/completions. */
  endpoint: Schema.String,
  context_length: Schema.Int,
  max_output_tokens: Schema.Int,
  /** e.g. `tools`, `streaming`, `reasoning` (enable_thinking is accepted only with it). */
  features: Schema.Array(Schema.String),
  /** The machines serving the model now, best route first. */
  machines: Schema.Array(Schema.Struct({ id: Schema.String, name: Schema.String, region: Schema.String }))
})
export type V1Model = typeof V1Model.Type

/**
 * GET /v1/models. default_machine is the machine a call without `machine` is meant for; null only
 * when the catalogue has no machine at all.
 */
export const V1ModelList = Schema.Struct({
  object: Schema.Literal("list"),
  default_machine: Schema.NullOr(Schema.String),
  data: Schema.Array(V1Model)
})
export type V1ModelList = typeof V1ModelList.Type
