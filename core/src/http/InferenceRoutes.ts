/**
 * The inference routes as raw router routes (not HttpApi handlers, so that bodies and server-sent
 * events pass through untouched and fast): POST /v1/chat/completions, /v1/embeddings,
 * /v1/forecasts (also /forecasts), /v1/images/generations, plus the keyless GET /v1/models and
 * GET /v1/openapi.json (InferenceCatalogueRoutes). The contract they keep is InferenceApi's.
 *
 * Needs the Gateway service (and what InferenceCatalogueRoutes needs).
 */
import { Effect, Layer } from "effect"
import { HttpRouter, type HttpServerRequest, HttpServerResponse } from "effect/http"
import { type CallFailure, Gateway, type GatewayResponse } from "../gateway/Gateway.ts"
import type { Endpoint } from "../gateway/Validation.ts"
import { InferenceCatalogueRoutes } from "./InferenceApi.ts"
import { answerFailure } from "./ErrorShape.ts"
import { retryAfterOf, toInferenceError } from "./InferenceRefusals.ts"

const SSE_HEADERS = {
  "cache-control": "no-cache",
  // Ask proxies (nginx and the like) not to buffer the stream.
  "x-accel-buffering": "no"
}

const toResponse = (result: GatewayResponse): HttpServerResponse.HttpServerResponse =>
  result._tag === "Body"
    ? HttpServerResponse.uint8Array(result.body, { status: result.status, contentType: result.contentType })
    : HttpServerResponse.stream(result.stream, { contentType: "text/event-stream", headers: SSE_HEADERS })

const errorResponse = (failure: CallFailure): HttpServerResponse.HttpServerResponse => {
  const { error, status } = toInferenceError(failure)
  const retryAfter = retryAfterOf(failure)
  return retryAfter === undefined
    ? HttpServerResponse.jsonUnsafe({ error }, { status })
    : HttpServerResponse.jsonUnsafe({ error }, { status, headers: { "retry-after": String(retryAfter) } })
}

/**
 * The answer to one call, failures in the inference error shape (ErrorShape.ts answerFailure for
 * what is not the gateway's own error). Served by the routes below, and by the Node shell's plain
 * listener for /v1 (adapters/node-http V1Listener.ts) with the same answers.
 */
export const answerCall = (
  gateway: Gateway["Service"],
  endpoint: Endpoint,
  authorization: string | undefined,
  body: string
): Effect.Effect<HttpServerResponse.HttpServerResponse> =>
  gateway.call(endpoint, authorization, body).pipe(
    Effect.match({ onFailure: errorResponse, onSuccess: toResponse }),
    Effect.catchCause(answerFailure(endpoint))
  )

/** The paths of the call routes below (POST), and the endpoint each calls. */
export const CALL_ROUTES: ReadonlyMap<string, Endpoint> = new Map<string, Endpoint>([
  ["/v1/chat/completions", "/v1/chat/completions"],
  ["/v1/embeddings", "/v1/embeddings"],
  ["/v1/forecasts", "/v1/forecasts"],
  ["/forecasts", "/v1/forecasts"],
  ["/v1/images/generations", "/v1/images/generations"]
])

const handler = (gateway: Gateway["Service"], endpoint: Endpoint) => (request: HttpServerRequest.HttpServerRequest) =>
  Effect.flatMap(
    Effect.orElseSucceed(request.text, () => ""),
    (text) => answerCall(gateway, endpoint, request.headers["authorization"], text)
  )

/** The call routes; needs Gateway. */
export const InferenceCallRoutes = Layer.unwrap(Effect.gen(function*() {
  const gateway = yield* Gateway
  return Layer.mergeAll(
    HttpRouter.add("POST", "/v1/chat/completions", handler(gateway, "/v1/chat/completions")),
    HttpRouter.add("POST", "/v1/embeddings", handler(gateway, "/v1/embeddings")),
    HttpRouter.add("POST", "/v1/forecasts", handler(gateway, "/v1/forecasts")),
    HttpRouter.add("POST", "/forecasts", handler(gateway, "/v1/forecasts")),
    HttpRouter.add("POST", "/v1/images/generations", handler(gateway, "/v1/images/generations"))
  )
}))

/** Every inference route: the calls and the keyless model list and OpenAPI document. */
export const InferenceRoutes = Layer.mergeAll(InferenceCallRoutes, InferenceCatalogueRoutes)
