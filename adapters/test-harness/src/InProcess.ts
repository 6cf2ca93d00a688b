/**
 * The platform as a web handler (Request -> Response) in this process, over in-memory stores: for
 * fast property tests of the HTTP contract without sockets. `stores` replaces some of the memory
 * stores (a test's broken or slow store); every store it does not provide stays in memory.
 */
import type { CatalogueConfig } from "@model-platform/core/catalogue"
import { makePlatform, type PlatformOptions, type PlatformStores, platformWebHandler } from "@model-platform/core/http"
import { Effect, Layer } from "effect"
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
  const { handler, owner, runtime, dispose } = await platformWebHandler(makePlatform({
    catalogue,
    stores: all,
    options: { requestUrlFromShell: true, ...options },
    owner: { email: "owner@test.local" }
  }))
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
    close: dispose
  }
}
