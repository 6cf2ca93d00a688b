/**
 * What the server's garbage collector did over a stretch of calls, read from V8's own record of
 * each collection (`v8.GCProfiler`): how many young-generation collections (scavenges) and full
 * ones ran, how long they paused the process, and how many bytes the calls allocated and how many
 * of those outlived two scavenges (promoted to the old generation).
 *
 * Bytes per call depend on the code, not on how fast or how loaded the machine is, so they compare
 * across machines where CPU times do not (docs/performance.md "Another machine, and what the
 * garbage collector does per call"). Promotion is what makes a scavenge slow: its pause grows with
 * what survives, and promoted garbage waits for a full collection.
 */
import * as V8 from "node:v8"

export interface GcTotals {
  readonly scavenges: number
  readonly fullCollections: number
  /** Sum and longest pause of the scavenges, in µs. */
  readonly scavengePauseUs: number
  readonly longestScavengeUs: number
  /** Bytes allocated in the young generation (what each scavenge found there, less what the last one left). */
  readonly allocatedBytes: number
  /** Bytes the scavenges moved to the old generation. */
  readonly promotedBytes: number
}

interface GcRecord {
  readonly gcType: string
  readonly cost: number
  readonly beforeGC: { readonly heapSpaceStatistics: ReadonlyArray<{ readonly spaceName: string; readonly spaceUsedSize: number }> }
  readonly afterGC: { readonly heapSpaceStatistics: ReadonlyArray<{ readonly spaceName: string; readonly spaceUsedSize: number }> }
}

const used = (spaces: ReadonlyArray<{ readonly spaceName: string; readonly spaceUsedSize: number }>, name: string) =>
  spaces.find((s) => s.spaceName === name)?.spaceUsedSize ?? 0

const youngUsed = () => V8.getHeapSpaceStatistics().find((s) => s.space_name === "new_space")?.space_used_size ?? 0

/** Starts watching; `stop` returns the totals since `start`. One watch at a time. */
export const makeGcWatch = () => {
  let profiler: V8.GCProfiler | undefined
  let youngAtStart = 0
  return {
    start: () => {
      profiler?.stop()
      youngAtStart = youngUsed()
      profiler = new V8.GCProfiler()
      profiler.start()
    },
    stop: (): GcTotals => {
      const records = ((profiler?.stop() as { statistics?: ReadonlyArray<GcRecord> } | undefined)?.statistics ?? [])
      profiler = undefined
      let scavenges = 0
      let fullCollections = 0
      let scavengePauseUs = 0
      let longestScavengeUs = 0
      let allocatedBytes = 0
      let promotedBytes = 0
      let youngLeft = youngAtStart
      for (const r of records) {
        const youngBefore = used(r.beforeGC.heapSpaceStatistics, "new_space")
        const youngAfter = used(r.afterGC.heapSpaceStatistics, "new_space")
        allocatedBytes += Math.max(0, youngBefore - youngLeft)
        youngLeft = youngAfter
        if (r.gcType === "Scavenge") {
          scavenges++
          scavengePauseUs += r.cost
          longestScavengeUs = Math.max(longestScavengeUs, r.cost)
          promotedBytes += Math.max(0, used(r.afterGC.heapSpaceStatistics, "old_space") - used(r.beforeGC.heapSpaceStatistics, "old_space"))
        } else if (r.gcType === "MarkSweepCompact") {
          fullCollections++
        }
      }
      allocatedBytes += Math.max(0, youngUsed() - youngLeft)
      return { scavenges, fullCollections, scavengePauseUs, longestScavengeUs, allocatedBytes, promotedBytes }
    }
  }
}

/** The sum of two stretches' totals. */
export const addGc = (a: GcTotals, b: GcTotals): GcTotals => ({
  scavenges: a.scavenges + b.scavenges,
  fullCollections: a.fullCollections + b.fullCollections,
  scavengePauseUs: a.scavengePauseUs + b.scavengePauseUs,
  longestScavengeUs: Math.max(a.longestScavengeUs, b.longestScavengeUs),
  allocatedBytes: a.allocatedBytes + b.allocatedBytes,
  promotedBytes: a.promotedBytes + b.promotedBytes
})

export const NO_GC: GcTotals = {
  scavenges: 0, fullCollections: 0, scavengePauseUs: 0, longestScavengeUs: 0, allocatedBytes: 0, promotedBytes: 0
}
