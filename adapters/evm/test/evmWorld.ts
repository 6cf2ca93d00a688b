/**
 * The platform's money services over the "evm" rail on a local chain (LocalChainFixture.ts), for
 * the watcher tests: shared memory stores and any number of "processes" over them, each with its
 * own Orders, rail, chain reader and DepositWatcher, as several servers or Lambda invocations are.
 */
import { randomBytes } from "node:crypto"
import { type Context, Effect, Layer, type Scope } from "effect"
import { HDKey } from "viem/accounts"
import type { Caller } from "@model-platform/core/keys"
import { Catalogue } from "@model-platform/core/catalogue"
import type { CatalogueConfig } from "@model-platform/core/catalogue"
import { DepositWatcher, Orders, TestCardProcessor } from "@model-platform/core/payments"
import { Ledger } from "@model-platform/core/ledger"
import type { PlatformStores } from "@model-platform/core/http"
import { toTimestamp } from "@model-platform/core/kernel"
import { fixtureCatalogue } from "@model-platform/test-harness/Fixtures"
import { MemoryPlatformStores } from "@model-platform/memory-stores/MemoryPlatformStores"
import { evmLayers } from "../src/EvmEnvironment.ts"
import { type LocalChainFixture, XPUB_ENV } from "../src/LocalChainFixture.ts"

export const catalogueFor = (fixture: LocalChainFixture, confirmations: number): CatalogueConfig => ({
  ...fixtureCatalogue,
  payments: fixture.payments(confirmations)
})

/** A deposit key of its own (the xpub of a fresh wallet), so that worlds never share addresses. */
export const freshKey = () => {
  const master = HDKey.fromMasterSeed(randomBytes(32))
  return { master, xpub: master.derive("m/44'/60'/0'").publicExtendedKey }
}

/** One process's services over the given stores. */
export const processLayer = (fixture: LocalChainFixture, catalogue: CatalogueConfig, xpub: string) => {
  const evm = evmLayers(catalogue.payments.stablecoin!, { ...fixture.env, [XPUB_ENV]: xpub })
  if ("problems" in evm) throw new Error(evm.problems.join("; "))
  const money = Orders.layer.pipe(
    Layer.provideMerge(Ledger.layer),
    Layer.provide(Layer.mergeAll(evm.rail, TestCardProcessor.layer({ baseUrl: "https://platform.test" })))
  )
  return DepositWatcher.layer.pipe(
    Layer.provideMerge(money),
    Layer.provide(evm.reader),
    Layer.provideMerge(Catalogue.layer(catalogue))
  )
}

export type Process = Layer.Success<ReturnType<typeof processLayer>> | PlatformStores

/** Shared memory stores, and a maker of processes over them. */
export const makeWorld = (fixture: LocalChainFixture, confirmations: number, stores: Layer.Layer<PlatformStores> = MemoryPlatformStores) =>
  Effect.gen(function*() {
    const catalogue = catalogueFor(fixture, confirmations)
    const key = freshKey()
    const shared = yield* Layer.build(stores)
    /** A process over the shared stores, as `change` makes them look to it (a crash, a clock). */
    const process = (change: (stores: Context.Context<PlatformStores>) => Context.Context<PlatformStores> = (s) => s) =>
      Layer.build(processLayer(fixture, catalogue, key.xpub).pipe(Layer.provideMerge(Layer.succeedContext(change(shared)))))
    return { catalogue, key, shared, process }
  }) satisfies Effect.Effect<unknown, unknown, Scope.Scope>

let callers = 0
/** A fresh account's caller with every permission. */
export const makeCaller = (): Caller => {
  const name = `evm${++callers}${Math.random().toString(36).slice(2, 8)}`
  const now = toTimestamp(Date.now())
  return {
    account: { id: `acct_${name}`, email: `${name}@evm.test`, created_at: now },
    key: {
      id: `key_${name}`,
      account_id: `acct_${name}`,
      name,
      prefix: "mpk_test",
      secret_hash: `hash_${name}`,
      permissions: ["inference", "read", "manage"],
      machine_id: null,
      subscription_id: null,
      rental_id: null,
      agent_id: null,
      created_at: now,
      last_used_at: null,
      revoked_at: null
    }
  }
}
