/**
 * The deployment entry point (src/lambda.ts) as Lambda runs it: configured only by environment
 * variables, on DynamoDB Local and a fake SSM endpoint (fakeSsm.ts) reached through the SDK's own
 * endpoint variables, with the `awslambda` global shimmed. Each import of the module under a new
 * URL is a new container: its init phase reads the catalogue and, on an empty table, makes the
 * owner with the key secret kept in the SecureString parameter.
 */
import type { APIGatewayProxyStructuredResultV2 } from "aws-lambda"
import { generateSecret, hashSecret } from "@model-platform/core/keys"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest"
import { bundle } from "../cdk/bundle.ts"
import { WEBAUTHN_BUNDLE_FILE } from "../src/Accounts.ts"
import { ENV } from "../src/ConfigNames.ts"
import { createTable, DynamoConfig, makeDocumentClient } from "@model-platform/dynamodb-stores"
import type { InvocationContext } from "../src/Handler.ts"
import type { StreamingHandler } from "../src/Streaming.ts"
import { awslambdaShim, installAwsLambdaShim, invokeStreaming } from "./awslambdaShim.ts"
import { type DynamoLocal, localClientConfig, startDynamoLocal } from "../../dynamodb-stores/test/dynamoLocal.ts"
import { type FakeSsm, startFakeSsm } from "./fakeSsm.ts"
import { invocationContext, requestToEvent, resultToResponse } from "./support.ts"

const here = Path.dirname(fileURLToPath(import.meta.url))
const DEMO_CATALOGUE = Fs.readFileSync(Path.join(here, "..", "..", "node-http", "catalogue.demo.json"), "utf8")
const CATALOGUE = "/mp/test/catalogue"
const OWNER_KEY = "/mp/test/owner-key"
const OWNER_EMAIL = "owner@lambda.test"

interface Entry {
  readonly handler: (event: Awaited<ReturnType<typeof requestToEvent>>, context?: InvocationContext) => Promise<APIGatewayProxyStructuredResultV2>
  readonly streamHandler: StreamingHandler
}

let local: DynamoLocal
let ssm: FakeSsm
const secret = Effect.runSync(generateSecret)
const logs: Array<string> = []

const newTable = async (): Promise<string> => {
  const tableName = `platform-entry-${crypto.randomUUID()}`
  const client = makeDocumentClient(localClientConfig(local.endpoint))
  await Effect.runPromise(Effect.provideService(createTable, DynamoConfig, { tableName, client }))
  client.destroy()
  return tableName
}

let containers = 0

/**
 * A new container: a fresh instance of the entry module (its own URL, so its own module state),
 * its init phase awaited by the import. The modules it imports hold no state of their own.
 * `moduleUrl`: another build of it (the deployment bundle).
 */
const newContainer = async (env: Record<string, string>, moduleUrl = new URL("../src/lambda.ts", import.meta.url).href): Promise<Entry> => {
  for (const [name, value] of Object.entries(env)) vi.stubEnv(name, value)
  const url = `${moduleUrl}?container=${++containers}`
  return await import(/* @vite-ignore */ url) as Entry
}

const get = (path: string, headers: Record<string, string> = {}) =>
  requestToEvent(new Request(`https://abc123.lambda-url.eu-west-1.on.aws${path}`, { headers }))

const call = async (entry: Entry, path: string, headers: Record<string, string> = {}) =>
  resultToResponse(await entry.handler(await get(path, headers), invocationContext))

const bearer = (value: string) => ({ authorization: `Bearer ${value}` })

beforeAll(async () => {
  local = await startDynamoLocal()
  ssm = await startFakeSsm({
    [CATALOGUE]: { type: "String", value: DEMO_CATALOGUE },
    [OWNER_KEY]: { type: "SecureString", value: `${secret}\n` }
  })
  installAwsLambdaShim()
  for (const method of ["log", "info", "warn", "error"] as const) {
    vi.spyOn(console, method).mockImplementation((...args: Array<unknown>) => {
      logs.push(args.map((arg) => (arg instanceof Error ? `${arg.message} ${arg.stack}` : typeof arg === "string" ? arg : JSON.stringify(arg))).join(" "))
    })
  }
  vi.stubEnv("AWS_REGION", "eu-west-1")
  vi.stubEnv("AWS_ACCESS_KEY_ID", "local")
  vi.stubEnv("AWS_SECRET_ACCESS_KEY", "local")
  vi.stubEnv("AWS_ENDPOINT_URL_DYNAMODB", local.endpoint)
  vi.stubEnv("AWS_ENDPOINT_URL_SSM", ssm.endpoint)
}, 60_000)

