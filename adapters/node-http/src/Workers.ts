/**
 * Several server processes on one PostgreSQL: `./platform start --workers N` or WORKERS=N
 * (docs/operations.md "Several processes"). Each worker serves the whole platform (main.ts) on the
 * same port; the primary process serves nothing itself. It
 *  1. makes what the workers must share and would otherwise each make for themselves: the key the
 *     platform signs its service assertions with and the agent approvals client's secret, when
 *     PLATFORM_SIGNING_KEY and PLATFORM_CLIENT_SECRET are not set (a worker asks for them over IPC:
 *     they are in no process's environment block);
 *  2. holds the simulated network, which the workers reach over IPC (WorkerNetwork.ts);
 *  3. starts one worker, which runs the first start (migrations, the owner and its key, printed
 *     once) and listens, then the others on the port it took (SO_REUSEPORT: the kernel spreads
 *     connections over the workers);
 *  4. replaces a worker that dies (after a pause when it died young, so that a crash loop does not
 *     spin), forwards SIGHUP (reload the catalogue) to every worker, and a reload the operator API
 *     made in one worker to the others;
 *  5. at SIGTERM or SIGINT tells every worker to drain (Shutdown.ts) and exits once all have, 0 when
 *     every one exited 0. A second signal stops the workers at once and exits 1.
 *
 * With the embedded database (no DATABASE_URL) there is one process whatever is asked (main.ts).
 */
import { Network, SimulatedNetwork } from "@model-platform/core/agents"
import { Effect, ManagedRuntime } from "effect"
import cluster, { type Worker } from "node:cluster"
import { generateKeyPairSync, randomBytes } from "node:crypto"
import { stopSignalReceived } from "./Shutdown.ts"
import { answerNetworkCall, type NetworkAnswer } from "./WorkerNetwork.ts"

export const MAX_WORKERS = 256

/** `--workers N` (or `--workers=N`), else WORKERS; 1 when neither is given. */
export const requestedWorkers = (
  argv: ReadonlyArray<string>,
  env: Readonly<Record<string, string | undefined>>
): { readonly workers: number } | { readonly problem: string } => {
  const at = argv.findIndex((a) => a === "--workers" || a.startsWith("--workers="))
  const source = at === -1 ? "WORKERS" : "--workers"
  const raw = at === -1 ? env.WORKERS : argv[at] === "--workers" ? argv[at + 1] : argv[at]!.slice("--workers=".length)
  if (at === -1 && (raw === undefined || raw.trim() === "")) return { workers: 1 }
  const text = (raw ?? "").trim()
  const workers = Number(text)
  return /^\d+$/.test(text) && workers >= 1 && workers <= MAX_WORKERS
    ? { workers }
    : { problem: `${source} must be a whole number of server processes from 1 to ${MAX_WORKERS}; it is ${JSON.stringify(text.slice(0, 40))}.` }
}

/** What the primary hands each worker. */
interface Welcome {
  readonly type: "welcome"
  /** The first worker prints the start's announcements (the owner key on a first start); the others do not. */
  readonly announce: boolean
  readonly workers: number
  readonly signingKey: string | undefined
  readonly clientSecret: string | undefined
}

type FromWorker =
  | { readonly type: "hello" }
  | { readonly type: "listening"; readonly port: number; readonly address: string }
  | { readonly type: "reloaded" }

type ToWorker = Welcome | { readonly type: "stop"; readonly signal: NodeJS.Signals }

const unset = (value: string | undefined) => value === undefined || value.trim() === ""

/** To a worker still connected (one exiting has closed its channel). */
const send = (worker: Worker, message: ToWorker | NetworkAnswer) => {
  if (worker.isConnected()) worker.send(message)
}

// ---- the worker's side --------------------------------------------------------------------------

export interface WorkerRole {
  readonly announce: boolean
  readonly workers: number
}

/**
 * In a worker, before the server is built: asks the primary for what it shares and puts the
 * secrets where the configuration reads them; then a stop the primary asks for drains this process
 * as its own signal would (unless the signal reached it already: Ctrl-C signals every process of
 * the terminal's group).
 */
export const joinPrimary = (): Promise<WorkerRole> =>
  new Promise((resolve) => {
    process.on("message", (message: ToWorker) => {
      if (message?.type === "welcome") {
        if (message.signingKey !== undefined) process.env.PLATFORM_SIGNING_KEY = message.signingKey
        if (message.clientSecret !== undefined) process.env.PLATFORM_CLIENT_SECRET = message.clientSecret
        resolve({ announce: message.announce, workers: message.workers })
      } else if (message?.type === "stop") {
        // Ctrl-C: the terminal's own SIGINT reaches this process too; give it the moment to.
        setTimeout(() => {
          if (stopSignalReceived() === undefined) process.kill(process.pid, message.signal)
        }, message.signal === "SIGINT" ? 200 : 0)
      }
    })
    tell({ type: "hello" })
  })

const tell = (message: FromWorker) => {
  if (process.send !== undefined && process.connected) process.send(message)
}

