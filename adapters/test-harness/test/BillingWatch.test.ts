/**
 * Billing's watch after settlements (core/src/billing/Watch.ts), on memory stores with the clock
 * standing still: an account's billing settings are read once per SETTINGS_CACHE_MS, whether it
 * configured anything or not; a change made through this process (alert points with
 * POST /billing/limits, Limits.set) is read at the next check; one made elsewhere (straight into
 * the store, as another process would) once the cached answer is SETTINGS_CACHE_MS old.
 */
import { assert, describe, it } from "@effect/vitest"
import { BillingSettingsStore, BillingWatch, makeLimits, SETTINGS_CACHE_MS } from "@model-platform/core/billing"
import { PlatformServices } from "@model-platform/core/http"
import { ApiKeys } from "@model-platform/core/keys"
import { BillingSettingsStoreMemory } from "@model-platform/memory-stores/MemoryBillingSettingsStore"
import { MemoryPlatformStores } from "@model-platform/memory-stores/MemoryPlatformStores"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { createAccount } from "../src/Accounts.ts"
import { stubCatalogue } from "./gatewayStub.ts"

/** Every read of an account's settings, by account id. */
const reads: Array<string> = []
const countingSettings = Layer.effect(
  BillingSettingsStore,
  Effect.map(Effect.service(BillingSettingsStore), (store) =>
    BillingSettingsStore.of({ ...store, get: (accountId) => Effect.andThen(Effect.sync(() => reads.push(accountId)), store.get(accountId)) }))
).pipe(Layer.provide(BillingSettingsStoreMemory))

const services = PlatformServices(stubCatalogue()).pipe(Layer.provideMerge(Layer.merge(MemoryPlatformStores, countingSettings)))

describe("billing's watch after settlements", () => {
  it.effect("settings are read once per SETTINGS_CACHE_MS; a change through Limits is read at once, one made elsewhere after the cache's time", () =>
    Effect.gen(function*() {
      const caller = yield* (yield* ApiKeys).authenticate(yield* createAccount("watch@test.local"))
      const account = caller.account.id
      const watch = yield* BillingWatch
      const limits = yield* makeLimits
      const readsOf = () => reads.filter((id) => id === account).length

      // Nothing configured: one read, then none while the answer is fresh.
      yield* watch.settled([account])
      yield* watch.settled([account])
      assert.strictEqual(readsOf(), 1)

      // Alert points set through this process: the next check reads them; later ones do not.
      yield* limits.set(caller, { alert_points: [50] })
      const before = readsOf()
      yield* watch.settled([account])
      yield* watch.settled([account])
      assert.strictEqual(readsOf(), before + 1, "read again at once after Limits.set, then kept")

      // Changed elsewhere: seen once the cached answer is SETTINGS_CACHE_MS old.
      yield* (yield* BillingSettingsStore).update(account, { alert_points: [] })
      yield* watch.settled([account])
      assert.strictEqual(readsOf(), before + 1)
      yield* TestClock.adjust(SETTINGS_CACHE_MS)
      yield* watch.settled([account])
      assert.strictEqual(readsOf(), before + 2)
    }).pipe(Effect.provide(services)))
})
