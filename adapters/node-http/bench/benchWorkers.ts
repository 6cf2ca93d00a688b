/**
 * `--workers N` of the gateway benchmark (bench/gateway.ts): the server role as a node:cluster
 * primary over N worker processes, each the platform's Node server (benchServer.ts) on one port
 * (SO_REUSEPORT, as `./platform start --workers N` serves: src/Workers.ts) over the one database.
 * The primary serves no call: it answers the load generator's questions, the first worker's
 * (a scenario's accounts, the metering check, the backends, spans) or all of theirs summed (CPU,
 * idleness), and stops them all.
 */
import cluster, { type Worker } from "node:cluster"
import { serveParent } from "./benchProcesses.ts"

interface Reply {
  readonly id: number
  readonly ok: boolean
  readonly value?: unknown
  readonly error?: string
}

interface BenchWorker {
  readonly worker: Worker
  readonly ready: { readonly url: string; readonly database: string }
  readonly ask: <A>(op: string, arg?: unknown) => Promise<A>
}

/** Forks a worker (`env`: its port once the first listens) and resolves once it is ready. */
const startWorker = (env: Record<string, string>): Promise<BenchWorker> =>
  new Promise((resolve, reject) => {
    const worker = cluster.fork(env)
    let next = 1
    const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>()
    const ask = <A>(op: string, arg?: unknown) =>
      new Promise<A>((res, rej) => {
        const id = next++
        pending.set(id, { resolve: res as (v: unknown) => void, reject: rej })
        worker.send({ id, op, arg })
      })
    worker.once("exit", (code) => {
      reject(new Error(`a server worker exited with ${code} before it was ready`))
      for (const p of pending.values()) p.reject(new Error(`a server worker exited with ${code}`))
    })
    worker.on("message", (message: Reply | { readonly ready: BenchWorker["ready"] }) => {
      if ("ready" in message) return resolve({ worker, ready: message.ready, ask })
      const p = pending.get(message.id)
      pending.delete(message.id)
      if (message.ok) p?.resolve(message.value)
      else p?.reject(new Error(`server worker: ${message.error}`))
    })
  })

export const runServerWorkers = async (workers: number) => {
  const first = await startWorker({ BENCH_PORT: "0" })
  const port = new URL(first.ready.url).port
  const rest = await Promise.all(Array.from({ length: workers - 1 }, () => startWorker({ BENCH_PORT: port })))
  const all = [first, ...rest]
  serveParent(async (op, arg) => {
    switch (op) {
      case "idle":
        return Math.max(...await Promise.all(all.map((w) => w.ask<number>("idle"))))
      case "cpu": {
        const each = await Promise.all(all.map((w) => w.ask<{ cpu: number; system: number }>("cpu")))
        return { cpu: each.reduce((n, c) => n + c.cpu, 0), system: each.reduce((n, c) => n + c.system, 0) }
      }
      case "stop":
        await Promise.all(all.map((w) => w.ask("stop").catch(() => undefined)))
        setImmediate(() => process.exit(0))
        return null
      default:
        // The stores are shared: the first worker sets up, checks and counts for all.
        return await first.ask(op, arg)
    }
  })
  process.send!({ ready: { ...first.ready, database: `${first.ready.database}; ${workers} server worker processes` } })
}