afterAll(async () => {
  vi.restoreAllMocks()
  vi.unstubAllEnvs()
  vi.unstubAllGlobals()
  await ssm?.close()
  await local?.stop()
})

describe("src/lambda.ts", () => {
  let tableName: string
  let entry: Entry

  beforeAll(async () => {
    tableName = await newTable()
    entry = await newContainer({
      [ENV.table]: tableName,
      [ENV.bucket]: "platform-test-bucket",
      [ENV.catalogueParameter]: CATALOGUE,
      [ENV.ownerEmail]: OWNER_EMAIL,
      [ENV.ownerKeySecretId]: OWNER_KEY
    })
  }, 60_000)

  it("exports the handlers the stack names, the stream one marked as streaming", async () => {
    expect(typeof entry.handler).toBe("function")
    expect(awslambdaShim.streamingHandlers.has(entry.streamHandler)).toBe(true)
  })

  it("the init phase read the catalogue and, on the empty table, made the owner with the secret from SSM", async () => {
    expect(ssm.calls).toEqual([
      { name: CATALOGUE, withDecryption: false },
      { name: OWNER_KEY, withDecryption: true }
    ])
    const me = await call(entry, "/me", bearer(secret))
    expect(me.status).toBe(200)
    const body = await me.json() as { email: string; key: { prefix: string; secret?: string } }
    expect(body.email).toBe(OWNER_EMAIL)
    expect(secret.startsWith(body.key.prefix)).toBe(true)
    expect(body.key.secret).toBeUndefined()
    const models = await call(entry, "/models")
    expect(models.status).toBe(200)
    const ids = ((await models.json()) as { data: Array<{ id: string }> }).data.map((model) => model.id)
    expect(ids.length).toBeGreaterThan(0)
    expect(logs.some((line) => line.includes("created the owner account"))).toBe(true)
  })

  it("never logs the secret, nor stores it: the table holds only its hash", async () => {
    for (const line of logs) expect(line).not.toContain(secret.slice(12))
    const client = makeDocumentClient(localClientConfig(local.endpoint))
    try {
      const { ScanCommand } = await import("@aws-sdk/lib-dynamodb")
      const items = JSON.stringify((await client.send(new ScanCommand({ TableName: tableName }))).Items)
      expect(items).not.toContain(secret.slice(12))
      expect(items).toContain(await Effect.runPromise(hashSecret(secret)))
    } finally {
      client.destroy()
    }
  })

  it("later invocations use the same platform: SSM is not read again", async () => {
    const before = ssm.calls.length
    for (let i = 0; i < 5; i++) expect((await call(entry, "/models")).status).toBe(200)
    expect(ssm.calls.length).toBe(before)
  })

  it("the stream handler serves the same platform on a response stream", async () => {
    const buffered = await entry.handler(await get("/me", bearer(secret)), invocationContext)
    const { stream, done } = invokeStreaming(entry.streamHandler, await get("/me", bearer(secret)))
    await done
    expect(stream.prelude?.statusCode).toBe(200)
    expect(stream.prelude?.headers["content-type"]).toBe(buffered.headers?.["content-type"])
    expect((JSON.parse(stream.text) as { email: string }).email).toBe(OWNER_EMAIL)
  })

  it("a new container finds the owner and does not read the owner key again", async () => {
    const before = ssm.calls.length
    const second = await newContainer({ [ENV.table]: tableName })
    expect(ssm.calls.slice(before)).toEqual([{ name: CATALOGUE, withDecryption: false }])
    expect((await call(second, "/me", bearer(secret))).status).toBe(200)
  }, 30_000)

  it("a container whose catalogue parameter is missing answers 503 in the platform shape, then starts once it exists", async () => {
    const second = await newContainer({ [ENV.table]: tableName, [ENV.catalogueParameter]: "/mp/test/missing" })
    expect(logs.some((line) => line.includes("/mp/test/missing"))).toBe(true)
    const failed = await call(second, "/models")
    expect(failed.status).toBe(503)
    expect(await failed.json()).toMatchObject({ error: { code: expect.any(String), message: expect.any(String) } })
    ssm.set("/mp/test/missing", { type: "String", value: DEMO_CATALOGUE })
    expect((await call(second, "/models")).status).toBe(200)
    expect((await call(second, "/me", bearer(secret))).status).toBe(200)
  }, 30_000)

  it("a malformed owner secret fails the first start without writing or logging anything of it", async () => {
    const emptyTable = await newTable()
    const malformed = "not-a-platform-secret-but-private-0123456789"
    ssm.set("/mp/test/bad-owner-key", { type: "SecureString", value: malformed })
    const third = await newContainer({ [ENV.table]: emptyTable, [ENV.ownerKeySecretId]: "/mp/test/bad-owner-key" })
    expect((await call(third, "/models")).status).toBe(503)
    for (const line of logs) expect(line).not.toContain(malformed)
    expect(logs.some((line) => line.includes("does not hold an owner key secret"))).toBe(true)
    // Nothing was written: once the parameter holds a good secret, the owner is made with it.
    const good = Effect.runSync(generateSecret)
    ssm.set("/mp/test/bad-owner-key", { type: "SecureString", value: good })
    expect((await call(third, "/models")).status).toBe(200)
    expect((await call(third, "/me", bearer(good))).status).toBe(200)
  }, 30_000)

  it("a missing environment variable answers 503 and names the variable in the log", async () => {
    const before = logs.length
    vi.stubEnv(ENV.ownerEmail, undefined)
    const fourth = await newContainer({ [ENV.table]: tableName })
    expect((await call(fourth, "/models")).status).toBe(503)
    expect(logs.slice(before).some((line) => line.includes(ENV.ownerEmail))).toBe(true)
    vi.stubEnv(ENV.ownerEmail, OWNER_EMAIL)
  }, 30_000)
})

