/**
 * The server's memory at rest, against the goals of docs/performance.md (idle RSS <= 120 MB on
 * PostgreSQL, <= 250 MB on the embedded database): a benchmark that prints numbers, not a test.
 *
 *   ./platform node adapters/node-http/bench/idle-memory.ts [--settle 45]
 *
 * Runs the server as `./platform start` does (the bundle, scripts/bundle.ts, reference machines
 * off) three times: on PostgreSQL (a fresh database on the server named by DATABASE_URL or
 * TEST_DATABASE_URL, dropped afterwards; skipped without one), on the embedded database at its
 * first start (a fresh DATA_DIR: initdb, migrations, the owner made) and at a restart on that
 * directory. Each waits until GET /models answers, then reads the process's VmRSS every second
 * for --settle seconds without a request. It prints the RSS 5 s after the first answer, the
 * highest seen and the RSS at the end ("at rest": V8 shrinks its heap when the process has been
 * idle for a while, within about 20-30 s here).
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { type ChildProcess, spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { bundleServer, SERVER_BUNDLE } from "../scripts/bundle.ts"
import { num } from "./benchProcesses.ts"

const settleSeconds = Math.max(6, Math.round(num("settle", 45)))

const rssMb = (pid: number): number | undefined => {
  try {
    const line = Fs.readFileSync(`/proc/${pid}/status`, "utf8").split("\n").find((l) => l.startsWith("VmRSS:"))
    return line === undefined ? undefined : Number(line.replace(/\D+/g, "")) / 1024
  } catch {
    return undefined
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Starts the bundled server with `env`; resolves with its process and URL once it listens. */
const startServer = (env: Record<string, string>): Promise<{ child: ChildProcess; url: string }> =>
  new Promise((resolve, reject) => {
    // Without a DATABASE_URL of its own the server runs on the embedded database.
    const { DATABASE_URL: _, ...inherited } = process.env
    const child = spawn(process.execPath, [SERVER_BUNDLE], {
      env: { ...inherited, HOST: "127.0.0.1", PORT: "0", ...env },
      // The first start prints the owner's key: read for the listening line, never printed here.
      stdio: ["ignore", "pipe", "pipe"]
    })
    let out = ""
    let err = ""
    child.stdout!.on("data", (chunk: Buffer) => {
      out += chunk.toString()
      const found = /listening on (http:\/\/\S+?)[\s)]/.exec(out)
      if (found !== null) resolve({ child, url: found[1]! })
    })
    child.stderr!.on("data", (chunk: Buffer) => void (err += chunk.toString()))
    child.on("exit", (code) => reject(new Error(`the server exited (${code}) before it listened:\n${err.slice(-2000)}`)))
  })

const stopServer = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null) return resolve()
    child.once("exit", () => resolve())
    child.kill("SIGTERM")
    setTimeout(() => child.kill("SIGKILL"), 15_000).unref()
  })

const measure = async (label: string, goalMb: number, env: Record<string, string>): Promise<void> => {
  const { child, url } = await startServer(env)
  try {
    const answered = await fetch(`${url}/models`)
    if (answered.status !== 200) throw new Error(`${label}: GET /models answered ${answered.status}`)
    await answered.arrayBuffer()
    const samples: Array<number> = []
    for (let s = 1; s <= settleSeconds; s++) {
      await sleep(1000)
      const rss = rssMb(child.pid!)
      if (rss === undefined) throw new Error(`${label}: the server's VmRSS could not be read (not Linux?)`)
      samples.push(rss)
    }
    const atRest = samples[samples.length - 1]!
    console.log(
      `  ${label.padEnd(30)} 5 s: ${samples[4]!.toFixed(0)} MB   highest: ${Math.max(...samples).toFixed(0)} MB   ` +
        `at rest (${settleSeconds} s): ${atRest.toFixed(0)} MB   goal <= ${goalMb} MB: ${atRest <= goalMb ? "met" : "MISSED"}`
    )
  } finally {
    await stopServer(child)
  }
}

const withDatabaseServer = async (serverUrl: string, run: (url: string) => Promise<void>) => {
  const admin = (statement: string) =>
    Effect.runPromise(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql.unsafe(statement)
    }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(serverUrl) })), Effect.scoped))
  const name = `idle_memory_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 6)}`
  await admin(`CREATE DATABASE ${name}`)
  try {
    const url = new URL(serverUrl)
    url.pathname = `/${name}`
    await run(url.toString())
  } finally {
    await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
  }
}

const main = async () => {
  console.log(`idle memory: Node ${process.version}, ${Os.cpus().length} CPUs, load average ${Os.loadavg().map((l) => l.toFixed(2)).join(" ")}`)
  await bundleServer()
  const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "idle-memory-"))
  try {
    const serverUrl = process.env.DATABASE_URL || process.env.TEST_DATABASE_URL || undefined
    if (serverUrl === undefined) {
      console.log("  PostgreSQL: skipped (set DATABASE_URL or TEST_DATABASE_URL to a server where a database may be made)")
    } else {
      await withDatabaseServer(serverUrl, (url) =>
        measure("PostgreSQL", 120, { DATABASE_URL: url, DATA_DIR: Path.join(dataDir, "postgres") }))
    }
    const embedded = { DATA_DIR: Path.join(dataDir, "embedded") }
    await measure("embedded, first start", 250, embedded)
    await measure("embedded, restart", 250, embedded)
  } finally {
    Fs.rmSync(dataDir, { recursive: true, force: true })
  }
}

await main()
