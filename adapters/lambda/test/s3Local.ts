/**
 * A local S3 for tests: `s3rver` (npm) in a child Node process on a free port of 127.0.0.1, with
 * its data in a fresh temporary directory.
 *
 * Why a child: s3rver encrypts ListObjectsV2 continuation tokens with DES, which Node 22's OpenSSL
 * 3 offers only with the legacy provider, and that provider can only be enabled when a process
 * starts (`NODE_OPTIONS=--openssl-legacy-provider`); without it every truncated listing answers
 * 500. The child also exits by itself when its stdin closes, so a crashed test run leaves no
 * s3rver behind.
 *
 * Clients must use path-style addressing and compute checksums only when required (else streamed
 * bodies are stored with aws-chunked framing); s3rver accepts the access key S3RVER and checks
 * neither signatures nor checksums.
 */
import { CreateBucketCommand, S3Client } from "@aws-sdk/client-s3"
import { Effect, type Scope } from "effect"
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import { createRequire } from "node:module"
import * as Os from "node:os"
import * as Path from "node:path"

export interface S3Local {
  /** `http://127.0.0.1:<port>` */
  readonly endpoint: string
  readonly port: number
  /** The child process running s3rver. */
  readonly pid: number
  /** How long s3rver took to answer its port, in milliseconds. */
  readonly startMillis: number
  /** Closes s3rver, waits for the child to exit and removes its data directory. Idempotent. */
  readonly stop: () => Promise<void>
}

const STARTUP_TIMEOUT_MS = 20_000
const STOP_TIMEOUT_MS = 5_000

/** Runs in the child (CommonJS, plain JS): start s3rver, print the port, stop when stdin ends. */
const childScript = `
const S3rver = require(process.env.S3RVER_MODULE);
const server = new S3rver({
  address: "127.0.0.1",
  port: 0,
  silent: true,
  directory: process.env.S3RVER_DIRECTORY,
  vhostBuckets: false
});
let closing = false;
const stop = () => {
  if (closing) return;
  closing = true;
  server.close().catch(() => {}).finally(() => process.exit(0));
  setTimeout(() => process.exit(0), 2000).unref();
};
process.stdin.on("end", stop);
process.stdin.on("error", stop);
process.on("SIGTERM", stop);
process.stdin.resume();
server.run().then(
  (address) => process.stdout.write(JSON.stringify({ port: address.port }) + "\\n"),
  (error) => { process.stderr.write(String(error && error.stack || error)); process.exit(1); }
);
`

/** Starts s3rver; resolves once it listens. */
export const startS3rver = async (): Promise<S3Local> => {
  const started = Date.now()
  const directory = Fs.mkdtempSync(Path.join(Os.tmpdir(), "s3rver-test-"))
  const nodeOptions = [process.env["NODE_OPTIONS"], "--openssl-legacy-provider"].filter(Boolean).join(" ")
  const child = ChildProcess.spawn(process.execPath, ["-e", childScript], {
    env: {
      ...process.env,
      NODE_OPTIONS: nodeOptions,
      S3RVER_MODULE: createRequire(import.meta.url).resolve("s3rver"),
      S3RVER_DIRECTORY: directory
    },
    stdio: ["pipe", "pipe", "pipe"]
  })
  let stderr = ""
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
    stderr += chunk
  })
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve()
    else child.once("exit", () => resolve())
  })

  let stopping: Promise<void> | undefined
  const stop = (): Promise<void> =>
    stopping ??= (async () => {
      child.stdin.end()
      const timer = setTimeout(() => child.kill("SIGKILL"), STOP_TIMEOUT_MS)
      await exited
      clearTimeout(timer)
      Fs.rmSync(directory, { recursive: true, force: true })
    })()

  try {
    const port = await new Promise<number>((resolve, reject) => {
      let stdout = ""
      const timer = setTimeout(() => reject(new Error(`s3rver did not start in ${STARTUP_TIMEOUT_MS} ms`)), STARTUP_TIMEOUT_MS)
      child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
        stdout += chunk
        const line = stdout.split("\n")[0]
        if (stdout.includes("\n") && line !== undefined) {
          clearTimeout(timer)
          resolve((JSON.parse(line) as { port: number }).port)
        }
      })
      child.once("exit", (code, signal) => {
        clearTimeout(timer)
        reject(new Error(`s3rver exited before listening (code ${code}, signal ${signal}): ${stderr}`))
      })
      child.once("error", reject)
    })
    return { endpoint: `http://127.0.0.1:${port}`, port, pid: child.pid!, startMillis: Date.now() - started, stop }
  } catch (error) {
    await stop()
    throw error
  }
}

/** An S3 client for s3rver, with the settings it needs. */
export const s3rverClient = (endpoint: string): S3Client =>
  new S3Client({
    endpoint,
    region: "us-east-1",
    forcePathStyle: true,
    credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" },
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED"
  })

export interface S3LocalBucket {
  readonly s3: S3Local
  readonly client: S3Client
  readonly bucket: string
}

/**
 * s3rver with one fresh bucket and a client for it, for the life of the scope: stopped (and the
 * client destroyed) when the scope closes.
 */
export const s3LocalBucket = (bucket = "blobs-test"): Effect.Effect<S3LocalBucket, never, Scope.Scope> =>
  Effect.gen(function*() {
    const s3 = yield* Effect.acquireRelease(Effect.promise(startS3rver), (s3) => Effect.promise(s3.stop))
    const client = yield* Effect.acquireRelease(
      Effect.sync(() => s3rverClient(s3.endpoint)),
      (client) => Effect.sync(() => client.destroy())
    )
    yield* Effect.promise((abortSignal) => client.send(new CreateBucketCommand({ Bucket: bucket }), { abortSignal }))
    return { s3, client, bucket }
  })