describe("src/lambda.ts: the account service", () => {
  const ACCOUNTS_URL = "https://accounts.lambda.test/accounts"
  const PASSWORD = "smtp-password-never-logged"
  let tableName: string

  beforeAll(async () => {
    tableName = await newTable()
  })

  /** A container with the account service's variables, unset again after `body`. */
  const withAccounts = async (env: Record<string, string>, body: (entry: Entry) => Promise<void>, moduleUrl?: string) => {
    try {
      await body(await newContainer({ [ENV.table]: tableName, [ENV.ownerKeySecretId]: OWNER_KEY, ...env }, moduleUrl))
    } finally {
      for (const name of [ENV.smtpUrl, ENV.smtpFrom, ENV.accountsUrl]) vi.stubEnv(name, undefined)
    }
  }
  const mail = { [ENV.smtpUrl]: `smtp://platform:${PASSWORD}@127.0.0.1:2525`, [ENV.smtpFrom]: "Model Platform <no-reply@lambda.test>" }

  it("without SMTP_URL it is off: its pages answer 503, and the log says why", async () => {
    const before = logs.length
    await withAccounts({}, async (entry) => {
      expect((await call(entry, "/accounts/sign-up")).status).toBe(503)
      expect(logs.slice(before).some((line) => line.includes(`account service is off: ${ENV.smtpUrl} is not set`))).toBe(true)
    })
  }, 30_000)

  it("with SMTP_URL, SMTP_FROM and ACCOUNTS_URL it serves the pages at ACCOUNTS_URL, never logging the SMTP password", async () => {
    await withAccounts({ ...mail, [ENV.accountsUrl]: ACCOUNTS_URL }, async (entry) => {
      const signUp = await call(entry, "/accounts/sign-up")
      expect(signUp.status).toBe(200)
      expect(await signUp.text()).toContain('id="sign-up"')
      const identity = await call(entry, "/identity", bearer(secret))
      expect(await identity.json()).toMatchObject({ state: "ready", passkeys: 0, manage_url: `${ACCOUNTS_URL}/manage` })
    })
    for (const line of logs) expect(line).not.toContain(PASSWORD)
  }, 30_000)

  it("SMTP_URL without SMTP_FROM, or without ACCOUNTS_URL and PUBLIC_URL, answers 503 and names what is missing", async () => {
    let before = logs.length
    await withAccounts({ [ENV.smtpUrl]: mail[ENV.smtpUrl], [ENV.accountsUrl]: ACCOUNTS_URL }, async (entry) => {
      expect((await call(entry, "/models")).status).toBe(503)
      expect(logs.slice(before).some((line) => line.includes(`${ENV.smtpFrom} is not`))).toBe(true)
    })
    before = logs.length
    await withAccounts(mail, async (entry) => {
      expect((await call(entry, "/models")).status).toBe(503)
      expect(logs.slice(before).some((line) => line.includes(ENV.accountsUrl) && line.includes(ENV.publicUrl))).toBe(true)
    })
    for (const line of logs) expect(line).not.toContain(PASSWORD)
  }, 30_000)

  it("the deployment bundle serves the WebAuthn script from the file cdk/bundle.ts puts beside index.mjs", async () => {
    Fs.mkdirSync(Path.join(here, "..", "dist"), { recursive: true })
    const outDir = Fs.mkdtempSync(Path.join(here, "..", "dist", ".entry-test-"))
    try {
      const { outFile } = await bundle({ outDir, minify: false })
      // Marked, so the answer shows which copy was read.
      Fs.appendFileSync(Path.join(outDir, WEBAUTHN_BUNDLE_FILE), "\n/* beside index.mjs */\n")
      await withAccounts({ ...mail, [ENV.accountsUrl]: ACCOUNTS_URL }, async (entry) => {
        const script = await call(entry, "/accounts/webauthn.js")
        expect(script.status).toBe(200)
        const text = await script.text()
        expect(text).toContain("SimpleWebAuthnBrowser")
        expect(text).toContain("/* beside index.mjs */")
      }, pathToFileURL(outFile).href)
    } finally {
      Fs.rmSync(outDir, { recursive: true, force: true })
    }
    // esbuild bundles the whole platform, then the bundle is imported: a minute when the
    // machine is busy with other test files.
  }, 180_000)
})

