/**
 * GET /docs: the API reference page (Scalar, over the API's OpenAPI document), built the first
 * time it is asked for rather than when the platform starts. Its script is 3 MB of JavaScript that
 * `HttpApiScalar.layer` imports when its layer is built: a Lambda cold start would read and compile
 * it for a page few requests ask for (docs/lambda.md "Cold start"; the bundle puts what is
 * imported lazily in a chunk of its own).
 */
import { Effect, Layer } from "effect"
import { HttpRouter, type HttpServerResponse } from "effect/http"
import { type HttpApi, type HttpApiGroup, HttpApiScalar } from "effect/http-api"

/** The handler `layer` adds to a router, taken by building it against a router that only records it. */
const handlerOf = (layer: Layer.Layer<never, never, HttpRouter.HttpRouter>) =>
  Effect.scoped(Effect.gen(function*() {
    let handler: Effect.Effect<HttpServerResponse.HttpServerResponse> | undefined
    const recorder = {
      add: (_method: string, _path: string, route: Effect.Effect<HttpServerResponse.HttpServerResponse>) =>
        Effect.sync(() => {
          handler = route
        })
    } as unknown as HttpRouter.HttpRouter
    yield* Layer.build(Layer.provide(layer, Layer.succeed(HttpRouter.HttpRouter, recorder)))
    if (handler === undefined) return yield* Effect.die(new Error("HttpApiScalar.layer added no route"))
    return handler
  }))

/** GET `path`: Scalar's page for `api`, its script loaded on the first request (once). */
export const docsPageRoute = <Id extends string, Groups extends HttpApiGroup.Constraint>(
  api: HttpApi.HttpApi<Id, Groups>,
  path: `/${string}`
) => {
  let loaded: Promise<Effect.Effect<HttpServerResponse.HttpServerResponse>> | undefined
  const load = () => (loaded ??= Effect.runPromise(handlerOf(HttpApiScalar.layer(api, { path }))))
  return HttpRouter.add("GET", path, Effect.flatMap(Effect.promise(load), (handler) => handler))
}
