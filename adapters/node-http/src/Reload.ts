/**
 * The Node server, reloadable (docs/operations.md "The operator console"): the catalogue is read
 * again on `POST /admin/api/catalogue/reload` or SIGHUP, without a restart and without refusing a
 * request. What depends on the catalogue is most of the platform (prices, routes, machines, plans),
 * so a reload builds a whole new server over the same database, journal, network and metrics, on
 * the same port (SO_REUSEPORT: both listen for a moment), then lets the old one drain as at a
 * shutdown: it stops listening and its requests in flight, streams included, run to their end.
 * A catalogue that does not read or does not validate changes nothing (the error says why).
 * Reloads run one at a time.
 *
 * At a stop signal the server in use drains (Shutdown.ts), and so do those still draining.
 */
import type { CatalogueConfig } from "@model-platform/core/catalogue"
import { CatalogueReloader, Lifecycle } from "@model-platform/core/http"
import { Context, Effect, Exit, Layer, Scope, Semaphore } from "effect"
import { HttpServer } from "effect/http"
import { drain, type ShutdownSettings } from "./Shutdown.ts"

interface Running {
  readonly scope: Scope.Closeable
  readonly context: Context.Context<HttpServer.HttpServer | Lifecycle>
  readonly catalogue: CatalogueConfig
}

/** What an operator sees of a catalogue: enough to tell the change. */
export const catalogueSummary = (catalogue: CatalogueConfig) => ({
  machines: catalogue.machines.map((m) => m.id),
  models: catalogue.models.map((m) => m.id),
  packages: catalogue.packages.map((p) => p.id)
})

export interface ReloadableOptions<E, R> {
  readonly initial: CatalogueConfig
  /** Reads the catalogue again (the file). */
  readonly load: Effect.Effect<CatalogueConfig, { readonly message: string }>
  /** The server over a catalogue, listening on `port` (0 at first) with SO_REUSEPORT. */
  readonly server: (catalogue: CatalogueConfig, port: number, reloader: Layer.Layer<CatalogueReloader>) => Layer.Layer<
    HttpServer.HttpServer | Lifecycle | R,
    E
  >
  /** Run once the first server listens (announcements). */
  readonly started: Effect.Effect<void, never, HttpServer.HttpServer | Lifecycle | R>
  readonly shutdown: ShutdownSettings
  /** Run after the operator API (not SIGHUP) reloaded the catalogue: a worker tells the others (Workers.ts). */
  readonly reloadedByApi?: Effect.Effect<void> | undefined
}

/** Serves until a stop signal (see the module's comment). */
export const serveReloadable = <E, R>(options: ReloadableOptions<E, R>) =>
  Effect.gen(function*() {
    const main = yield* Effect.scope
    // The process's context (its logger, tracer), never a request's, for what a reload builds.
    const processContext = yield* Effect.context<never>()
    const lock = yield* Semaphore.make(1)
    const retiring = new Set<Scope.Closeable>()
    let reload: Effect.Effect<{ readonly before: unknown; readonly after: unknown }, { readonly message: string }> = Effect.fail({ message: "not started" })
    const reloader = Layer.succeed(CatalogueReloader, {
      reload: Effect.suspend(() => reload).pipe(Effect.tap(() => options.reloadedByApi ?? Effect.void))
    })

    const start = (catalogue: CatalogueConfig, port: number) =>
      Effect.gen(function*() {
        const scope = yield* Scope.make()
        const context = yield* Layer.buildWithScope(options.server(catalogue, port, reloader), scope).pipe(
          Effect.onError(() => Scope.close(scope, Exit.void))
        )
        return { scope, context, catalogue } satisfies Running as Running
      })

    let current = yield* start(options.initial, 0)
    yield* options.started.pipe(Effect.provideContext(current.context as Context.Context<HttpServer.HttpServer | Lifecycle | R>))

    reload = lock.withPermits(1)(Effect.gen(function*(): Effect.fn.Return<{ readonly before: unknown; readonly after: unknown }, { readonly message: string }> {
      const catalogue = yield* options.load
      const address = Context.get(current.context, HttpServer.HttpServer).address
      const port = address._tag === "UnixPathAddress" ? 0 : address.port
      const next = yield* start(catalogue, port).pipe(
        Effect.mapError((error) => ({ message: `the new catalogue's server did not start: ${String(error)}` }))
      )
      const old = current
      current = next
      retiring.add(old.scope)
      // The request that asked for this may be one of the old server's: it drains in the background.
      yield* Effect.forkIn(
        Effect.gen(function*() {
          yield* Effect.logInfo("catalogue reloaded: the previous server drains")
          yield* Scope.close(old.scope, Exit.void)
          retiring.delete(old.scope)
        }),
        main
      )
      return { before: catalogueSummary(old.catalogue), after: catalogueSummary(catalogue) }
    })).pipe(Effect.provideContext(processContext))

    // SIGHUP reloads too (the usual signal for "read your configuration again").
    const onHangup = () => {
      Effect.runForkWith(processContext)(reload.pipe(
        Effect.tap((change) => Effect.logInfo(`SIGHUP: catalogue reloaded: ${JSON.stringify(change.after)}`)),
        Effect.catch((error) => Effect.logError(`SIGHUP: the catalogue was not reloaded: ${error.message}`))
      ))
    }
    process.on("SIGHUP", onHangup)

    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        process.off("SIGHUP", onHangup)
        yield* drain(Effect.sync(() => Context.get(current.context, Lifecycle)), options.shutdown)
        yield* Effect.all([current.scope, ...retiring].map((scope) => Scope.close(scope, Exit.void)), { concurrency: "unbounded" })
      })
    )
    return yield* Effect.never
  })
