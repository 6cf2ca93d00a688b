/**
 * The Node shell: serves core's routes with @effect/platform-node over the stores it is given.
 * No rule lives here; it wires layers.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { FirstStart } from "@model-platform/core/Bootstrap"
import type { CatalogueConfig } from "@model-platform/core/CatalogueConfig"
import { AppRoutes, type PlatformOptions, PlatformServices, type PlatformStores } from "@model-platform/core/api/Http"
import { Layer } from "effect"
import { HttpRouter } from "effect/http"
import { createServer } from "node:http"
import { MachineNodeHttpLayer } from "./MachineNodeHttp.ts"

export type Stores = PlatformStores

export interface ServerOptions {
  readonly catalogue: CatalogueConfig
  readonly port: number
  readonly host: string
  readonly ownerEmail: string
  /** PUBLIC_URL: the base of the addresses handed out (pay_url); unset, each request's own address. */
  readonly publicUrl?: string | undefined
  /** Background work and gateway settings (main.ts turns health checks and the sweeper on). */
  readonly platform?: Omit<PlatformOptions, "publicUrl"> | undefined
}

/**
 * The platform listening on host:port, with the owner created on first start. Provides the
 * HttpServer (its address), FirstStart (the owner key to print, once), and the use-cases and
 * stores it serves (for an operator's command or a test run in the same process).
 */
export const serverLayer = <E, R>(options: ServerOptions, stores: Layer.Layer<Stores, E, R>) => {
  const services = PlatformServices(options.catalogue, {
    ...options.platform,
    // Machines are called over node:http (keep-alive Agent): far less CPU per call than fetch.
    machineClient: options.platform?.machineClient ?? MachineNodeHttpLayer,
    publicUrl: options.publicUrl
  }).pipe(Layer.provideMerge(stores))
  const http = HttpRouter.serve(AppRoutes, { disableListenLog: true, disableLogger: true }).pipe(
    Layer.provideMerge(NodeHttpServer.layer(createServer, { port: options.port, host: options.host }))
  )
  return Layer.mergeAll(http, FirstStart.layer(options.ownerEmail)).pipe(Layer.provideMerge(services))
}
