/**
 * Measures the Lambda cold start of the deployment bundle (docs/lambda.md, "Cold start"):
 *
 *   ./platform node adapters/lambda/scripts/cold-start.ts [--runs 7] [--cpu-prof DIR]
 *
 * 1. Bundles src/lambda.ts with cdk/bundle.ts, minified, exactly as the CDK app deploys it.
 * 2. Starts DynamoDB Local (adapters/dynamodb-stores/test/dynamoLocal.ts) with a fresh table, and a
 *    fake SSM Parameter Store (test/fakeSsm.ts) on a local port holding the demo catalogue and an
 *    owner key secret. The bundle is not changed for the measurement: its SDK clients reach both
 *    through the SDK's own endpoint variables (AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL_SSM), so
 *    the catalogue really is fetched with GetParameter at every cold start.
 * 3. Runs each cold start in a fresh `node` process that imports the bundle (Lambda's init phase:
 *    module evaluation, configuration, the catalogue from SSM, the platform built over DynamoDB),
 *    then answers GET /models and GET /me (authenticated with the owner key) through `handler`
 *    with API Gateway v2 events, then one more GET /models (warm). The first run meets an empty
 *    table and makes the owner (reported apart); the others find it, as every later cold start
 *    does. Each run is made with NODE_OPTIONS=--enable-source-maps (as deployed) and without.
 *
 * Prints min / median / max of each phase and the bundle's size. Everything it starts is stopped
 * at the end (DynamoDB Local's Java, the fake SSM, the child processes).
 */
import { generateSecret } from "@model-platform/core/keys"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { bundle } from "../cdk/bundle.ts"
import { DEFAULT_CATALOGUE_PARAMETER, DEFAULT_OWNER_KEY_PARAMETER, ENV, INIT_MARKS } from "../src/ConfigNames.ts"
import { createTable, DynamoConfig, makeDocumentClient } from "@model-platform/dynamodb-stores"
import { localClientConfig, startDynamoLocal } from "../../dynamodb-stores/test/dynamoLocal.ts"
import { startFakeSsm } from "../test/fakeSsm.ts"
import { requestToEvent } from "../test/support.ts"

const here = Path.dirname(fileURLToPath(import.meta.url))
const DEMO_CATALOGUE = Path.join(here, "..", "..", "node-http", "catalogue.demo.json")

const argProf = process.argv.indexOf("--cpu-prof")
/** --cpu-prof DIR: a V8 CPU profile of each cold start without source maps, written into DIR. */
const PROFILE_DIR = argProf === -1 ? undefined : Path.resolve(process.argv[argProf + 1]!)
const argRuns = process.argv.indexOf("--runs")
const RUNS = argRuns === -1 ? 7 : Number(process.argv[argRuns + 1])
if (!Number.isInteger(RUNS) || RUNS < 1) throw new Error("--runs takes a positive integer")

/** What one fresh process measures (milliseconds). */
interface Sample {
  /** Node's own start, up to the first line of the runner. */
  readonly node: number
  /** `import()` of the bundle: Lambda's init phase. */
  readonly init: number
  /** Within the init: the bundle's code evaluated (parse, compile, module bodies). */
  readonly evaluate: number
  /** Within the init: the configuration and the catalogue read from SSM. */
  readonly catalogue: number
  /** Within the init: the platform built (layers, the table read for the first start). */
  readonly build: number
  /** The first GET /models. */
  readonly models: number
  /** The first GET /me (bearer key: one key lookup and a touch). */
  readonly me: number
  /** A second GET /models. */
  readonly warm: number
  readonly statuses: ReadonlyArray<number>
}

