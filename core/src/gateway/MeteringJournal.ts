/**
 * Port: a durable local journal of the gateway's money in flight (docs/gateway.md "Metering that
 * survives faults"), so that a process killed between an answer and its metering loses nothing.
 *
 * The gateway writes, per call:
 *  - `opened` before it asks the store for a reservation (so a restart can release it): the refs of
 *    a whole admission batch in one append;
 *  - `completed(metered)` when the machine has answered, before the answer's last bytes are handed
 *    over (a stream: right after them), with everything metering will write;
 *  - `closed` once the store has the call's settlement and record (a whole metering batch in one
 *    append), or its reservation voided.
 * An entry is open from `opened`/`completed` until `closed`. At start the gateway takes over the
 * journals of processes that are gone (`orphans`): it meters each completed call again and voids
 * each reservation whose call never completed (and again periodically, for siblings that died), both idempotent by ref (GatewayStore.commit
 * answers "Duplicate" / "not_pending" on replay), then lets the orphan go.
 *
 * Implementations: an append-only file per process (adapters/node-http FileMeteringJournal), in
 * memory for tests (adapters/test-harness MemoryMeteringJournal). Appends must be durable against
 * the process being killed (written to the OS before they return); a journal failing to append is
 * a defect.
 */
import { Context, type Effect } from "effect"
import type { Metered } from "./GatewayStore.ts"

/** The open entries a journal holds, in the order they were written. */
export interface OpenEntries {
  /** Reservations asked for whose call neither completed nor was closed. */
  readonly opened: ReadonlyArray<string>
  /** Calls answered whose metering was not confirmed. */
  readonly completed: ReadonlyArray<Metered>
}

/** The journal of a process that is gone, held by this one until `release`. */
export interface Orphan {
  readonly name: string
  readonly entries: OpenEntries
  /** Everything in it has been replayed: forget it. */
  readonly release: Effect.Effect<void>
}

export interface MeteringJournalShape {
  /** One entry per ref, appended together (one write for a batch). */
  readonly opened: (refs: ReadonlyArray<string>) => Effect.Effect<void>
  readonly completed: (metered: Metered) => Effect.Effect<void>
  /** One entry per ref, appended together (one write for a batch). */
  readonly closed: (refs: ReadonlyArray<string>) => Effect.Effect<void>
  /**
   * The journals left by processes that are gone, taken over by this one (asked at start and then
   * periodically); one being replayed is not answered again until released.
   */
  readonly orphans: Effect.Effect<ReadonlyArray<Orphan>>
  /**
   * Optional: the entries about one call that the journals (this process's and those of others
   * in the same place) still hold, for an operator looking the call up. A closed call's entries
   * may be gone already: a journal drops what is closed when it compacts.
   */
  readonly entriesOf?: (ref: string) => Effect.Effect<ReadonlyArray<{ readonly journal: string; readonly entry: JournalEntry }>>
}

export class MeteringJournal extends Context.Service<MeteringJournal, MeteringJournalShape>()(
  "@model-platform/core/gateway/MeteringJournal"
) {}

// ---- Entries as text (one JSON line each), for journals that write files ----------------------

export type JournalEntry =
  | { readonly _tag: "opened"; readonly ref: string }
  | { readonly _tag: "completed"; readonly metered: Metered }
  | { readonly _tag: "closed"; readonly ref: string }

/** bigints as {"$n": "<digits>"}: JSON has no integers beyond 2^53. */
const replacer = (_key: string, value: unknown) => typeof value === "bigint" ? { $n: value.toString() } : value
const reviver = (_key: string, value: unknown) =>
  typeof value === "object" && value !== null && typeof (value as { $n?: unknown }).$n === "string" &&
    Object.keys(value).length === 1
    ? BigInt((value as { $n: string }).$n)
    : value

/** One line, ending with "\n". */
export const encodeEntry = (entry: JournalEntry): string =>
  (entry._tag === "completed"
    ? JSON.stringify({ c: entry.metered }, replacer)
    : JSON.stringify(entry._tag === "opened" ? { o: entry.ref } : { d: entry.ref })) + "\n"

/** One line (without its "\n"); undefined for a line that is not a whole entry (a torn last write). */
export const decodeEntry = (line: string): JournalEntry | undefined => {
  let parsed: unknown
  try {
    parsed = JSON.parse(line, reviver)
  } catch {
    return undefined
  }
  if (typeof parsed !== "object" || parsed === null) return undefined
  const p = parsed as { o?: unknown; d?: unknown; c?: unknown }
  if (typeof p.o === "string") return { _tag: "opened", ref: p.o }
  if (typeof p.d === "string") return { _tag: "closed", ref: p.d }
  if (typeof p.c === "object" && p.c !== null && typeof (p.c as Metered).record?.ref === "string") {
    return { _tag: "completed", metered: p.c as Metered }
  }
  return undefined
}

/**
 * What is still open after these entries: the last word on each ref wins (a completion
 * supersedes its opening; a close ends both).
 */
export const openEntries = (entries: Iterable<JournalEntry>): OpenEntries => {
  const open = new Map<string, JournalEntry>()
  for (const entry of entries) {
    if (entry._tag === "closed") open.delete(entry.ref)
    else {
      const ref = entry._tag === "opened" ? entry.ref : entry.metered.record.ref
      // Re-inserted so that the map's order is the order of the last word.
      open.delete(ref)
      open.set(ref, entry)
    }
  }
  const opened: Array<string> = []
  const completed: Array<Metered> = []
  for (const entry of open.values()) {
    if (entry._tag === "opened") opened.push(entry.ref)
    else if (entry._tag === "completed") completed.push(entry.metered)
  }
  return { opened, completed }
}
