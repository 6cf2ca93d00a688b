/**
 * Support for the fault-injection suites (FaultInjection.test.ts, FaultInjectionLeases.test.ts): a
 * throwaway PostgreSQL cluster of each suite's own (scripts/ci-postgres.sh, on its own port and
 * state file) that can be stopped and started, the real server process (src/main.ts bundled, as
 * serverBundle.ts builds it) that can be killed, a mock machine whose calls are identified one by
 * one, the calls and what their clients saw, and the accounts whose ledgers the invariants are
 * read from.
 */
import { ApiKeysLive } from "@model-platform/core/http"
import { AccountStore, ApiKeys } from "@model-platform/core/keys"
import { Catalogue } from "@model-platform/core/catalogue"
import { Ledger, LedgerStore } from "@model-platform/core/ledger"
import { UsageStore } from "@model-platform/core/billing"
import { Effect, Layer, ManagedRuntime } from "effect"
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { Database } from "@model-platform/postgres-stores/database"
import { PgPlatformStores } from "@model-platform/postgres-stores"
import { gatewayCatalogue } from "./gatewaySupport.ts"
import { serverBundle } from "./serverBundle.ts"

const ROOT = Path.join(import.meta.dirname, "..", "..", "..")

/** The newest installed PostgreSQL's bin directory (Debian's layout), or undefined. */
export const postgresBin = (): string | undefined => {
  const base = "/usr/lib/postgresql"
  if (!Fs.existsSync(base)) return undefined
  const found = Fs.readdirSync(base)
    .map((v) => Path.join(base, v, "bin"))
    .filter((bin) => Fs.existsSync(Path.join(bin, "initdb")))
    .sort((a, b) => a.localeCompare(b, undefined, { numeric: true }))
  return found.at(-1)
}

// ---- A cluster of our own ------------------------------------------------------------------

export interface Cluster {
  readonly url: string
  readonly stop: () => void
  readonly start: () => void
  /** Runs SQL with psql; its output (unaligned, tuples only). */
  readonly psql: (sql: string) => string
  /** A psql session held open (to keep a lock); `end` commits and closes it. */
  readonly session: (sql: string) => { readonly end: () => Promise<void> }
  readonly destroy: () => void
}

/**
 * `port` is the first port tried (the next free one is taken): below Linux's ephemeral ports (32768
 * and up), as a client socket of a test running beside this one can take any of those as its own
 * port, and the cluster is stopped and started again here. Each suite starts from its own, so that
 * suites run side by side do not take each other's port while one's cluster is stopped.
 */
export const startCluster = (port = 31300): Cluster => {
  const state = Path.join(Fs.mkdtempSync(Path.join(Os.tmpdir(), "fault-pg-")), "state")
  const env = { ...process.env, CI_POSTGRES_STATE: state, CI_POSTGRES_PORT: String(port) }
  const url = execFileSync(Path.join(ROOT, "scripts", "ci-postgres.sh"), ["start"], { env, encoding: "utf8" }).trim()
  const vars = Object.fromEntries(
    Fs.readFileSync(state, "utf8").trim().split("\n").map((line) => line.split("=", 2) as [string, string])
  )
  const { DIR: dir, PORT: taken, BIN: bin } = vars as { DIR: string; PORT: string; BIN: string }
  const asPg = (command: string, args: ReadonlyArray<string>) =>
    process.getuid?.() === 0
      ? execFileSync("runuser", ["-u", "postgres", "--", command, ...args], { encoding: "utf8" })
      : execFileSync(command, [...args], { encoding: "utf8" })
  const psqlArgs = ["-h", "127.0.0.1", "-p", taken, "-U", "postgres", "-d", "postgres", "-At", "-v", "ON_ERROR_STOP=1"]
  return {
    url,
    stop: () => void asPg(Path.join(bin, "pg_ctl"), ["-D", Path.join(dir, "data"), "-m", "fast", "-w", "stop"]),
    start: () => void asPg(Path.join(bin, "pg_ctl"), ["-D", Path.join(dir, "data"), "-l", Path.join(dir, "server.log"), "-w", "start"]),
    psql: (sql) => execFileSync(Path.join(bin, "psql"), [...psqlArgs, "-c", sql], { encoding: "utf8" }).trim(),
    session: (sql) => {
      const child = spawn(Path.join(bin, "psql"), psqlArgs, { stdio: ["pipe", "ignore", "inherit"] })
      child.stdin.write(`${sql}\n`)
      return {
        end: () =>
          new Promise<void>((resolve) => {
            child.once("exit", () => resolve())
            child.stdin.end("COMMIT;\n")
          })
      }
    },
    destroy: () => {
      execFileSync(Path.join(ROOT, "scripts", "ci-postgres.sh"), ["stop"], { env, stdio: "ignore" })
      Fs.rmSync(Path.dirname(state), { recursive: true, force: true })
    }
  }
}

