/**
 * The metering journal on disk (src/FileMeteringJournal.ts): what a process leaves open is what the
 * next one finds (torn last lines skipped), compaction keeps only open entries, and the journal of
 * a live process is never taken over; the appends of one turn of the event loop are one write.
 */
import type { Metered } from "@model-platform/core/gateway"
import { MeteringJournal } from "@model-platform/core/gateway"
import { Effect, Layer, ManagedRuntime } from "effect"
// The default export: the object a spy can replace `writeSync` on (syncBuiltinESMExports).
import Fs from "node:fs"
import { syncBuiltinESMExports } from "node:module"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, describe, expect, it, vi } from "vitest"
import { FileMeteringJournal } from "../src/FileMeteringJournal.ts"

const metered = (ref: string): Metered => ({
  settlement: {
    ref,
    at: "2026-01-01T00:00:00.000Z",
    charged: 123n,
    excess: 0n,
    entries: [{ ref, account_id: "acct_1", machine_id: null, amount: -123n, type: "usage", created_at: "2026-01-01T00:00:00.000Z" } as never]
  },
  record: {
    ref, account_id: "acct_1", at: "2026-01-01T00:00:00.000Z", key_id: "key_1", agent_id: null, machine_id: "m", service: "chat",
    model: "chat", unit: "tokens", quantity: 15n, input_tokens: 10n, output_tokens: 5n, list_credits: 123n, credits: 123n,
    from_allowance: 0n, from_trial: 0n
  }
})

const open = (directory: string, compactBytes?: number) =>
  ManagedRuntime.make(FileMeteringJournal.layer({ directory, ...(compactBytes === undefined ? {} : { compactBytes }) }))

const journalOf = <R>(runtime: ManagedRuntime.ManagedRuntime<MeteringJournal, never>) =>
  runtime.runPromise(Effect.map(MeteringJournal, (j) => j))

describe("FileMeteringJournal", () => {
  const root = Fs.mkdtempSync(Path.join(Os.tmpdir(), "metering-journal-"))
  afterAll(() => Fs.rmSync(root, { recursive: true, force: true }))

  it("what one process leaves open, the next one takes over; bigints exact; a torn line skipped", async () => {
    const dir = Path.join(root, "a")
    const first = open(dir)
    const j1 = await journalOf(first)
    await first.runPromise(Effect.gen(function*() {
      yield* j1.opened(["usage_1", "usage_2"])
      yield* j1.opened(["usage_3"])
      yield* j1.completed(metered("usage_1"))
      yield* j1.closed(["usage_3"])
      yield* j1.completed(metered("usage_free"))
    }))
    expect(await first.runPromise(j1.orphans)).toEqual([])
    await first.dispose() // as a process that stops: its lock is gone, its journal stays
    const [sub] = Fs.readdirSync(dir)
    Fs.appendFileSync(Path.join(dir, sub!, "journal"), "{\"c\":{\"record\":{\"ref\":\"usage_to") // died mid-write

    const second = open(dir)
    const orphans = await second.runPromise(Effect.flatMap(MeteringJournal, (j) => j.orphans))
    expect(orphans.length).toBe(1)
    expect(orphans[0]!.entries.opened).toEqual(["usage_2"])
    expect(orphans[0]!.entries.completed).toEqual([metered("usage_1"), metered("usage_free")])
    await second.runPromise(orphans[0]!.release)
    expect(Fs.existsSync(orphans[0]!.name)).toBe(false)
    await second.dispose()
  })

  it("never takes over the journal of a live process", async () => {
    const dir = Path.join(root, "b")
    const live = open(dir)
    const j = await journalOf(live)
    await live.runPromise(j.opened(["usage_live"]))
    const other = open(dir)
    expect(await other.runPromise(Effect.flatMap(MeteringJournal, (x) => x.orphans))).toEqual([])
    await other.dispose()
    await live.dispose()
  })

  it("a running process takes over the journal of a sibling that died, on its next look", async () => {
    const dir = Path.join(root, "d")
    const survivor = open(dir)
    const sibling = open(dir)
    const j = await journalOf(sibling)
    await sibling.runPromise(j.completed(metered("usage_sibling")))
    const look = () => survivor.runPromise(Effect.flatMap(MeteringJournal, (x) => x.orphans))
    expect(await look()).toEqual([])
    await sibling.dispose() // it is gone
    const [orphan] = await look()
    expect(orphan!.entries.completed).toEqual([metered("usage_sibling")])
    expect(await look()).toEqual([]) // held by the survivor while it replays
    await survivor.runPromise(orphan!.release)
    await survivor.dispose()
  })

  it("compaction keeps only the open entries", async () => {
    const dir = Path.join(root, "c")
    const runtime = open(dir, 4096)
    const j = await journalOf(runtime)
    await runtime.runPromise(Effect.gen(function*() {
      for (let i = 0; i < 200; i++) {
        yield* j.opened([`usage_${i}`])
        if (i % 50 !== 0) yield* j.closed([`usage_${i}`])
      }
    }))
    const [sub] = Fs.readdirSync(dir)
    const file = Path.join(dir, sub!, "journal")
    expect(Fs.statSync(file).size).toBeLessThan(4096 + 100)
    await runtime.dispose()
    const next = open(dir)
    const orphans = await next.runPromise(Effect.flatMap(MeteringJournal, (x) => x.orphans))
    expect(orphans[0]!.entries.opened).toEqual(["usage_0", "usage_50", "usage_100", "usage_150"])
    await next.dispose()
  })

  it("the appends of one turn are one write, each returning once it is written", async () => {
    const dir = Path.join(root, "e")
    const runtime = open(dir)
    const j = await journalOf(runtime)
    const [sub] = Fs.readdirSync(dir)
    const file = Path.join(dir, sub!, "journal")
    const writes = vi.spyOn(Fs, "writeSync")
    syncBuiltinESMExports()
    try {
      const lines = await runtime.runPromise(Effect.gen(function*() {
        yield* Effect.all([
          j.opened(["usage_a", "usage_b"]),
          ...Array.from({ length: 16 }, (_, i) => j.completed(metered(`usage_${i}`))),
          j.closed(["usage_c"])
        ], { concurrency: "unbounded" })
        // Every append has returned: all its lines are in the file already.
        return Fs.readFileSync(file, "utf8").split("\n").filter((line) => line !== "").length
      }))
      expect(lines).toBe(19)
      expect(writes.mock.calls.length).toBe(1)
      // A later turn is a write of its own.
      await runtime.runPromise(j.closed(["usage_a"]))
      expect(writes.mock.calls.length).toBe(2)
    } finally {
      writes.mockRestore()
      syncBuiltinESMExports()
    }
    await runtime.dispose()
  })
})