/** In a worker: it listens (the primary starts the others on its port). */
export const listening = (port: number, address: string) => Effect.sync(() => tell({ type: "listening", port, address }))

/** In a worker: the operator API reloaded the catalogue here; the primary has the others reload. */
export const reloaded = Effect.sync(() => tell({ type: "reloaded" }))

// ---- the primary --------------------------------------------------------------------------------

/** A worker that dies within this long of its start is replaced after a pause. */
const YOUNG_MS = 10_000

/**
 * Runs the primary (see the module's comment) until its workers are gone; `say` writes a line
 * as the server's logs are written (LOG_FORMAT).
 */
export const runPrimary = async (workers: number, say: (text: string) => void): Promise<void> => {
  // Structured clone over IPC: the network's answers carry bigints (an agent's caps in wei).
  cluster.setupPrimary({ serialization: "advanced" })
  const network = ManagedRuntime.make(SimulatedNetwork.fromConfig)
  const simulated = await network.runPromise(Effect.service(Network))
  const signingKey = unset(process.env.PLATFORM_SIGNING_KEY)
    ? JSON.stringify(generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ format: "jwk" }))
    : undefined
  const clientSecret = unset(process.env.PLATFORM_CLIENT_SECRET) ? randomBytes(32).toString("base64url") : undefined

  const started = new Map<Worker, number>()
  const serving = new Set<Worker>()
  let port: number | undefined
  let announced = false
  let stopping: NodeJS.Signals | undefined
  let failed = false
  let pause = 0

  /** `replaces`: the pid of the worker this one takes over from. */
  const fork = (announce: boolean, replaces?: number) => {
    const worker = cluster.fork(port === undefined ? {} : { PORT: String(port) })
    started.set(worker, Date.now())
    worker.on("message", (message: FromWorker) => {
      if (answerNetworkCall(simulated, (answer) => send(worker, answer), message)) return
      switch (message?.type) {
        case "hello":
          send(worker, { type: "welcome", announce, workers, signingKey, clientSecret })
          return
        case "listening":
          serving.add(worker)
          pause = 0
          if (port === undefined) {
            port = message.port
            for (let i = 1; i < workers; i++) fork(false)
          }
          if (replaces !== undefined) say(`worker ${worker.process.pid} listens in place of worker ${replaces}`)
          if (!announced && serving.size === workers) {
            announced = true
            say(
              `${workers} worker processes (pids ${[...serving].map((w) => w.process.pid).join(", ")}) serve ${message.address} ` +
                `on one PostgreSQL; the primary (pid ${process.pid}) replaces one that dies and drains them all at SIGTERM`
            )
          }
          return
        case "reloaded":
          // The operator API reloaded one worker's catalogue: the others read the file too.
          for (const other of serving) if (other !== worker) other.process.kill("SIGHUP")
          return
      }
    })
  }

  const finished = new Promise<void>((resolve) => {
    cluster.on("exit", (worker, code, signal) => {
      const wasServing = serving.delete(worker)
      const age = Date.now() - (started.get(worker) ?? 0)
      started.delete(worker)
      if (stopping !== undefined && code !== 0) failed = true
      if (stopping === undefined && port === undefined) {
        // The first worker did not start (it said why): there is nothing to serve.
        say(`the first worker exited (${signal ?? `code ${code}`}) before it listened; stopping`)
        failed = true
        stopping = "SIGTERM"
        for (const other of started.keys()) send(other, { type: "stop", signal: "SIGTERM" })
      }
      if (stopping !== undefined) {
        if (started.size === 0) resolve()
        return
      }
      // Died young (or never listened): wait before the next, longer each time, up to 30 s.
      pause = !wasServing || age < YOUNG_MS ? Math.min(30_000, Math.max(1_000, pause * 2)) : 0
      say(`worker ${worker.process.pid} exited (${signal ?? `code ${code}`}); starting another${pause > 0 ? ` in ${pause / 1000} s` : ""}`)
      setTimeout(() => {
        if (stopping === undefined) fork(false, worker.process.pid)
      }, pause)
    })
  })

  const stop = (signal: NodeJS.Signals) => () => {
    if (stopping !== undefined) {
      say(`${signal} received while draining: stopping the workers now`)
      // Each worker is draining: a second signal makes it exit at once (Shutdown.ts).
      for (const worker of started.keys()) worker.process.kill(signal)
      process.exit(1)
    }
    stopping = signal
    say(`${signal}: draining ${started.size} workers`)
    for (const worker of started.keys()) send(worker, { type: "stop", signal })
    if (started.size === 0) process.exit(0)
  }
  process.on("SIGTERM", stop("SIGTERM"))
  process.on("SIGINT", stop("SIGINT"))
  process.on("SIGHUP", () => {
    for (const worker of serving) worker.process.kill("SIGHUP")
  })

  fork(true)
  await finished
  say(`every worker has exited${failed ? " (not all of them cleanly)" : ""}; the primary exits`)
  await network.dispose()
  process.exitCode = failed ? 1 : 0
}
