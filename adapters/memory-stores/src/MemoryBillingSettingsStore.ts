/**
 * The billing settings store port in memory. One Ref holds each account's encoded record (as the
 * other stores keep it, so every value goes through the record's Schema both ways); an update is
 * one `Ref.modify` merging the patch's sections, so concurrent updates of different sections
 * both land. A patch the Schema refuses is a defect and changes nothing.
 */
import { type BillingSettingsPatch, BillingSettingsStore, decodeStored, encodePatch } from "@model-platform/core/billing"
import { Effect, Layer, Ref } from "effect"

type Stored = Readonly<Record<string, unknown>>

export const BillingSettingsStoreMemory: Layer.Layer<BillingSettingsStore> = Layer.effect(
  BillingSettingsStore,
  Effect.gen(function*() {
    const records = yield* Ref.make<ReadonlyMap<string, Stored>>(new Map())

    const read = (stored: Stored | undefined) => {
      const settings = decodeStored(stored)
      return settings === undefined ? Effect.die(new Error("BillingSettingsStore: a stored record does not decode")) : Effect.succeed(settings)
    }

    const get = (accountId: string) =>
      Ref.get(records).pipe(Effect.flatMap((map) => read(map.get(accountId))), Effect.withSpan("BillingSettingsStore.get"))

    const update = (accountId: string, patch: BillingSettingsPatch) => {
      const encoded = encodePatch(patch)
      if (encoded._tag === "invalid") return Effect.die(new Error(`BillingSettingsStore.update: ${encoded.message}`))
      // A structured clone: what is kept shares nothing with the caller's values.
      const sections = structuredClone(encoded.sections) as Stored
      return Ref.modify(records, (map): readonly [Stored, ReadonlyMap<string, Stored>] => {
        const next = { ...map.get(accountId), ...sections }
        return [next, new Map(map).set(accountId, next)]
      }).pipe(Effect.flatMap(read), Effect.withSpan("BillingSettingsStore.update"))
    }

    return BillingSettingsStore.of({ get, update })
  })
)
