/**
 * The whole HTTP application as one router layer, shared by every shell: the management API with
 * its OpenAPI document and docs page, the error shapes, and the fallback route. A shell provides
 * the ports (stores, catalogue) and serves it (Node server or web handler).
 */
import { Layer } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { HttpApiBuilder, HttpApiScalar } from "effect/http-api"
import { ApiKeys } from "../ApiKeys.ts"
import { Catalogue } from "../Catalogue.ts"
import type { CatalogueConfig } from "../CatalogueConfig.ts"
import { PlatformApi } from "./Api.ts"
import { ErrorShapeMiddleware, fallbackRoute, SchemaErrors } from "./ErrorShape.ts"
import { PlatformHandlers } from "./Handlers.ts"
import { Idempotency } from "./Idempotency.ts"
import { Authentication } from "./Security.ts"

export const OPENAPI_PATH = "/openapi.json"
export const DOCS_PATH = "/docs"

const Middleware = Layer.mergeAll(Authentication.layer, Idempotency.layer, SchemaErrors.layer)

const ApiRoutes = HttpApiBuilder.layer(PlatformApi, { openapiPath: OPENAPI_PATH }).pipe(
  Layer.provide(PlatformHandlers),
  Layer.provide(Middleware)
)

const RootRoute = HttpRouter.add(
  "GET",
  "/",
  HttpServerResponse.jsonUnsafe({ name: "Model Platform", openapi: OPENAPI_PATH, docs: DOCS_PATH, inference: "/v1" })
)

/** The use-cases over a catalogue; they need the store ports. Shells build this once. */
export const PlatformServices = (config: CatalogueConfig) =>
  ApiKeys.layer.pipe(Layer.provideMerge(Catalogue.layer(config)))

/** Every route of the platform; needs PlatformServices, the stores and HttpServer services. */
export const AppRoutes = Layer.mergeAll(
  ApiRoutes,
  HttpApiScalar.layer(PlatformApi, { path: DOCS_PATH }),
  RootRoute,
  fallbackRoute([PlatformApi], [OPENAPI_PATH, DOCS_PATH]),
  ErrorShapeMiddleware
)
