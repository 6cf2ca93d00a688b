/**
 * The platform as a web handler (Request -> Response) in this process, over the given stores:
 * for fast property tests of the HTTP contract without sockets.
 */
import { FirstStart } from "@model-platform/core/Bootstrap"
import type { CatalogueConfig } from "@model-platform/core/CatalogueConfig"
import { AppRoutes, PlatformServices } from "@model-platform/core/api/Http"
import type { AccountStore } from "@model-platform/core/ports/AccountStore"
import type { IdempotencyStore } from "@model-platform/core/ports/IdempotencyStore"
import type { KeyStore } from "@model-platform/core/ports/KeyStore"
import { Effect, Layer, ManagedRuntime } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import type { ShellUnderTest } from "./HttpSuite.ts"

export const startInProcess = async <E>(
  catalogue: CatalogueConfig,
  stores: Layer.Layer<AccountStore | KeyStore | IdempotencyStore, E>
): Promise<ShellUnderTest> => {
  const services = PlatformServices(catalogue).pipe(Layer.provideMerge(stores))
  const runtime = ManagedRuntime.make(Layer.mergeAll(services, FirstStart.layer("owner@test.local").pipe(Layer.provide(services))))
  const owner = await runtime.runPromise(Effect.flatMap(FirstStart, Effect.succeed))
  const context = await runtime.context()
  const { handler, dispose } = HttpRouter.toWebHandler(
    AppRoutes.pipe(Layer.provide(Layer.succeedContext(context)), Layer.provide(HttpServer.layerServices)),
    { disableLogger: true }
  )
  return {
    ownerSecret: owner?.key.secret ?? "",
    fetch: (path, init) => handler(new Request(`http://platform.test${path}`, init)),
    close: async () => {
      await dispose()
      await runtime.dispose()
    }
  }
}
