/**
 * The server as an operator runs it (src/main.ts bundled, as `./platform start` runs it:
 * serverBundle.ts) in a child process: its output line by line, its address once it listens, and
 * its exit.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { serverBundle } from "./serverBundle.ts"

export interface MainProcess {
  readonly child: ChildProcess
  readonly url: string
  /** Everything it wrote to stdout and stderr so far. */
  readonly output: () => string
  /** Its JSON log lines so far (LOG_FORMAT=json), parsed. */
  readonly jsonLines: () => ReadonlyArray<Record<string, unknown>>
  /** Resolves with its exit code once it exited (by itself or killed). */
  readonly exited: Promise<number | null>
  /** SIGKILL, if it still runs. */
  readonly kill: () => void
}

/**
 * Starts main.ts with PORT=0, `env` and `args`; resolves once it printed its address (and `until`,
 * when given: with workers, the primary's line once every one listens).
 */
export const startMain = (
  env: Record<string, string>,
  timeoutMs = 60_000,
  options: { readonly args?: ReadonlyArray<string>; readonly until?: RegExp } = {}
): Promise<MainProcess> =>
  serverBundle().then((entry) => new Promise((resolve, reject) => {
    const { DATABASE_URL: _db, PUBLIC_URL: _url, LOG_FORMAT: _format, LOG_LEVEL: _level, ...inherited } = process.env
    const child = spawn(process.execPath, [entry, ...(options.args ?? [])], { env: { ...inherited, PORT: "0", ...env }, stdio: ["ignore", "pipe", "pipe"] })
    let output = ""
    let code: number | null | undefined
    const exited = new Promise<number | null>((done) =>
      child.on("exit", (c) => {
        code = c
        done(c)
      })
    )
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      reject(new Error(`server did not start:\n${output}`))
    }, timeoutMs)
    const jsonLines = () =>
      output.split("\n").flatMap((line) => {
        if (!line.startsWith("{")) return []
        try {
          return [JSON.parse(line) as Record<string, unknown>]
        } catch {
          return []
        }
      })
    let started = false
    const onData = (chunk: Buffer) => {
      output += chunk.toString()
      const match = /listening on (http:\/\/[^\s"]+)/.exec(output)
      // The account service's line comes next, then the owner key on a first start (a moment later).
      if (match === null || started || !output.includes("Account service at")) return
      if (options.until !== undefined && !options.until.test(output)) return
      started = true
      clearTimeout(timer)
      setTimeout(() => resolve({
        child,
        url: match[1]!.replace(/\/$/, ""),
        output: () => output,
        jsonLines,
        exited,
        kill: () => {
          if (code === undefined) child.kill("SIGKILL")
        }
      }), 200)
    }
    child.stdout!.on("data", onData)
    child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()))
    void exited.then((c) => {
      if (!started) {
        clearTimeout(timer)
        reject(new Error(`server exited with ${c}:\n${output}`))
      }
    })
  }))