// ---- The mock machine ----------------------------------------------------------------------

/** What every answer reports: 20 input and 10 output tokens (ref-chat: 2 and 6 credits per Mtok). */
export const USAGE = { prompt_tokens: 20, completion_tokens: 10, total_tokens: 30 }
export const COST = (20n * 2_000_000n + 10n * 6_000_000n + 999_999n) / 1_000_000n

/**
 * Calls name themselves and what the machine does with them in the body's `user` field
 * ("<id>|<mode>"): ok (at once), slow (answers after 60 ms, or streams its chunks 30 ms apart), drop (breaks the stream
 * after its first chunk, before usage), hang (never answers). Calls without a name (the gateway's
 * canaries, health probes) are answered at once.
 */
export interface Mock {
  readonly url: string
  /** Call ids the machine was asked. */
  readonly received: Set<string>
  /** Call ids whose answer the machine completed (usage sent, response ended). */
  readonly completed: Set<string>
  readonly dropped: Set<string>
  readonly close: () => Promise<void>
}

export const startMock = (): Promise<Mock> => {
  const received = new Set<string>()
  const completed = new Set<string>()
  const dropped = new Set<string>()
  const chunk = (extra: Record<string, unknown>) =>
    `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", created: 1, model: "ref-chat", ...extra })}\n\n`
  const server = Http.createServer((req, res) => {
    if (req.method === "GET") {
      res.writeHead(200, { "content-type": "application/json" })
        .end(JSON.stringify({ object: "list", data: ["ref-chat", "free-chat", "ref-embed", "ref-forecast", "ref-image"].map((id) => ({ id, object: "model" })) }))
      return
    }
    const parts: Array<Buffer> = []
    req.on("data", (c: Buffer) => parts.push(c))
    req.on("end", () => {
      const body = JSON.parse(Buffer.concat(parts).toString("utf8")) as { stream?: boolean; user?: string }
      const [id, mode] = (body.user ?? "|ok").split("|") as [string, string]
      if (id !== "") received.add(id)
      if (mode === "hang") return
      if (body.stream !== true) {
        const answer = () =>
          res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({
            id: "c1", object: "chat.completion", created: 1, model: "ref-chat",
            choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }], usage: USAGE
          }), () => id !== "" && completed.add(id))
        if (mode === "slow") setTimeout(answer, 60)
        else answer()
        return
      }
      res.writeHead(200, { "content-type": "text/event-stream" })
      const events = [
        ...["a", "b", "c", "d"].map((c) => chunk({ choices: [{ index: 0, delta: { content: c }, finish_reason: null }] })),
        chunk({ choices: [], usage: USAGE }),
        "data: [DONE]\n\n"
      ]
      let i = 0
      const next = () => {
        if (mode === "drop" && i === 1) {
          if (id !== "") dropped.add(id)
          // Once its first event has reached the kernel, so that the gateway reads it before the break.
          const socket = res.socket
          if (socket === null) return void res.destroy()
          socket.write("", () => socket.destroy())
          return
        }
        if (i === events.length) {
          res.end(() => id !== "" && completed.add(id))
          return
        }
        res.write(events[i++]!)
        if (mode === "slow") setTimeout(next, 30)
        else next()
      }
      next()
    })
  })
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        received,
        completed,
        dropped,
        close: () => new Promise((r) => server.close(() => r()))
      }))
  )
}

// ---- The server process ----------------------------------------------------------------------

export interface Server {
  readonly url: string
  readonly child: ChildProcess
  readonly output: () => string
}

