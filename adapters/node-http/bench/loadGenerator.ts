/**
 * The benchmark's load generator (bench/gateway.ts): keep-alive node:http clients sending the same
 * chat completion from a number of workers, each call timed to its end and to its first body byte,
 * and the runs' percentiles.
 */
import * as Http from "node:http"


export interface Target {
  readonly name: string
  readonly port: number
  readonly agent: Http.Agent
  /** Bearer secrets used in turn, one per call; none: no Authorization header. */
  readonly secrets: ReadonlyArray<string>
  next: number
}

/** One call; answers when its first body byte arrived (ms after it was sent). */
const request = (target: Target, body: string, stream: boolean): Promise<number> =>
  new Promise((resolve, reject) => {
    const sent = performance.now()
    let firstByte = NaN
    const headers: Record<string, string> = { "content-type": "application/json" }
    if (target.secrets.length > 0) headers.authorization = `Bearer ${target.secrets[target.next++ % target.secrets.length]}`
    const req = Http.request(
      { host: "127.0.0.1", port: target.port, path: "/v1/chat/completions", method: "POST", agent: target.agent, headers },
      (res) => {
        let text = ""
        res.setEncoding("utf8")
        res.on("data", (c: string) => {
          if (text === "") firstByte = performance.now() - sent
          text += c
        })
        res.on("end", () => {
          if (res.statusCode !== 200) return reject(new Error(`${target.name}: status ${res.statusCode}: ${text.slice(0, 300)}`))
          if (stream ? !text.includes("data: [DONE]") : !text.includes(`"usage"`)) {
            return reject(new Error(`${target.name}: unexpected answer: ${text.slice(0, 300)}`))
          }
          resolve(firstByte)
        })
        res.on("error", reject)
      }
    )
    req.on("error", reject)
    req.end(body)
  })

/** `n` calls from `concurrency` workers; latencies and first bytes in ms, in completion order. */
export const load = async (target: Target, body: string, stream: boolean, concurrency: number, n: number) => {
  const latencies = new Float64Array(n)
  const firstBytes = new Float64Array(n)
  let next = 0
  let done = 0
  const t0 = performance.now()
  await Promise.all(Array.from({ length: Math.min(concurrency, n) }, async () => {
    while (next < n) {
      next++
      const s = performance.now()
      const firstByte = await request(target, body, stream)
      firstBytes[done] = firstByte
      latencies[done++] = performance.now() - s
    }
  }))
  return { latencies, firstBytes, elapsedMs: performance.now() - t0 }
}

const percentile = (sorted: Float64Array, p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!
export const ms = (x: number) => x.toFixed(2)

export interface SideResult {
  readonly latencies: Float64Array
  readonly firstBytes: Float64Array
  readonly elapsedMs: number
  /** For the platform: the time until every settlement and usage record of the run was written. */
  readonly meteredMs: number
}

/** The sides' values of `pick` in one sorted array. */
const sorted = (sides: ReadonlyArray<SideResult>, pick: (side: SideResult) => Float64Array) => {
  const all = new Float64Array(sides.reduce((s, x) => s + pick(x).length, 0))
  let o = 0
  for (const s of sides) {
    all.set(pick(s), o)
    o += pick(s).length
  }
  return all.sort()
}

export type Merged = ReturnType<typeof merge>

export const merge = (sides: ReadonlyArray<SideResult>) => {
  const all = sorted(sides, (s) => s.latencies)
  const firstBytes = sorted(sides, (s) => s.firstBytes)
  const elapsed = sides.reduce((s, x) => s + x.elapsedMs, 0)
  const metered = sides.reduce((s, x) => s + x.meteredMs, 0)
  return {
    calls: all.length,
    p50: percentile(all, 0.5),
    p99: percentile(all, 0.99),
    firstByteP50: percentile(firstBytes, 0.5),
    firstByteP99: percentile(firstBytes, 0.99),
    perSecond: all.length / (elapsed / 1000),
    meteredPerSecond: all.length / (metered / 1000)
  }
}
