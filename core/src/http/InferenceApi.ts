/**
 * The inference surface (/v1 and /forecasts) as an HttpApi contract, for documentation and types:
 * its OpenAPI 3.1 document is served at GET /v1/openapi.json. The gateway engine serves the
 * routes themselves (core/src/http/InferenceRoutes.ts); this module also serves the two that need
 * no key and no machine: GET /v1/models and GET /v1/openapi.json (`InferenceCatalogueRoutes`).
 */
import { Effect, Layer, Schema } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiMiddleware, HttpApiSchema, HttpApiSecurity, OpenApi } from "effect/http-api"
import { Catalogue } from "../catalogue/Catalogue.ts"
import { inferenceModels } from "../gateway/InferenceModels.ts"
import {
  ChatRequest,
  EmbeddingRequest,
  EmbeddingResponse,
  ForecastRequest,
  ForecastResponse,
  ImageRequest,
  ImageResponse,
  V1ModelList
} from "../gateway/Inference.ts"
import { MachineStatus } from "../catalogue/MachineStatus.ts"

export const INFERENCE_OPENAPI_PATH = "/v1/openapi.json"

// ---- Errors in the inference shape {error: {message, type, code}} -------------------------

const InferenceErrorBody = Schema.Struct({
  message: Schema.String,
  /** OpenAI's error type for the status, e.g. invalid_request_error. */
  type: Schema.String,
  /** The platform's code, e.g. invalid_input (spec "Errors"). */
  code: Schema.String
})

export class V1BadRequest extends Schema.Error<V1BadRequest>("V1BadRequest")(
  { error: InferenceErrorBody },
  { httpApiStatus: 400 }
) {}
export class V1Unauthorized extends Schema.Error<V1Unauthorized>("V1Unauthorized")(
  { error: InferenceErrorBody },
  { httpApiStatus: 401 }
) {}
export class V1PaymentRequired extends Schema.Error<V1PaymentRequired>("V1PaymentRequired")(
  { error: InferenceErrorBody },
  { httpApiStatus: 402 }
) {}
export class V1Forbidden extends Schema.Error<V1Forbidden>("V1Forbidden")(
  { error: InferenceErrorBody },
  { httpApiStatus: 403 }
) {}
export class V1NotFound extends Schema.Error<V1NotFound>("V1NotFound")(
  { error: InferenceErrorBody },
  { httpApiStatus: 404 }
) {}
export class V1TooManyRequests extends Schema.Error<V1TooManyRequests>("V1TooManyRequests")(
  { error: InferenceErrorBody },
  { httpApiStatus: 429 }
) {}
export class V1BadGateway extends Schema.Error<V1BadGateway>("V1BadGateway")(
  { error: InferenceErrorBody },
  { httpApiStatus: 502 }
) {}
export class V1Unavailable extends Schema.Error<V1Unavailable>("V1Unavailable")(
  { error: InferenceErrorBody },
  { httpApiStatus: 503 }
) {}

const describe = <S extends Schema.Top>(schema: S, description: string) => schema.annotate({ description }) as S

/** Every call to a model can fail this way (spec "Errors"). */
const callErrors = [
  describe(V1BadRequest, "missing_model, invalid_json, invalid_input, invalid_history, invalid_horizon, invalid_size, wrong_endpoint"),
  describe(V1PaymentRequired, "insufficient_credit, agent_daily_limit, agent_total_limit"),
  describe(
    V1Forbidden,
    "key_lacks_inference_permission, key_not_scoped_to_machine, subscription_inactive, model_not_in_plan, rental_ended, agent_expired"
  ),
  describe(V1NotFound, "model_not_found, machine_not_found"),
  describe(V1TooManyRequests, "rate_limited"),
  describe(V1BadGateway, "machine_unreachable, machine_error (retry with backoff)"),
  describe(V1Unavailable, "no_capacity (the model is not serving on that machine now)")
] as const

// ---- Security: a platform key with the inference permission -------------------------------

/** Documentation of the bearer key; the engine checks keys itself, this is never served. */
export class InferenceKey extends HttpApiMiddleware.Service<InferenceKey>()(
  "@model-platform/core/http/InferenceKey",
  {
    security: { bearer: HttpApiSecurity.bearer },
    error: describe(V1Unauthorized, "missing_api_key, invalid_api_key")
  }
) {}

// ---- Responses ----------------------------------------------------------------------------

const Rest = [Schema.Record(Schema.String, Schema.Unknown)] as const

/** OpenAI's chat completion (non-streaming), as the machine answers it; extra fields are kept. */
export const ChatCompletion = Schema.StructWithRest(
  Schema.Struct({
    id: Schema.String,
    object: Schema.Literal("chat.completion"),
    created: Schema.Int,
    model: Schema.String,
    choices: Schema.Array(Schema.StructWithRest(
      Schema.Struct({
        index: Schema.Int,
        message: Schema.StructWithRest(
          Schema.Struct({ role: Schema.String, content: Schema.NullOr(Schema.String) }),
          Rest
        ),
        finish_reason: Schema.NullOr(Schema.String)
      }),
      Rest
    )),
    usage: Schema.optionalKey(Schema.StructWithRest(
      Schema.Struct({ prompt_tokens: Schema.Int, completion_tokens: Schema.Int, total_tokens: Schema.Int }),
      Rest
    ))
  }),
  Rest
).annotate({ identifier: "ChatCompletion" })

