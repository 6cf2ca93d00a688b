/**
 * The Node shell: serves core's routes with @effect/platform-node over the stores it is given.
 * No rule lives here; it wires layers.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { FirstStart } from "@model-platform/core/Bootstrap"
import type { CatalogueConfig } from "@model-platform/core/CatalogueConfig"
import { AppRoutes, PlatformServices } from "@model-platform/core/api/Http"
import type { AccountStore } from "@model-platform/core/ports/AccountStore"
import type { IdempotencyStore } from "@model-platform/core/ports/IdempotencyStore"
import type { KeyStore } from "@model-platform/core/ports/KeyStore"
import { Layer } from "effect"
import { HttpRouter } from "effect/http"
import { createServer } from "node:http"

export type Stores = AccountStore | KeyStore | IdempotencyStore

export interface ServerOptions {
  readonly catalogue: CatalogueConfig
  readonly port: number
  readonly host: string
  readonly ownerEmail: string
}

/**
 * The platform listening on host:port, with the owner created on first start. Provides the
 * HttpServer (its address) and FirstStart (the owner key to print, once).
 */
export const serverLayer = <E, R>(options: ServerOptions, stores: Layer.Layer<Stores, E, R>) => {
  const services = PlatformServices(options.catalogue).pipe(Layer.provideMerge(stores))
  const http = HttpRouter.serve(AppRoutes, { disableListenLog: true, disableLogger: true }).pipe(
    Layer.provideMerge(NodeHttpServer.layer(createServer, { port: options.port, host: options.host }))
  )
  return Layer.mergeAll(http, FirstStart.layer(options.ownerEmail)).pipe(Layer.provide(services))
}
