/**
 * The usage store port in memory, for tests and property tests. One Ref holds the records by ref;
 * `record` is a single `Ref.modify`, so concurrent records of one ref leave exactly one. A record
 * that breaks the port's rules (a negative amount, an empty ref) is a defect.
 */
import { Effect, Layer, Ref } from "effect"
import {
  byTimeThenRef,
  matchesUsageQuery,
  type UsageQuery,
  type UsageRecord,
  usageRecordProblem,
  UsageStore
} from "@model-platform/core/ports/UsageStore"

export const UsageStoreMemory: Layer.Layer<UsageStore> = Layer.effect(
  UsageStore,
  Effect.gen(function*() {
    const records = yield* Ref.make<ReadonlyMap<string, UsageRecord>>(new Map())

    const record = (usage: UsageRecord) => {
      const problem = usageRecordProblem(usage)
      if (problem !== undefined) return Effect.die(new Error(`UsageStore.record: ${problem}`))
      return Ref.modify(records, (map): readonly ["Recorded" | "Duplicate", ReadonlyMap<string, UsageRecord>] =>
        map.has(usage.ref) ? ["Duplicate", map] : ["Recorded", new Map(map).set(usage.ref, { ...usage })]
      ).pipe(Effect.withSpan("UsageStore.record"))
    }

    const byRef = (ref: string) =>
      Effect.map(Ref.get(records), (map) => {
        const found = map.get(ref)
        return found === undefined ? undefined : { ...found }
      })

    const list = (query: UsageQuery) =>
      Effect.map(Ref.get(records), (map) =>
        [...map.values()].filter((r) => matchesUsageQuery(query, r)).sort(byTimeThenRef).map((r) => ({ ...r })))

    const spent = (query: UsageQuery) =>
      Effect.map(Ref.get(records), (map) => {
        let sum = 0n
        for (const r of map.values()) if (matchesUsageQuery(query, r)) sum += r.credits
        return sum
      })

    return UsageStore.of({ record, byRef, list, spent })
  })
)