/** With `stream: true`: server-sent events of chat.completion.chunk objects, the last one with usage, then [DONE]. */
const ChatCompletionStream = Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/event-stream" })).annotate({
  description: "Server-sent events (`data: {chat.completion.chunk}`), the last chunk carrying usage, then `data: [DONE]`."
})

// ---- The contract -------------------------------------------------------------------------

export class InferenceModelsGroup extends HttpApiGroup.make("models")
  .add(
    HttpApiEndpoint.get("list", "/v1/models", { success: V1ModelList }).annotateMerge(OpenApi.annotations({
      summary: "Models serving now",
      description: "The models some machine is serving now, and the default machine. No key needed."
    }))
  )
  .annotateMerge(OpenApi.annotations({ title: "Models", description: "Public: no key needed." }))
{}

export class InferenceCallsGroup extends HttpApiGroup.make("inference")
  .add(
    HttpApiEndpoint.post("chat", "/v1/chat/completions", {
      payload: ChatRequest.annotate({ identifier: "ChatRequest" }),
      success: [ChatCompletion, ChatCompletionStream],
      error: callErrors
    }).annotateMerge(OpenApi.annotations({
      summary: "Chat completion",
      description:
        "OpenAI's chat completions for language models. max_tokens is capped at the model's max_output_tokens; tools and tool_choice need the `tools` feature; enable_thinking: true needs the `reasoning` feature."
    })),
    HttpApiEndpoint.post("embeddings", "/v1/embeddings", {
      payload: EmbeddingRequest.annotate({ identifier: "EmbeddingRequest" }),
      success: EmbeddingResponse.annotate({ identifier: "EmbeddingResponse" }),
      error: callErrors
    }).annotateMerge(OpenApi.annotations({
      summary: "Embeddings",
      description: "Unit-length vectors for up to 256 texts; always float arrays, whatever encoding_format says."
    })),
    HttpApiEndpoint.post("forecast", "/v1/forecasts", {
      payload: ForecastRequest.annotate({ identifier: "ForecastRequest" }),
      success: ForecastResponse.annotate({ identifier: "ForecastResponse" }),
      error: callErrors
    }).annotateMerge(OpenApi.annotations({
      summary: "Forecast",
      description: "Point forecast and quantiles; a history longer than the model's limit is cut to its newest values."
    })),
    HttpApiEndpoint.post("forecastUnversioned", "/forecasts", {
      payload: ForecastRequest,
      success: ForecastResponse,
      error: callErrors
    }).annotateMerge(OpenApi.annotations({ summary: "Forecast (same as POST /v1/forecasts)" })),
    HttpApiEndpoint.post("images", "/v1/images/generations", {
      payload: ImageRequest.annotate({ identifier: "ImageRequest" }),
      success: ImageResponse.annotate({ identifier: "ImageResponse" }),
      error: callErrors
    }).annotateMerge(OpenApi.annotations({
      summary: "Image generation",
      description: "Images returned inline as base64 (b64_json); n images are billed as n requests."
    }))
  )
  .middleware(InferenceKey)
  .annotateMerge(OpenApi.annotations({
    title: "Inference",
    description:
      "Needs a platform key with the inference permission. Every body may name a `machine`; a field its schema does not list is refused (400 invalid_input)."
  }))
{}

export class InferenceApi extends HttpApi.make("inference")
  .add(InferenceModelsGroup)
  .add(InferenceCallsGroup)
  .annotateMerge(OpenApi.annotations({
    title: "Model Platform inference API",
    version: "1.0.0",
    description:
      "OpenAI-compatible inference: chat completions, embeddings, forecasts and images. Errors are {error: {message, type, code}}."
  }))
{}

/** The OpenAPI 3.1 document of the inference surface, computed once at its first use (not at start: a cold start pays for it otherwise). */
let openApiDocument: object | undefined
export const inferenceOpenApiDocument = (): object => (openApiDocument ??= OpenApi.fromApi(InferenceApi))

// ---- Routes needing no key ----------------------------------------------------------------

/**
 * GET /v1/models and GET /v1/openapi.json as raw router routes. Needs Catalogue and MachineStatus
 * (PlatformServices provides both).
 */
export const InferenceCatalogueRoutes = Layer.unwrap(Effect.gen(function*() {
  const catalogue = yield* Catalogue
  const status = yield* MachineStatus
  const list = inferenceModels(catalogue.config).pipe(Effect.provideService(MachineStatus, status))
  return Layer.mergeAll(
    HttpRouter.add("GET", "/v1/models", Effect.map(list, (body) => HttpServerResponse.jsonUnsafe(body))),
    HttpRouter.add("GET", INFERENCE_OPENAPI_PATH, Effect.sync(() => HttpServerResponse.jsonUnsafe(inferenceOpenApiDocument())))
  )
}))
