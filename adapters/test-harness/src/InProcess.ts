/**
 * The platform as a web handler (Request -> Response) in this process, over in-memory stores: for
 * fast property tests of the HTTP contract without sockets. `stores` replaces some of the memory
 * stores (a test's broken or slow store); every store it does not provide stays in memory.
 */
import { FirstStart } from "@model-platform/core/accounts"
import type { CatalogueConfig } from "@model-platform/core/catalogue"
import {
  AppRoutes,
  clockLayer,
  observeRequests,
  type PlatformOptions,
  PlatformServices,
  type PlatformStores,
  ROUTER_CONFIG,
  SERVE_OPTIONS
} from "@model-platform/core/http"
import { PlatformMetrics } from "@model-platform/core/gateway"
import { Effect, Layer, ManagedRuntime } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { createAccount, createAccountWithIdentity } from "./Accounts.ts"
import type { BlobLister, DocumentReader, ShellUnderTest } from "./HttpSuite.ts"
import { Datasets } from "@model-platform/core/datasets"
import { DocumentStores } from "@model-platform/core/kernel"
import { MemoryPlatformStores } from "@model-platform/memory-stores/MemoryPlatformStores"

export interface InProcessExtras {
  /**
   * Each account `newAccount` makes has a ready identity (a person behind it, as after sign-up),
   * so it can propose agents. Off unless set: such an account is one no person owns.
   */
  readonly readyIdentities?: boolean
}

export const startInProcess = async <S extends PlatformStores, E>(
  catalogue: CatalogueConfig,
  stores?: Layer.Layer<S, E>,
  options: PlatformOptions = {},
  extras: InProcessExtras = {}
): Promise<ShellUnderTest & BlobLister & DocumentReader> => {
  // Layer.merge: the services of the second layer win.
  const all: Layer.Layer<PlatformStores, E> = stores === undefined
    ? MemoryPlatformStores
    : Layer.merge(MemoryPlatformStores, stores) as Layer.Layer<PlatformStores, E>
  // The harness builds each request's URL itself (http://platform.test), as a web handler's shell does.
  const services = PlatformServices(catalogue, { requestUrlFromShell: true, ...options }).pipe(Layer.provideMerge(all))
  const runtime = ManagedRuntime.make(
    Layer.mergeAll(services, FirstStart.layer("owner@test.local").pipe(Layer.provide(services))).pipe(
      Layer.provideMerge(clockLayer(options)),
      Layer.provideMerge(PlatformMetrics)
    )
  )
  const owner = await runtime.runPromise(Effect.flatMap(FirstStart, Effect.succeed))
  const context = await runtime.context()
  const { handler, dispose } = HttpRouter.toWebHandler(
    // provideMerge: every request runs in the platform's context, its Clock included (PlatformOptions.clock).
      AppRoutes.pipe(Layer.provideMerge(Layer.succeedContext(context)), Layer.provide(HttpServer.layerServices)),
    { ...SERVE_OPTIONS, middleware: (app) => observeRequests(app) }
  )
  return {
    ownerSecret: owner?.key.secret ?? "",
    newAccount: () =>
      runtime.runPromise(
        extras.readyIdentities === true
          ? createAccountWithIdentity(`user-${crypto.randomUUID()}@test.local`)
          : createAccount(`user-${crypto.randomUUID()}@test.local`)
      ),
    seed: (effect) => runtime.runPromise(effect),
    fetch: (path, init) => handler(new Request(`http://platform.test${path}`, init)),
    blobs: (prefix) => runtime.runPromise(Effect.flatMap(Datasets, (d) => d.blobs.list(prefix))),
    blob: (key) => runtime.runPromise(Effect.flatMap(Datasets, (d) => d.blobs.get(key))).then((b) => b?.body),
    document: (kind, id) => runtime.runPromise(Effect.flatMap(DocumentStores, (stores) => stores.of(kind).get(id))),
    close: async () => {
      await dispose()
      await runtime.dispose()
    }
  }
}
