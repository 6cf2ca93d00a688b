/**
 * The metering journal on local disk (core/src/gateway/MeteringJournal.ts; docs/gateway.md "Metering
 * that survives faults").
 *
 * Under one directory (METERING_JOURNAL_DIR, default DATA_DIR/metering) each process keeps its own
 * journal: a subdirectory `<pid>-<random>` holding a lock (the embedded database's, from
 * @model-platform/postgres-stores/database: pid + token) and an append-only file `journal` of JSON
 * lines. Several processes may share the directory.
 *
 * - Appends are group-committed: those asked for in one turn of the event loop are one write(2)
 *   of whole lines, and each returns once that write is done: in the kernel, so it survives the
 *   process being killed (kill -9, a crash, OOM).
 *   Without `fsync` it does not survive the machine losing power or its kernel crashing; with it,
 *   every append waits for the disk.
 * - A torn last line (the process died inside a write) is skipped when read.
 * - The file is compacted when it grows past `compactBytes`: rewritten with only the open entries
 *   (written aside, then renamed over), so it stays small however long the process runs.
 * - `orphans` (the gateway asks at start and every 30 s) takes over every subdirectory whose lock is
 *   free or stale (its process is gone), so a sibling process replays a dead one's journal without
 *   waiting for it to be restarted; `release` removes the subdirectory.
 */
import {
  decodeEntry,
  encodeEntry,
  type JournalEntry,
  MeteringJournal,
  openEntries,
  type Orphan
} from "@model-platform/core/gateway"
import { Clock, Effect, Layer, Scope } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { DataDirLocked, lock, LOCK_FILE } from "@model-platform/postgres-stores/database"

export interface FileJournalOptions {
  /** The directory shared by the processes' journals. */
  readonly directory: string
  /** fsync after every append (survives power loss; costs a disk flush per append). Default false. */
  readonly fsync?: boolean
  /** Compact the file past this size. Default 8 MiB. */
  readonly compactBytes?: number
}

const JOURNAL = "journal"

const refOf = (entry: JournalEntry) => entry._tag === "completed" ? entry.metered.record.ref : entry.ref

const readEntries = (file: string): ReadonlyArray<JournalEntry> => {
  if (!Fs.existsSync(file)) return []
  const entries: Array<JournalEntry> = []
  for (const line of Fs.readFileSync(file, "utf8").split("\n")) {
    const entry = line === "" ? undefined : decodeEntry(line)
    if (entry !== undefined) entries.push(entry)
  }
  return entries
}

/** Takes over the journals of processes that are gone; each stays locked by this process until released. */
const takeOver = (directory: string) =>
  Effect.gen(function*() {
    const orphans: Array<Orphan> = []
    const now = yield* Clock.currentTimeMillis
    for (const name of Fs.readdirSync(directory)) {
      const dir = Path.join(directory, name)
      const stat = Fs.statSync(dir)
      if (!stat.isDirectory()) continue
      // Neither lock nor journal yet, and just made: another process is starting in it right now.
      const starting = !Fs.existsSync(Path.join(dir, LOCK_FILE)) && !Fs.existsSync(Path.join(dir, JOURNAL))
      if (starting && now - stat.mtimeMs < 60_000) continue
      const taken = yield* lock(dir).pipe(
        Effect.as(true),
        Effect.catchIf((e) => e instanceof DataDirLocked, () => Effect.succeed(false))
      )
      if (!taken) continue
      orphans.push({
        name: dir,
        entries: openEntries(readEntries(Path.join(dir, JOURNAL))),
        release: Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true }))
      })
    }
    return orphans
  })

export const layer = (options: FileJournalOptions): Layer.Layer<MeteringJournal> =>
  Layer.effect(
    MeteringJournal,
    Effect.gen(function*() {
      const { directory } = options
      const compactBytes = options.compactBytes ?? 8 * 1024 * 1024
      Fs.mkdirSync(directory, { recursive: true, mode: 0o700 })
      // Orphans' locks are held for the life of the journal (or until released).
      const scope = yield* Effect.scope

      const own = Path.join(directory, `${process.pid}-${crypto.randomUUID().slice(0, 8)}`)
      yield* lock(own)
      const file = Path.join(own, JOURNAL)
      let fd = Fs.openSync(file, "a")
      let size = 0
      // The open entries' lines, by ref: what a compaction keeps.
      const open = new Map<string, string>()

      const compact = () => {
        const aside = `${file}.compacting`
        const text = [...open.values()].join("")
        Fs.writeFileSync(aside, text)
        if (options.fsync === true) {
          const f = Fs.openSync(aside, "r")
          Fs.fsyncSync(f)
          Fs.closeSync(f)
        }
        Fs.renameSync(aside, file)
        Fs.closeSync(fd)
        fd = Fs.openSync(file, "a")
        size = Buffer.byteLength(text)
      }

      /** The entries' lines in one write(2). */
      const write = (entries: ReadonlyArray<JournalEntry>) => {
        const lines = entries.map(encodeEntry)
        const text = lines.join("")
        Fs.writeSync(fd, text)
        if (options.fsync === true) Fs.fdatasyncSync(fd)
        size += text.length
        entries.forEach((entry, i) => {
          const ref = refOf(entry)
          if (entry._tag === "closed") open.delete(ref)
          else open.set(ref, lines[i]!)
        })
        if (size > compactBytes) compact()
      }

      // Group commit: the appends asked for in one turn of the event loop (the calls whose machines
      // answered in the same poll, an admission batch, a metering batch) are written together, once
      // that turn's I/O callbacks have run, and each append returns once its entries are written.
      let pending: Array<JournalEntry> = []
      let waiting: Array<(failure: unknown) => void> = []
      const flush = () => {
        if (waiting.length === 0) return
        const entries = pending
        const waiters = waiting
        pending = []
        waiting = []
        let failure: unknown = undefined
        try {
          write(entries)
        } catch (error) {
          failure = error ?? new Error("the metering journal's write failed")
        }
        for (const resume of waiters) resume(failure)
      }
      const append = (entries: ReadonlyArray<JournalEntry>) =>
        entries.length === 0 ? Effect.void : Effect.callback<void>((resume) => {
          if (waiting.length === 0) setImmediate(flush)
          for (const entry of entries) pending.push(entry)
          // A journal that cannot append is a defect (MeteringJournal.ts).
          waiting.push((failure) => resume(failure === undefined ? Effect.void : Effect.die(failure)))
        })
      // What is asked for before the journal closes is written first.
      yield* Effect.addFinalizer(() =>
        Effect.sync(() => {
          flush()
          Fs.closeSync(fd)
        })
      )

      return MeteringJournal.of({
        opened: (refs) => append(refs.map((ref) => ({ _tag: "opened", ref }))),
        completed: (metered) => append([{ _tag: "completed", metered }]),
        closed: (refs) => append(refs.map((ref) => ({ _tag: "closed", ref }))),
        orphans: Scope.provide(scope)(takeOver(directory)).pipe(Effect.orDie),
        // Every process's journal in the directory: a line names its call's ref.
        entriesOf: (ref) =>
          Effect.sync(() =>
            Fs.readdirSync(directory).flatMap((name) =>
              readEntries(Path.join(directory, name, JOURNAL))
                .filter((entry) => refOf(entry) === ref)
                .map((entry) => ({ journal: name, entry }))
            )
          )
      })
    })
  ).pipe(Layer.orDie)

export const FileMeteringJournal = { layer } as const
