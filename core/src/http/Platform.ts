/**
 * The platform assembled once for every shell (docs/embedding.md "Assembling the whole
 * platform"): `makePlatform` is the use-cases over the stores with the first start, the clock and
 * the metrics under them, as a layer; `platformWebHandler` serves that layer as a web handler
 * (`Request -> Promise<Response>`), as the Lambda shell and the in-process test harness do. The
 * Node server serves the same layer with its own server (adapters/node-http/src/Server.ts).
 */
import { Context, Effect, Layer, ManagedRuntime } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { FirstStart, type Owner } from "../accounts/Bootstrap.ts"
import type { CatalogueConfig } from "../catalogue/CatalogueConfig.ts"
import { PlatformMetrics } from "../gateway/Activity.ts"
import { observeRequests } from "../observability/Requests.ts"
import { AppRoutes, clockLayer, type PlatformOptions, PlatformServices, SERVE_OPTIONS } from "./Http.ts"
import type { PlatformStores } from "./PlatformStores.ts"

export interface PlatformParts<SE, SR, BA, BE, BR, UA, UE> {
  readonly catalogue: CatalogueConfig
  /** Every store port (`MemoryPlatformStores`, the shells' PostgreSQL or DynamoDB stores). */
  readonly stores: Layer.Layer<PlatformStores, SE, SR>
  /**
   * The platform's settings (Http.ts). A web handler's shell sets `requestUrlFromShell`: it builds
   * each request's URL itself.
   */
  readonly options?: PlatformOptions | undefined
  /**
   * The owner account made at the first start, when no account exists yet: its email, and the
   * secret of its first key when the operator made it beforehand (read only then); else a fresh one.
   */
  readonly owner: {
    readonly email: string
    readonly secret?: Effect.Effect<string, unknown> | undefined
  }
  /**
   * Layers built over the use-cases and stores, beside the first start: the shell's account
   * service (the Lambda's and the Node server's), the Node server's router and listeners.
   */
  readonly beside?: Layer.Layer<BA, BE, BR> | undefined
  /**
   * The metric registry and gateway activity (gateway/Activity.ts) when they outlive this
   * platform (the Node servers a catalogue reload makes share them). Default: fresh ones.
   */
  readonly metrics?: Layer.Layer<never> | undefined
  /**
   * The shell's own services under everything else: its loggers (the Lambda's), the operator
   * API's catalogue reloader (the Node server's).
   */
  readonly under?: Layer.Layer<UA, UE> | undefined
}

/**
 * The whole platform as one layer: `PlatformServices` over the stores, the first start (FirstStart:
 * the owner and its key when this start made them) and the shell's `beside` layers over them, the
 * platform's clock (`options.clock`) and metrics under everything. Build it once per process.
 */
export const makePlatform = <SE, SR, BA = never, BE = never, BR = never, UA = never, UE = never>(
  parts: PlatformParts<SE, SR, BA, BE, BR, UA, UE>
) => {
  const { catalogue, options = {}, owner } = parts
  const services = PlatformServices(catalogue, options).pipe(Layer.provideMerge(parts.stores))
  const firstStart = owner.secret === undefined
    ? FirstStart.layer(owner.email)
    : FirstStart.layerWithSecret(owner.email, owner.secret)
  const beside: Layer.Layer<BA, BE, BR> = parts.beside ?? (Layer.empty as unknown as Layer.Layer<BA, BE, BR>)
  const under: Layer.Layer<UA, UE> = parts.under ?? (Layer.empty as unknown as Layer.Layer<UA, UE>)
  return Layer.mergeAll(firstStart, beside).pipe(
    Layer.provideMerge(services),
    // Under everything the platform builds, so every service reads the same time (PlatformOptions.clock).
    Layer.provideMerge(clockLayer(options)),
    // The platform's own metrics (GET /metrics), apart from any other platform in the process.
    Layer.provideMerge(parts.metrics ?? PlatformMetrics),
    Layer.provideMerge(under)
  )
}

/** What every platform provides (AppRoutes' services among them), whatever the shell adds beside. */
export type PlatformProvides = Layer.Success<ReturnType<typeof PlatformServices>> | PlatformStores | FirstStart

/** The platform served as a web handler, and the platform itself for the shell's other work. */
export interface PlatformWebHandler<A, E> {
  /** Answers a request; its URL must be the full address it was sent to (the shell knows its host). */
  readonly handler: (request: Request) => Promise<Response>
  /** What the first start made: the owner and its key with the secret, or undefined when one existed. */
  readonly owner: Owner | undefined
  /** The platform's runtime: a seeding test's or a scheduled job's effects run in it. */
  readonly runtime: ManagedRuntime.ManagedRuntime<A, E>
  /** The platform's services as built (its metrics registry among them). */
  readonly context: Context.Context<A>
  /** Stops answering, then releases the platform's layers. */
  readonly dispose: () => Promise<void>
}

/**
 * Builds `platform` (a `makePlatform` layer) and serves AppRoutes over it as a web handler: every
 * request runs in the platform's context, its Clock included, observed as every shell observes
 * requests (observability/Requests.ts: request id, access line, HTTP metric). A build that fails
 * rejects, with whatever it had built released.
 */
export const platformWebHandler = async <A, E>(
  platform: Layer.Layer<A | PlatformProvides, E>
): Promise<PlatformWebHandler<A | PlatformProvides, E>> => {
  const runtime = ManagedRuntime.make(platform)
  try {
    const owner = await runtime.runPromise(Effect.service(FirstStart))
    const context = await runtime.context()
    const web = HttpRouter.toWebHandler(
      AppRoutes.pipe(
        // provideMerge: every request runs in the platform's context (PlatformOptions.clock).
        Layer.provideMerge(Layer.succeedContext(context as Context.Context<PlatformProvides>)),
        Layer.provide(HttpServer.layerServices)
      ),
      { ...SERVE_OPTIONS, middleware: (app) => observeRequests(app) }
    )
    return {
      handler: (request) => web.handler(request),
      owner,
      runtime,
      context,
      dispose: async () => {
        await web.dispose()
        await runtime.dispose()
      }
    }
  } catch (error) {
    await runtime.dispose()
    throw error
  }
}
