/**
 * The call path makes no hidden class per call (docs/gateway.md "Code on the call path";
 * docs/performance.md "Generators made per call"), COUNTED with V8's own map log, never timed.
 *
 * A generator function made per call (`Effect.gen(function*() {...})` inside code that runs per
 * call) gets a new initial map, in the old generation, at its first call; through its closure it
 * keeps the call's state alive past the young generation's collections. So the engine's
 * micro-benchmark (bench/gatewayCall.ts: Gateway.call in process, a non-streamed chat, the stores in
 * memory) runs twice under `--log-maps`, with few and with many calls: the initial maps V8 made
 * must not grow with the number of calls. Before the call path was written so, they grew by about
 * 3 per call on these stores (18 per call on PostgreSQL's path).
 */
import { spawnSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"

const root = Path.resolve(import.meta.dirname, "../../..")
const bench = Path.join(root, "adapters/node-http/bench/gatewayCall.ts")

/** Initial maps V8 made in a run of the micro-benchmark with `n` (it makes 17 n calls). */
const initialMaps = (n: number): number => {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "call-path-maps-"))
  const log = Path.join(dir, "v8.log")
  try {
    const run = spawnSync(
      process.execPath,
      ["--log-maps", "--no-log-maps-details", `--logfile=${log}`, "--no-logfile-per-isolate", bench, String(n)],
      { cwd: root, encoding: "utf8", timeout: 120_000 }
    )
    expect(run.status, run.stderr).toBe(0)
    let count = 0
    for (const line of Fs.readFileSync(log, "utf8").split("\n")) if (line.startsWith("map,InitialMap,")) count += 1
    return count
  } finally {
    Fs.rmSync(dir, { recursive: true, force: true })
  }
}

describe("the gateway's call path", () => {
  it("makes no hidden class per call: 1,700 more calls make (almost) no more initial maps", () => {
    const few = initialMaps(20)
    const many = initialMaps(120)
    // A few may come from the optimizing compiler's timing; a generator function made per call
    // would add at least 1,700.
    expect(many - few).toBeLessThan(50)
  }, 240_000)
})