/** Runs in the child: imports the bundle, then invokes `handler` with the events. */
const CHILD = `
const t0 = performance.now()
const bundle = await import(process.env.COLD_START_BUNDLE)
const t1 = performance.now()
const [models, me] = JSON.parse(process.env.COLD_START_EVENTS)
const context = { getRemainingTimeInMillis: () => 30000 }
const first = await bundle.handler(models, context)
const t2 = performance.now()
const second = await bundle.handler(me, context)
const t3 = performance.now()
const third = await bundle.handler(models, context)
const t4 = performance.now()
const mark = (name) => performance.getEntriesByName(name, "mark")[0]?.startTime ?? NaN
const evaluated = mark(${JSON.stringify(INIT_MARKS.evaluated)})
const catalogue = mark(${JSON.stringify(INIT_MARKS.catalogue)})
const ready = mark(${JSON.stringify(INIT_MARKS.ready)})
process.stdout.write("\\n@@sample " + JSON.stringify({
  node: t0, init: t1 - t0, evaluate: evaluated - t0, catalogue: catalogue - evaluated, build: ready - catalogue,
  models: t2 - t1, me: t3 - t2, warm: t4 - t3,
  statuses: [first.statusCode, second.statusCode, third.statusCode]
}) + "\\n")
process.exit(0)
`

const runChild = (env: NodeJS.ProcessEnv): Promise<Sample> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--input-type=module", "-e", CHILD], { env, stdio: ["ignore", "pipe", "pipe"] })
    let out = ""
    let err = ""
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()))
    child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()))
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000)
    child.on("error", reject)
    child.on("exit", (code) => {
      clearTimeout(timer)
      const line = out.split("\n").find((l) => l.startsWith("@@sample "))
      if (code !== 0 || line === undefined) return reject(new Error(`run failed (exit ${code}):\n${out}\n${err}`))
      resolve(JSON.parse(line.slice("@@sample ".length)) as Sample)
    })
  })

const stats = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  const median = sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
  return { min: sorted[0]!, median, max: sorted[sorted.length - 1]! }
}

const ms = (value: number) => `${value.toFixed(0).padStart(5)} ms`

const coldStart = (s: Sample) => s.init + s.models

const ROWS: ReadonlyArray<readonly [string, (s: Sample) => number]> = [
  ["node start (before the import; not Lambda's)", (s) => s.node],
  ["init: import of the bundle", (s) => s.init],
  ["  of which: evaluating the bundle's code", (s) => s.evaluate],
  ["  of which: environment + catalogue from SSM", (s) => s.catalogue],
  ["  of which: building the platform", (s) => s.build],
  ["first request: GET /models", (s) => s.models],
  ["cold start: init + first GET /models", coldStart],
  ["then GET /me (bearer key)", (s) => s.me],
  ["then GET /models (warm)", (s) => s.warm]
]
/** The floor's rows: up to the cold start (its GET /me is one read, not the platform's lookup). */
const FLOOR_ROWS = 7

const report = (title: string, samples: ReadonlyArray<Sample>, rowCount = ROWS.length) => {
  console.log(`\n${title} (${samples.length} run${samples.length === 1 ? "" : "s"})`)
  console.log(`  ${"phase".padEnd(44)}      min   median      max`)
  for (const [name, pick] of ROWS.slice(0, rowCount)) {
    const { min, median, max } = stats(samples.map(pick))
    console.log(`  ${name.padEnd(44)} ${ms(min)} ${ms(median)} ${ms(max)}`)
  }
}

