/**
 * The metering journal in memory (core/src/gateway/MeteringJournal.ts), for tests: it keeps this
 * process's entries in a list a test can read, and can be given the journals "a killed process
 * left" (orphans), to check what a restart replays.
 */
import {
  type JournalEntry,
  MeteringJournal,
  type MeteringJournalShape,
  openEntries,
  type Orphan
} from "@model-platform/core/gateway"
import { Effect, Layer } from "effect"

export interface MemoryJournal {
  readonly service: MeteringJournalShape
  /** Every entry this process wrote, in order. */
  readonly entries: ReadonlyArray<JournalEntry>
  /** Names of the orphans released (replayed) so far. */
  readonly released: ReadonlyArray<string>
  readonly layer: Layer.Layer<MeteringJournal>
}

export const makeMemoryJournal = (
  orphans: ReadonlyArray<{ readonly name: string; readonly entries: ReadonlyArray<JournalEntry> }> = []
): MemoryJournal => {
  const entries: Array<JournalEntry> = []
  const released: Array<string> = []
  let left = [...orphans]
  const append = (entry: JournalEntry) => Effect.sync(() => void entries.push(entry))
  const service: MeteringJournalShape = {
    opened: (refs) => Effect.forEach(refs, (ref) => append({ _tag: "opened", ref }), { discard: true }),
    completed: (metered) => append({ _tag: "completed", metered }),
    closed: (refs) => Effect.forEach(refs, (ref) => append({ _tag: "closed", ref }), { discard: true }),
    orphans: Effect.sync(() =>
      left.map((orphan): Orphan => ({
        name: orphan.name,
        entries: openEntries(orphan.entries),
        release: Effect.sync(() => {
          left = left.filter((o) => o !== orphan)
          released.push(orphan.name)
        })
      }))
    )
  }
  return { service, entries, released, layer: Layer.succeed(MeteringJournal, service) }
}

/** What is open in a memory journal now (as a restart would find it, were this process killed). */
export const openOf = (journal: MemoryJournal) => openEntries(journal.entries)