describe("src/lambda.ts: a catalogue whose card processor is Stripe", () => {
  const STRIPE_CATALOGUE = "/mp/test/stripe-catalogue"
  const STRIPE_KEY = "/mp/test/stripe-secret-key"
  const STRIPE_WEBHOOK = "/mp/test/stripe-webhook-secret"
  const key = `sk_test_${crypto.randomUUID().replace(/-/g, "")}`
  const signing = `whsec_${crypto.randomUUID().replace(/-/g, "")}`
  let tableName: string

  beforeAll(async () => {
    tableName = await newTable()
    const catalogue = JSON.parse(DEMO_CATALOGUE) as { payments: { card: { processor: string } } }
    catalogue.payments.card = { processor: "stripe" }
    ssm.set(STRIPE_CATALOGUE, { type: "String", value: JSON.stringify(catalogue) })
    ssm.set(STRIPE_KEY, { type: "SecureString", value: `${key}\n` })
    ssm.set(STRIPE_WEBHOOK, { type: "SecureString", value: signing })
  })

  const container = () =>
    newContainer({
      [ENV.table]: tableName,
      [ENV.bucket]: "platform-test-bucket",
      [ENV.catalogueParameter]: STRIPE_CATALOGUE,
      [ENV.ownerEmail]: OWNER_EMAIL,
      [ENV.ownerKeySecretId]: OWNER_KEY,
      [ENV.stripeSecretKeyParameter]: STRIPE_KEY,
      [ENV.stripeWebhookSecretParameter]: STRIPE_WEBHOOK
    })

  it("reads Stripe's two secrets from their SecureString parameters, decrypted, and offers cards through Stripe", async () => {
    const before = ssm.calls.length
    const entry = await container()
    expect(ssm.calls.slice(before)).toEqual(expect.arrayContaining([
      { name: STRIPE_KEY, withDecryption: true },
      { name: STRIPE_WEBHOOK, withDecryption: true }
    ]))
    const methods = await call(entry, "/payment-methods")
    expect(methods.status).toBe(200)
    expect(await methods.json()).toMatchObject({ card: { available: true, processor: "stripe" } })
    for (const line of logs) {
      expect(line).not.toContain(key)
      expect(line).not.toContain(signing)
    }
  }, 30_000)

  it("a parameter that does not hold a Stripe secret stops the start (503), naming the parameter and never the value", async () => {
    const before = logs.length
    const wrong = "pk_live_a-publishable-key-by-mistake"
    ssm.set(STRIPE_KEY, { type: "SecureString", value: wrong })
    try {
      const entry = await container()
      expect((await call(entry, "/payment-methods")).status).toBe(503)
      expect(logs.slice(before).some((line) => line.includes(`the SSM parameter ${STRIPE_KEY} is not a Stripe secret key`))).toBe(true)
      for (const line of logs) expect(line).not.toContain(wrong)
    } finally {
      ssm.set(STRIPE_KEY, { type: "SecureString", value: key })
      vi.stubEnv(ENV.catalogueParameter, CATALOGUE)
    }
  }, 30_000)
})