const main = async () => {
  const outDir = Path.join(here, "..", "dist", "cold-start")
  const built = await bundle({ outDir })
  const floor = await bundle({ entry: Path.join(here, "coldStartFloor.ts"), outDir: Path.join(here, "..", "dist", "cold-start-floor") })
  const mapBytes = Fs.statSync(`${built.outFile}.map`).size
  console.log(
    `bundle: ${built.outFile}\n  read at start: ${(built.startBytes / 1024).toFixed(0)} KB minified (index.mjs ` +
      `${(built.bytes / 1024).toFixed(0)} KB and the chunks it imports; source map ${(mapBytes / 1024).toFixed(0)} KB); ` +
      `read when first used: ${(built.lazyBytes / 1024).toFixed(0)} KB; built in ${built.millis} ms`
  )
  console.log(`the floor (coldStartFloor.ts): read at start ${(floor.startBytes / 1024).toFixed(0)} KB minified`)

  const local = await startDynamoLocal()
  const ssm = await startFakeSsm({
    [DEFAULT_CATALOGUE_PARAMETER]: { type: "String", value: Fs.readFileSync(DEMO_CATALOGUE, "utf8") },
    [DEFAULT_OWNER_KEY_PARAMETER]: { type: "SecureString", value: Effect.runSync(generateSecret) }
  })
  try {
    console.log(`DynamoDB Local on ${local.endpoint} (answered after ${local.startupMs} ms), fake SSM on ${ssm.endpoint}`)
    const tableName = `cold-start-${crypto.randomUUID()}`
    const client = makeDocumentClient(localClientConfig(local.endpoint))
    await Effect.runPromise(Effect.provideService(createTable, DynamoConfig, { tableName, client }))
    client.destroy()

    // The secret as the child sends it: read back from the fake parameter's owner key.
    const secret = (await (await fetch(ssm.endpoint, {
      method: "POST",
      headers: { "x-amz-target": "AmazonSSM.GetParameter", "content-type": "application/x-amz-json-1.1" },
      body: JSON.stringify({ Name: DEFAULT_OWNER_KEY_PARAMETER, WithDecryption: true })
    })).json() as { Parameter: { Value: string } }).Parameter.Value
    const url = (path: string) => `https://api.cold-start.test${path}`
    const events = [
      await requestToEvent(new Request(url("/models"))),
      await requestToEvent(new Request(url("/me"), { headers: { authorization: `Bearer ${secret}` } }))
    ]

    // As on Lambda: no shared AWS config or credentials files, everything from the environment.
    const home = Fs.mkdtempSync(Path.join(Os.tmpdir(), "cold-start-home-"))
    const env = (nodeOptions: string, outFile = built.outFile): NodeJS.ProcessEnv => ({
      PATH: process.env["PATH"],
      HOME: home,
      NODE_OPTIONS: nodeOptions,
      AWS_REGION: "eu-west-1",
      AWS_ACCESS_KEY_ID: "local",
      AWS_SECRET_ACCESS_KEY: "local",
      AWS_ENDPOINT_URL_DYNAMODB: local.endpoint,
      AWS_ENDPOINT_URL_SSM: ssm.endpoint,
      [ENV.table]: tableName,
      [ENV.bucket]: "cold-start-bucket",
      [ENV.catalogueParameter]: DEFAULT_CATALOGUE_PARAMETER,
      [ENV.ownerEmail]: "owner@cold-start.test",
      [ENV.ownerKeySecretId]: DEFAULT_OWNER_KEY_PARAMETER,
      COLD_START_BUNDLE: pathToFileURL(outFile).href,
      COLD_START_EVENTS: JSON.stringify(events)
    })

    const check = (sample: Sample) => {
      if (sample.statuses.some((status) => status !== 200)) throw new Error(`a request failed: ${sample.statuses}`)
      return sample
    }

    const first = check(await runChild(env("--enable-source-maps")))
    const withMaps: Array<Sample> = []
    const withoutMaps: Array<Sample> = []
    const floors: Array<Sample> = []
    for (let i = 0; i < RUNS; i++) {
      withMaps.push(check(await runChild(env("--enable-source-maps"))))
      withoutMaps.push(check(await runChild(env(PROFILE_DIR === undefined ? "" : `--cpu-prof --cpu-prof-dir=${PROFILE_DIR}`))))
      floors.push(check(await runChild(env("", floor.outFile))))
    }

    console.log(`\nmachine: ${Os.cpus()[0]?.model ?? "?"} x${Os.cpus().length}, Node ${process.versions.node}; ` +
      "DynamoDB Local and the fake SSM on localhost")
    report("first start ever (empty table: reads the owner key, makes the owner), --enable-source-maps", [first])
    report("cold start, NODE_OPTIONS=--enable-source-maps (as deployed)", withMaps)
    report("cold start, without source maps", withoutMaps)
    report("the floor, without source maps: the same AWS reads and no platform (coldStartFloor.ts)", floors, FLOOR_ROWS)
    const platform = stats(withoutMaps.map(coldStart)).median
    const bare = stats(floors.map(coldStart)).median
    console.log(`\nthe platform's own, without source maps (medians): ${ms(platform - bare).trim()} beyond the floor's ` +
      `${ms(bare).trim()}; the cold start is ${(platform / bare).toFixed(1)}x the floor`)
    console.log(`\nSSM GetParameter calls: ${ssm.calls.length} (${3 * RUNS + 1} cold starts + the owner key once)`)
  } finally {
    await ssm.close()
    await local.stop()
  }
}

await main()
