/**
 * The goals of docs/performance.md (issue 23) and the table the gateway benchmark (bench/gateway.ts)
 * prints of them: per scenario, the platform's figures MET or MISSED, then the floor's own
 * figures against the same goals (a goal the bare pass-through misses is out of any platform's
 * reach on that machine).
 */
import { type Merged, ms } from "./loadGenerator.ts"

export const GOALS = { floorShare: 0.5, c1AddedP50Ms: 1, c1AddedP99Ms: 3, cpuPerCallUs: 300, streamFirstByteAddedMs: 0.5 } as const

/** One phase of a scenario: each side's latencies and the CPU per call (µs) of the floor, the server and PostgreSQL. */
interface Phase {
  readonly direct: Merged
  readonly floor: Merged
  readonly platform: Merged
  readonly cpu: { readonly floor: number; readonly server: number; readonly postgres: number | undefined }
}

export interface ScenarioSummary {
  readonly scenario: string
  readonly c1: Phase
  readonly c16: Phase
  /** The streamed calls at c=1, when the run made them (--stream-n). */
  readonly stream1: Phase | undefined
}

export const printGoals = (summaries: ReadonlyArray<ScenarioSummary>) => {
  console.log("\ngoals (docs/performance.md): metered calls/s at c=16 >= 50% of the floor; added at c=1 p50 <= 1 ms, p99 <= 3 ms; CPU per call at c=16 (server + Postgres) <= 300 µs")
  console.log("| scenario | c=16 metered/s (floor) | share | c=1 added p50 / p99 | CPU per call c=16 | stream first byte added p50, c=1 |")
  console.log("|---|---|---|---|---|---|")
  for (const { scenario, c1, c16, stream1 } of summaries) {
    const share = c16.platform.meteredPerSecond / c16.floor.perSecond
    const p50 = c1.platform.p50 - c1.direct.p50
    const p99 = c1.platform.p99 - c1.direct.p99
    const cpu = c16.cpu.server + (c16.cpu.postgres ?? 0)
    const mark = (ok: boolean) => (ok ? "MET" : "MISSED")
    console.log(
      `| ${scenario} | ${c16.platform.meteredPerSecond.toFixed(0)} (${c16.floor.perSecond.toFixed(0)}) | ${(share * 100).toFixed(0)}% ${mark(share >= GOALS.floorShare)} | ` +
        `${ms(p50)} / ${ms(p99)} ms ${mark(p50 <= GOALS.c1AddedP50Ms && p99 <= GOALS.c1AddedP99Ms)} | ` +
        `${c16.cpu.server.toFixed(0)} + ${c16.cpu.postgres?.toFixed(0) ?? "?"} = ${cpu.toFixed(0)} µs ${mark(cpu <= GOALS.cpuPerCallUs)} | ` +
        (stream1 === undefined
          ? "not run (--stream-n) |"
          : `${ms(stream1.platform.firstByteP50 - stream1.direct.firstByteP50)} ms ${mark(stream1.platform.firstByteP50 - stream1.direct.firstByteP50 <= GOALS.streamFirstByteAddedMs)} |`)
    )
    // The pass-through against the same goals: a goal the floor misses, no platform meets on this machine.
    const floorP50 = c1.floor.p50 - c1.direct.p50
    const floorP99 = c1.floor.p99 - c1.direct.p99
    console.log(
      `| ${scenario}, the floor itself | | | ${ms(floorP50)} / ${ms(floorP99)} ms ${mark(floorP50 <= GOALS.c1AddedP50Ms && floorP99 <= GOALS.c1AddedP99Ms)} | ` +
        `${c16.cpu.floor.toFixed(0)} µs ${mark(c16.cpu.floor <= GOALS.cpuPerCallUs)} | ` +
        (stream1 === undefined
          ? "|"
          : `${ms(stream1.floor.firstByteP50 - stream1.direct.firstByteP50)} ms ${mark(stream1.floor.firstByteP50 - stream1.direct.firstByteP50 <= GOALS.streamFirstByteAddedMs)} |`)
    )
  }
}
