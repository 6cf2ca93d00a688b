/**
 * The usage store port in memory, for tests and property tests. One Ref holds the records by ref
 * and the per-day rollups by their id; `record` is a single `Ref.modify` that writes both, so
 * concurrent records of one ref leave exactly one record counted once in its rollup. Reports read
 * the rollups only. A record that breaks the port's rules (a negative amount, an empty ref) is a
 * defect.
 */
import { Effect, Layer, Ref } from "effect"
import {
  addTotals,
  byTimeThenRef,
  groupRollups,
  isAfterCursor,
  matchesUsageQuery,
  pagedUsageStream,
  rollupId,
  rollupOf,
  type UsageCursor,
  type UsageDays,
  type UsageDimension,
  type UsageQuery,
  type UsageRecord,
  usageRecordProblem,
  type UsageRollup,
  UsageStore
} from "@model-platform/core/billing"

interface State {
  readonly records: ReadonlyMap<string, UsageRecord>
  readonly rollups: ReadonlyMap<string, UsageRollup>
}

export const UsageStoreMemory: Layer.Layer<UsageStore> = Layer.effect(
  UsageStore,
  Effect.gen(function*() {
    const state = yield* Ref.make<State>({ records: new Map(), rollups: new Map() })

    const record = (usage: UsageRecord) => {
      const problem = usageRecordProblem(usage)
      if (problem !== undefined) return Effect.die(new Error(`UsageStore.record: ${problem}`))
      return Ref.modify(state, (s): readonly ["Recorded" | "Duplicate", State] => {
        if (s.records.has(usage.ref)) return ["Duplicate", s]
        const added = rollupOf(usage)
        const id = rollupId(added)
        const rollup = s.rollups.get(id)
        return ["Recorded", {
          records: new Map(s.records).set(usage.ref, { ...usage }),
          rollups: new Map(s.rollups).set(id, rollup === undefined ? added : addTotals(rollup, added))
        }]
      }).pipe(Effect.withSpan("UsageStore.record"))
    }

    const byRef = (ref: string) =>
      Effect.map(Ref.get(state), (s) => {
        const found = s.records.get(ref)
        return found === undefined ? undefined : { ...found }
      })

    const matching = (query: UsageQuery) =>
      Effect.map(Ref.get(state), (s) => [...s.records.values()].filter((r) => matchesUsageQuery(query, r)))

    const list = (query: UsageQuery) => Effect.map(matching(query), (records) => records.sort(byTimeThenRef).map((r) => ({ ...r })))

    const spent = (query: UsageQuery) =>
      Effect.map(matching(query), (records) => records.reduce((sum, r) => sum + r.credits, 0n))

    const report = (query: UsageDays, groupBy: UsageDimension) =>
      Effect.map(Ref.get(state), (s) => groupRollups(s.rollups.values(), query, groupBy))

    // Each page filters and sorts again: the memory store is for tests, not for large histories.
    const page = (query: UsageQuery) => (after: UsageCursor | undefined, limit: number) =>
      Effect.map(matching(query), (records) =>
        records
          .filter((r) => after === undefined || isAfterCursor(after, r))
          .sort(byTimeThenRef)
          .slice(0, limit)
          .map((r) => ({ ...r })))

    const stream = (query: UsageQuery, options?: { readonly pageSize?: number | undefined }) =>
      pagedUsageStream(page(query), options?.pageSize)

    return UsageStore.of({ record, byRef, list, spent, report, stream })
  })
)
