/**
 * A local EVM chain for tests and for trying the "evm" rail by hand: anvil, whose binary comes in
 * the npm package @foundry-rs/anvil-<platform>-<arch> (an optional dependency of
 * @foundry-rs/anvil, a dev dependency of this package: nothing is downloaded at run time).
 *
 * `startAnvil` runs it on a free port, mining a block per transaction and otherwise only when told
 * (anvil_mine), so a test decides every confirmation. No anvil outlives its starter: `stop()` ends
 * it, an exit hook kills it when the process exits without calling `stop()`, and a small watchdog
 * shell kills it when the process dies without running any hook (SIGKILL of a vitest worker).
 */
import { type ChildProcess, spawn } from "node:child_process"
import { createRequire } from "node:module"
import * as net from "node:net"
import * as path from "node:path"

export interface Anvil {
  /** http://127.0.0.1:<port> */
  readonly rpcUrl: string
  readonly stop: () => Promise<void>
}

const PLATFORM_PACKAGES: Record<string, string> = {
  "linux-x64": "anvil-linux-amd64",
  "linux-arm64": "anvil-linux-arm64",
  "darwin-x64": "anvil-darwin-amd64",
  "darwin-arm64": "anvil-darwin-arm64",
  "win32-x64": "anvil-win32-amd64"
}

/** The anvil binary of this machine's platform, inside its npm package. */
export const anvilBinary = (): string => {
  const name = PLATFORM_PACKAGES[`${process.platform}-${process.arch}`]
  if (name === undefined) throw new Error(`anvil has no npm package for ${process.platform}-${process.arch}`)
  const wrapper = createRequire(import.meta.url).resolve("@foundry-rs/anvil/package.json")
  const binary = createRequire(wrapper).resolve(`@foundry-rs/${name}/package.json`)
  return path.join(path.dirname(binary), "bin", process.platform === "win32" ? "anvil.exe" : "anvil")
}

const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = net.createServer()
    server.unref()
    server.on("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })

const answers = async (rpcUrl: string): Promise<boolean> => {
  try {
    const response = await fetch(rpcUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
      signal: AbortSignal.timeout(1_000)
    })
    return response.ok
  } catch {
    return false
  }
}

const exited = (child: ChildProcess) => child.exitCode !== null || child.signalCode !== null

const waitForExit = (child: ChildProcess, ms: number): Promise<boolean> =>
  exited(child)
    ? Promise.resolve(true)
    : new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), ms)
      child.once("exit", () => {
        clearTimeout(timer)
        resolve(true)
      })
    })

export interface AnvilOptions {
  readonly timeoutMs?: number
  /** A fixed port (the by-hand script's); a free one when absent. */
  readonly port?: number
  /** The chain id (anvil's default: 31337). */
  readonly chainId?: number
}

/** Whether nothing listens on the port (else an anvil already there would answer for ours). */
const portFree = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const server = net.createServer()
    server.unref()
    server.once("error", () => resolve(false))
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)))
  })

const startOnce = async (options: AnvilOptions): Promise<Anvil> => {
  const port = options.port ?? await freePort()
  if (options.port !== undefined && !(await portFree(port))) throw new Error(`port ${port} is in use`)
  const rpcUrl = `http://127.0.0.1:${port}`
  const child = spawn(
    anvilBinary(),
    ["--port", String(port), "--host", "127.0.0.1", "--silent", "--chain-id", String(options.chainId ?? 31337)],
    { stdio: ["ignore", "ignore", "pipe"] }
  )
  let stderr = ""
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4_000)
  })
  const spawnError = new Promise<Error>((resolve) => child.once("error", resolve))
  const watchdog = spawn(
    "sh",
    ["-c", `while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done; kill -9 ${child.pid} 2>/dev/null`],
    { stdio: "ignore", detached: true }
  )
  watchdog.unref()
  const killNow = () => {
    if (!exited(child)) child.kill("SIGKILL")
  }
  process.once("exit", killNow)
  const stop = async () => {
    process.removeListener("exit", killNow)
    if (!exited(child)) {
      child.kill("SIGTERM")
      if (!(await waitForExit(child, 5_000))) {
        child.kill("SIGKILL")
        await waitForExit(child, 5_000)
      }
    }
    if (watchdog.exitCode === null && watchdog.signalCode === null) watchdog.kill("SIGKILL")
  }
  const deadline = performance.now() + (options.timeoutMs ?? 30_000)
  for (;;) {
    const failed = await Promise.race([spawnError, new Promise<undefined>((r) => setTimeout(r, 50, undefined))])
    if (failed !== undefined) {
      await stop()
      throw new Error(`cannot start anvil: ${failed.message}`)
    }
    if (exited(child)) {
      await stop()
      throw new Error(`anvil exited with ${child.exitCode ?? child.signalCode}: ${stderr}`)
    }
    if (await answers(rpcUrl)) return { rpcUrl, stop }
    if (performance.now() > deadline) {
      await stop()
      throw new Error(`anvil did not answer on ${rpcUrl}: ${stderr}`)
    }
  }
}

/** Starts anvil; on a free port, tried again once on another if the first was taken meanwhile. */
export const startAnvil = async (options: AnvilOptions = {}): Promise<Anvil> => {
  try {
    return await startOnce(options)
  } catch (error) {
    if (options.port !== undefined) throw error
    return await startOnce(options)
  }
}
