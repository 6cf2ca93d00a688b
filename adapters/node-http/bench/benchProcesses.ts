/**
 * The gateway benchmark's processes and plumbing (bench/gateway.ts): its flags, the mock machine,
 * the floor (a bare node:http pass-through), the IPC between the load generator and its children,
 * and how CPU and load are read.
 */
import { type ChildProcess, fork } from "node:child_process"
import * as Fs from "node:fs"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as Os from "node:os"
import { BENCH_COMPLETION, BENCH_MODEL, BENCH_STREAM } from "./fixtures.ts"

// ---- Flags (--name value, --name=value, or BENCH_<NAME>) ------------------------------------

export const argv = process.argv.slice(2)
export const flag = (name: string): string | undefined => {
  const i = argv.indexOf(`--${name}`)
  if (i !== -1) return argv[i + 1]
  const inline = argv.find((a) => a.startsWith(`--${name}=`))
  if (inline !== undefined) return inline.slice(name.length + 3)
  return process.env[`BENCH_${name.toUpperCase().replaceAll("-", "_")}`]
}
export const has = (name: string) => argv.includes(`--${name}`) || process.env[`BENCH_${name.toUpperCase().replaceAll("-", "_")}`] === "1"
export const num = (name: string, fallback: number) => {
  const value = flag(name)
  if (value === undefined) return fallback
  const n = Number(value)
  if (!Number.isFinite(n) || n < 0) throw new Error(`--${name} must be a non-negative number, got ${value}`)
  return n
}

// ---- The mock machine and the floor -----------------------------------------------------------

const modelList = JSON.stringify({ object: "list", data: [{ id: BENCH_MODEL, object: "model", created: 1_700_000_000, owned_by: "bench" }] })

/**
 * The mock machine on a free port of 127.0.0.1: a fixed completion after `delayMs`; or its first
 * event after `delayMs` and the others `delayMs` later (so a client's first byte is the first event's).
 */
export const startMock = (delayMs: number): Promise<{ server: Http.Server; port: number; served: () => number }> => {
  let served = 0
  const server = Http.createServer((req, res) => {
    if (req.method === "GET" && (req.url === "/v1/models" || req.url === "/models")) {
      res.writeHead(200, { "content-type": "application/json" }).end(modelList)
      return
    }
    if (req.method !== "POST" || req.url !== "/v1/chat/completions") {
      res.writeHead(404, { "content-type": "application/json" }).end(`{"error":{"message":"not found","type":"invalid_request_error","code":"not_found"}}`)
      return
    }
    const parts: Array<Buffer> = []
    req.on("data", (c: Buffer) => parts.push(c))
    req.on("end", () => {
      let stream = false
      try {
        stream = (JSON.parse(Buffer.concat(parts).toString("utf8")) as { stream?: unknown }).stream === true
      } catch {
        res.writeHead(400, { "content-type": "application/json" }).end(`{"error":{"message":"bad json","type":"invalid_request_error","code":"invalid_json"}}`)
        return
      }
      served++
      setTimeout(() => {
        if (!stream) {
          res.writeHead(200, { "content-type": "application/json" }).end(BENCH_COMPLETION)
          return
        }
        res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
        res.write(BENCH_STREAM[0])
        setTimeout(() => {
          for (const event of BENCH_STREAM.slice(1)) res.write(event)
          res.end()
        }, delayMs)
      }, delayMs)
    })
  })
  server.keepAliveTimeout = 60_000
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => resolve({ server, port: (server.address() as AddressInfo).port, served: () => served }))
  )
}

/**
 * The floor: a plain node:http server forwarding every request to `target` with node:http (keep-
 * alive), no Effect, no work. What one extra hop costs on this machine.
 */
export const startFloor = async (target: URL): Promise<{ port: number }> => {
  const agent = new Http.Agent({ keepAlive: true, maxSockets: 256 })
  const server = Http.createServer((req, res) => {
    const forward = Http.request(
      { host: target.hostname, port: target.port, path: req.url, method: req.method, agent, headers: { "content-type": "application/json" } },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, { "content-type": answer.headers["content-type"] ?? "application/json" })
        answer.pipe(res)
      }
    )
    forward.on("error", () => res.writeHead(502).end())
    req.pipe(forward)
  })
  server.keepAliveTimeout = 60_000
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return { port: (server.address() as AddressInfo).port }
}