export const writeCatalogue = (dir: string, mockUrl: string): string => {
  const file = Path.join(dir, "catalogue.json")
  Fs.writeFileSync(file, JSON.stringify(gatewayCatalogue([{ id: "m-a", url: `${mockUrl}/v1`, score: 1 }], { rpm: 100_000 })))
  return file
}

export const startServer = (env: Record<string, string>): Promise<Server> =>
  serverBundle().then((entry) => new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [entry], { env: { ...process.env, PORT: "0", ...env }, stdio: ["ignore", "pipe", "pipe"] })
    let output = ""
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${output}`)), 30_000)
    child.stdout!.on("data", (chunk: Buffer) => {
      output += chunk.toString()
      const match = /listening on (http:\/\/\S+)/.exec(output)
      if (match !== null) {
        clearTimeout(timer)
        resolve({ url: match[1]!.replace(/\/$/, ""), child, output: () => output })
      }
    })
    child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()))
    child.once("exit", (code) => reject(new Error(`server exited with ${code}:\n${output}`)))
  }))

export const kill = (server: Server, signal: NodeJS.Signals) =>
  new Promise<void>((resolve) => {
    server.child.removeAllListeners("exit")
    if (server.child.exitCode !== null) return resolve()
    server.child.once("exit", () => resolve())
    server.child.kill(signal)
  })

// ---- Calls, and what their clients saw ------------------------------------------------------

export type Mode = "ok" | "slow" | "drop" | "hang"

export interface Call {
  readonly id: string
  readonly account: CallAccount
  readonly stream: boolean
  readonly mode: Mode
  /** The HTTP status, or "aborted" (the client left), or "error" (no answer at all). */
  status: number | "aborted" | "error"
  code?: string
  /** The client received the whole answer (a JSON completion, or a stream up to [DONE]). */
  complete: boolean
  /** Server-sent events the client received. */
  events: number
}

/** A chat call of `account`, named for the mock machine ("<id>|<mode>"); the client leaves after `abortAfterMs` when given. */
export const call = async (url: string, account: CallAccount, stream: boolean, mode: Mode, abortAfterMs?: number): Promise<Call> => {
  const c: Call = { id: crypto.randomUUID(), account, stream, mode, status: "error", complete: false, events: 0 }
  const controller = new AbortController()
  const timer = abortAfterMs === undefined ? undefined : setTimeout(() => controller.abort(), abortAfterMs)
  try {
    const response = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: account.auth, "content-type": "application/json" },
      body: JSON.stringify({ model: "ref-chat", messages: [{ role: "user", content: "hi" }], stream, user: `${c.id}|${mode}` }),
      signal: controller.signal
    })
    c.status = response.status
    const text = await response.text()
    const code = response.status === 200 ? undefined : (JSON.parse(text) as { error?: { code?: string } }).error?.code
    if (code !== undefined) c.code = code
    c.complete = response.status === 200 && (stream ? text.endsWith("data: [DONE]\n\n") : text.includes("\"choices\""))
    c.events = text.split("\n\n").filter((e) => e.startsWith("data: {\"id\"")).length
  } catch {
    if (controller.signal.aborted) c.status = "aborted"
  } finally {
    clearTimeout(timer)
  }
  return c
}

// ---- Accounts and what their ledgers say ----------------------------------------------------

export const CREDIT = 1_000_000_000n

export const ledgerRuntime = (url: string) =>
  ManagedRuntime.make(
    Layer.mergeAll(Ledger.layer, ApiKeysLive).pipe(
      Layer.provideMerge(PgPlatformStores),
      Layer.provide(Catalogue.layer(gatewayCatalogue([], {}))),
      Layer.provide(Database.layer({ databaseUrl: url, dataDir: Database.MEMORY })),
      Layer.orDie
    )
  )

export interface CallAccount {
  readonly accountId: string
  readonly auth: string
}

export const newAccounts = (n: number) =>
  Effect.forEach(Array.from({ length: n }, (_, i) => i), () =>
    Effect.gen(function*() {
      const id = `acct_${crypto.randomUUID().replaceAll("-", "")}`
      yield* (yield* AccountStore).insert({ id, email: `${id}@fault.test`, created_at: new Date().toISOString() })
      yield* (yield* Ledger).credit(id, { ref: `grant_${id}`, machine_id: null, amount: CREDIT, type: "credit_added" })
      const key = yield* (yield* ApiKeys).issue(id, { name: "fault", permissions: ["inference"], machine_id: null })
      return { accountId: id, auth: `Bearer ${key.secret}` } satisfies CallAccount
    }), { concurrency: 8 })

export interface AccountState {
  readonly available: bigint
  readonly held: bigint
  /** Usage records, and the credits they say were charged. */
  readonly records: number
  readonly recorded: bigint
  /** What the ledger's usage entries charged. */
  readonly charged: bigint
  /** Each usage record's tokens and charge. */
  readonly usage: ReadonlyArray<{ readonly input: bigint; readonly output: bigint; readonly credits: bigint }>
}

export const stateOf = (accountId: string) =>
  Effect.gen(function*() {
    const ledger = yield* LedgerStore
    const scopes = yield* ledger.balances(accountId)
    const entries = yield* ledger.entries(accountId)
    const records = yield* (yield* UsageStore).list({ account_id: accountId, from: "2000-01-01T00:00:00.000Z", to: "2100-01-01T00:00:00.000Z" })
    return {
      available: scopes.reduce((n, s) => n + s.posted - s.held, 0n),
      held: scopes.reduce((n, s) => n + s.held, 0n),
      records: records.length,
      recorded: records.reduce((n, r) => n + r.credits, 0n),
      charged: -entries.filter((e) => e.type === "usage").reduce((n, e) => n + e.amount, 0n),
      usage: records.map((r) => ({ input: r.input_tokens, output: r.output_tokens, credits: r.credits }))
    } satisfies AccountState
  })

/**
 * The accounts' states once settlement is done: read until none holds anything (or `timeoutMs`
 * passed), then once more a moment later, as the records of calls that held nothing land as well.
 */
export const settled = async (
  runtime: ReturnType<typeof ledgerRuntime>,
  accountIds: ReadonlyArray<string>,
  timeoutMs: number
): Promise<ReadonlyArray<AccountState>> => {
  const read = () => runtime.runPromise(Effect.forEach(accountIds, stateOf, { concurrency: 8 }))
  const deadline = Date.now() + timeoutMs
  let states = await read()
  while (states.some((s) => s.held !== 0n) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 200))
    states = await read()
  }
  await new Promise((r) => setTimeout(r, 300))
  return read()
}

// ---- A suite's world ------------------------------------------------------------------------

export interface FaultWorld {
  readonly cluster: Cluster
  readonly mock: Mock
  readonly runtime: ReturnType<typeof ledgerRuntime>
  /** The server first started. */
  readonly server: Server
  /** Starts the server again on the same env (after a test killed it); `stop` kills that one then. */
  readonly restart: () => Promise<Server>
  /** Kills the server, then removes everything else. */
  readonly stop: () => Promise<void>
}

/**
 * What both fault suites run on: a cluster of their own (first port tried: `port`, see
 * startCluster), a mock machine, a data directory, the database migrated, then the server, with
 * `env` added to its environment. A failed start removes what it had started before throwing.
 */
export const startFaultWorld = async (port: number, env: Record<string, string> = {}): Promise<FaultWorld> => {
  let cluster: Cluster | undefined
  let mock: Mock | undefined
  let dir: string | undefined
  let runtime: ReturnType<typeof ledgerRuntime> | undefined
  let server: Server | undefined
  const stop = async () => {
    if (server !== undefined) await kill(server, "SIGKILL")
    await runtime?.dispose()
    await mock?.close()
    cluster?.destroy()
    if (dir !== undefined) Fs.rmSync(dir, { recursive: true, force: true })
  }
  try {
    cluster = startCluster(port)
    mock = await startMock()
    dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "fault-injection-"))
    const serverEnv = { DATABASE_URL: cluster.url, DATA_DIR: dir, CATALOGUE_FILE: writeCatalogue(dir, mock.url), ...env }
    runtime = ledgerRuntime(cluster.url)
    await runtime.runPromise(Effect.void) // migrated before the server starts
    server = await startServer(serverEnv)
    return { cluster, mock, runtime, server, restart: async () => (server = await startServer(serverEnv)), stop }
  } catch (error) {
    await stop()
    throw error
  }
}
