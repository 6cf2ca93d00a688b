/**
 * Where a process's allocations come from (a diagnostic of the bench, `--alloc-prof`): V8's
 * sampling heap profiler, keeping the samples of objects the garbage collector has already freed
 * (the profiler otherwise keeps only what is still alive, and nearly everything a call allocates
 * is garbage by the time it is read), summed by the function that allocated (self bytes) and by
 * the package or source folder it belongs to.
 *
 * A sample is taken every SAMPLING_INTERVAL bytes on average, so small figures are estimates.
 * Sampling slows the process several times over: a run made with it says where the bytes come
 * from, not how fast anything is.
 */
import * as Inspector from "node:inspector/promises"

const SAMPLING_INTERVAL = 512

export interface AllocTotals {
  readonly bytes: number
  /** Bytes by the package (node_modules) or the repository folder (core/src/gateway) that allocated them. */
  readonly byPlace: Readonly<Record<string, number>>
  /** Bytes by allocating function: "name place/file:line". */
  readonly byFunction: Readonly<Record<string, number>>
}

interface ProfileNode {
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number }
  readonly selfSize: number
  readonly children: ReadonlyArray<ProfileNode>
}

/** The file path from the package or the repository's top folder on. */
const shortUrl = (url: string): string => {
  const inModules = url.lastIndexOf("node_modules/")
  if (inModules >= 0) return url.slice(inModules + "node_modules/".length)
  const inRepository = url.search(/\/(core|adapters)\//)
  return inRepository >= 0 ? url.slice(inRepository + 1) : url
}

const placeOf = (url: string): string => {
  if (url === "") return "(V8 and native)"
  if (url.startsWith("node:")) return "node: (built-in modules)"
  const path = shortUrl(url).replace(/^file:\/\//, "").split("/")
  // "effect/dist/x.js" -> "effect", "@effect/sql-pg/dist/x.js" -> "@effect/sql-pg", "core/src/gateway/x.ts" -> "core/src/gateway"
  return path.slice(0, path[0]!.startsWith("@") ? 2 : path[0] === "core" || path[0] === "adapters" ? 3 : 1).join("/")
}

const add = (into: Record<string, number>, key: string, n: number) => {
  into[key] = (into[key] ?? 0) + n
}

/** Starts sampling this process's allocations; `stop` returns what was allocated since. */
export const startAllocWatch = async () => {
  const session = new Inspector.Session()
  session.connect()
  await session.post("HeapProfiler.enable")
  await session.post("HeapProfiler.startSampling", {
    samplingInterval: SAMPLING_INTERVAL,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true
  } as Inspector.HeapProfiler.StartSamplingParameterType)
  return {
    stop: async (): Promise<AllocTotals> => {
      const { profile } = await session.post("HeapProfiler.stopSampling")
      session.disconnect()
      const byPlace: Record<string, number> = {}
      const byFunction: Record<string, number> = {}
      let bytes = 0
      const walk = (node: ProfileNode) => {
        const { functionName, url, lineNumber } = node.callFrame
        if (node.selfSize > 0) {
          bytes += node.selfSize
          add(byPlace, placeOf(url), node.selfSize)
          add(byFunction, `${functionName || "(anonymous)"} ${shortUrl(url)}:${lineNumber + 1}`, node.selfSize)
        }
        for (const child of node.children) walk(child)
      }
      walk(profile.head as unknown as ProfileNode)
      return { bytes, byPlace, byFunction }
    }
  }
}

/** The sum of two stretches' totals. */
export const addAlloc = (a: AllocTotals, b: AllocTotals): AllocTotals => {
  const byPlace = { ...a.byPlace }
  const byFunction = { ...a.byFunction }
  for (const [k, n] of Object.entries(b.byPlace)) add(byPlace, k, n)
  for (const [k, n] of Object.entries(b.byFunction)) add(byFunction, k, n)
  return { bytes: a.bytes + b.bytes, byPlace, byFunction }
}

export const NO_ALLOC: AllocTotals = { bytes: 0, byPlace: {}, byFunction: {} }

/** Lines for a report: the places, then the `functions` largest allocating functions, in KB per call. */
export const describeAlloc = (totals: AllocTotals, calls: number, functions = 12): ReadonlyArray<string> => {
  const kb = (n: number) => `${(n / calls / 1024).toFixed(1)} KB`
  const top = (m: Readonly<Record<string, number>>, n: number) => Object.entries(m).sort((x, y) => y[1] - x[1]).slice(0, n)
  return [
    `allocations (sampled) per call ${kb(totals.bytes)}, by place: ` + top(totals.byPlace, 10).map(([k, n]) => `${k} ${kb(n)}`).join(", "),
    `  largest allocating functions per call: ` + top(totals.byFunction, functions).map(([k, n]) => `${kb(n)} ${k}`).join("; ")
  ]
}