// ---- IPC between the load generator and its children ------------------------------------------

interface Request {
  readonly id: number
  readonly op: string
  readonly arg?: unknown
}
interface Reply {
  readonly id: number
  readonly ok: boolean
  readonly value?: unknown
  readonly error?: string
}

/** Answers requests from the parent with `handle`; the first message sent is `ready`. */
export const serveParent = (handle: (op: string, arg: unknown) => Promise<unknown>) => {
  process.on("message", (message: Request) => {
    handle(message.op, message.arg).then(
      (value) => process.send!({ id: message.id, ok: true, value } satisfies Reply),
      (error: unknown) => process.send!({ id: message.id, ok: false, error: String(error instanceof Error ? error.stack : error) } satisfies Reply)
    )
  })
}

export interface Child {
  readonly process: ChildProcess
  readonly ready: unknown
  readonly ask: <A>(op: string, arg?: unknown) => Promise<A>
}

/** Forks `entry` with `--role=<role>` and the parent's flags; resolves once it sent `ready`. */
export const startChild = (entry: string, role: string, env: Record<string, string>, execArgv: ReadonlyArray<string> = []): Promise<Child> =>
  new Promise((resolve, reject) => {
    const child = fork(entry, [`--role=${role}`, ...argv], {
      env: { ...process.env, ...env },
      execArgv: [...process.execArgv, ...execArgv],
      stdio: ["ignore", "inherit", "inherit", "ipc"]
    })
    let next = 1
    const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>()
    const ask = <A>(op: string, arg?: unknown) =>
      new Promise<A>((res, rej) => {
        const id = next++
        pending.set(id, { resolve: res as (v: unknown) => void, reject: rej })
        child.send({ id, op, arg } satisfies Request)
      })
    child.once("exit", (code) => {
      reject(new Error(`the ${role} process exited with ${code} before it was ready`))
      for (const p of pending.values()) p.reject(new Error(`the ${role} process exited with ${code}`))
    })
    child.on("message", (message: Reply | { readonly ready: unknown }) => {
      if ("ready" in message) {
        resolve({ process: child, ready: message.ready, ask })
        return
      }
      const p = pending.get(message.id)
      pending.delete(message.id)
      if (message.ok) p?.resolve(message.value)
      else p?.reject(new Error(`${role}: ${message.error}`))
    })
  })

// ---- CPU and load -------------------------------------------------------------------------------

/** This process's CPU in µs (user + system). */
export const cpuMicros = () => {
  const c = process.cpuUsage()
  return c.user + c.system
}

/** Busy and total jiffies of the whole machine (Linux), for how loaded it was during a run. */
export const machineJiffies = (): { busy: number; total: number } | undefined => {
  try {
    const line = Fs.readFileSync("/proc/stat", "utf8").split("\n")[0]!
    const v = line.trim().split(/\s+/).slice(1).map(Number)
    const idle = (v[3] ?? 0) + (v[4] ?? 0)
    const total = v.reduce((a, b) => a + b, 0)
    return { busy: total - idle, total }
  } catch {
    return undefined
  }
}

/** CPU of some processes in ms by pid (Linux /proc, utime + stime; 10 ms resolution). */
export const processesCpuMs = (pids: ReadonlyArray<number>): Map<number, number> => {
  const tick = 1000 / 100
  const out = new Map<number, number>()
  for (const pid of pids) {
    try {
      const stat = Fs.readFileSync(`/proc/${pid}/stat`, "utf8")
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
      out.set(pid, (Number(fields[11]) + Number(fields[12])) * tick)
    } catch {
      // gone, or not on this machine
    }
  }
  return out
}

export const loadavg = () => Os.loadavg().map((l) => l.toFixed(2)).join(" ")
