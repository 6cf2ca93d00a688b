/**
 * The app's /v1 server (src/server.ts) end to end: a tiny OpenAI-compatible upstream started here,
 * the official `openai` client calling the app, and the SQLite database read afterwards. A call,
 * whole or streamed, is answered with the upstream's answer and charged exactly the price of the
 * tokens it used, with one usage record; a call its balance cannot cover is refused in the spec's inference error shape
 * (402 insufficient_credit), never reaches the upstream and charges nothing.
 */
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, assert, beforeAll, it } from "vitest"
import { Effect } from "effect"
import OpenAI from "openai"
import type { CatalogueConfig } from "@model-platform/core/catalogue"
import { AccountStore, ApiKeys } from "@model-platform/core/keys"
import { generateId, Time, toTimestamp } from "@model-platform/core/kernel"
import { Ledger, LedgerStore } from "@model-platform/core/ledger"
import { UsageStore } from "@model-platform/core/billing"
import { Gateway } from "@model-platform/core/gateway"
import { type RunningServer, startServer } from "../src/server.ts"

/** What the upstream reports for every call: 1,200 tokens in, 300 out. */
const USAGE = { prompt_tokens: 1_200, completion_tokens: 300, total_tokens: 1_500 }
/** 2 credits per million input tokens, 6 per million output: 1,200 x 2 + 300 x 6 = 4,200 micro-credits. */
const PRICE_OF_USAGE = 4_200n

let upstream: Server
let upstreamCalls = 0
let app: RunningServer

const catalogueFor = (upstreamUrl: string): CatalogueConfig => ({
  operators: [{ id: "op-local", name: "Local", website: "https://local.example", description: "This test.", featured: false, certifications: [] }],
  machines: [{
    id: "m-local", name: "Local", operator: "op-local", region: "local", base_url: `${upstreamUrl}/v1`,
    hardware: { gpus: [], cpu_cores: 1, memory_gb: 1, storage_gb: 0 }, serverless_models: ["chat-one"],
    rent: null, subscribe: null, network: { status: "registered", reachability: "public" }, score: 1, initial_health: "online"
  }],
  models: [{
    id: "chat-one", name: "Chat One", family: "test", description: "The one model.", modality: "text", service: "chat",
    owned_by: "platform", endpoint: "/v1/chat/completions", context_length: 8192, max_output_tokens: 1024, features: [],
    pricing: { input_credits_per_mtok: 2, output_credits_per_mtok: 6, credits_per_request: 0 }
  }],
  packages: [],
  // A rail is set, so charging is open (core/src/catalogue/Charging.ts).
  payments: { card: { processor: "test" }, stablecoin: null, charging_starts_at: null },
  prices: {
    credits_per_usd: 1000,
    services: [{
      service: "chat", group: "inference", name: "Chat", unit: "mtok", unit_label: "million tokens", credits_per_unit: 1,
      allowances: { free: 0, builder: 0, scale: 0, trial: 0 }
    }]
  },
  tiers: [{ tier: 0, name: "Starter", purchased_credits: 0, rpm: 60, monthly_limit_credits: 1000 }]
})

beforeAll(async () => {
  upstream = createServer((request, response) => {
    let body = ""
    request.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")))
    request.on("end", () => {
      upstreamCalls++
      const { model, stream } = JSON.parse(body) as { model: string; stream?: boolean }
      if (stream === true) {
        // Two content chunks, then the usage chunk (the gateway asks for it: include_usage).
        const chunk = (fields: object) =>
          `data: ${JSON.stringify({ id: "chatcmpl-2", object: "chat.completion.chunk", created: 1, model, ...fields })}\n\n`
        response.writeHead(200, { "content-type": "text/event-stream" })
        response.write(chunk({ choices: [{ index: 0, delta: { role: "assistant", content: "Hello " }, finish_reason: null }] }))
        response.write(chunk({ choices: [{ index: 0, delta: { content: "streamed." }, finish_reason: "stop" }] }))
        response.write(chunk({ choices: [], usage: USAGE }))
        response.end("data: [DONE]\n\n")
        return
      }
      response.writeHead(200, { "content-type": "application/json" })
      response.end(JSON.stringify({
        id: "chatcmpl-1", object: "chat.completion", created: Math.floor(Date.now() / 1000), model,
        choices: [{ index: 0, message: { role: "assistant", content: "Hello from upstream." }, finish_reason: "stop" }],
        usage: USAGE
      }))
    })
  })
  await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve))
  const upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`
  app = await startServer(catalogueFor(upstreamUrl), join(mkdtempSync(join(tmpdir(), "sqlite-platform-")), "platform.db"))
})

afterAll(async () => {
  await app?.close()
  await new Promise<void>((resolve) => upstream?.close(() => resolve()))
})

/** A new account with `amount` micro-credits and an inference key: the key's secret. */
const accountWith = (amount: bigint) =>
  app.runtime.runPromise(Effect.gen(function*() {
    const id = yield* generateId("acct")
    yield* (yield* AccountStore).insert({ id, email: `${id}@example.test`, created_at: yield* Time.now })
    yield* (yield* Ledger).credit(id, { ref: yield* generateId("order"), machine_id: null, amount, type: "credit_added" })
    const key = yield* (yield* ApiKeys).issue(id, { name: "example", permissions: ["inference"] })
    return { id, secret: key.secret }
  }))

/** What the database holds of the account once every call is metered. */
const moneyOf = (accountId: string) =>
  app.runtime.runPromise(Effect.gen(function*() {
    yield* (yield* Gateway).idle
    const ledger = yield* LedgerStore
    return {
      balances: yield* ledger.balances(accountId),
      pending: (yield* ledger.pending(accountId)).length,
      records: yield* (yield* UsageStore).list({
        account_id: accountId,
        from: toTimestamp(Date.UTC(2000, 0, 1)),
        to: toTimestamp(Date.UTC(2100, 0, 1))
      })
    }
  }))

const client = (secret: string) => new OpenAI({ baseURL: `${app.url}/v1`, apiKey: secret, maxRetries: 0 })

it("a call is answered by the upstream and charged the price of the tokens it used, with one usage record", async () => {
  const account = await accountWith(1_000_000n)
  const completion = await client(account.secret).chat.completions.create({
    model: "chat-one",
    messages: [{ role: "user", content: "Say hello." }],
    max_tokens: 100
  })
  assert.strictEqual(completion.choices[0]?.message.content, "Hello from upstream.")
  assert.deepStrictEqual(completion.usage, USAGE)
  const money = await moneyOf(account.id)
  assert.deepStrictEqual(money.balances, [{ machine_id: null, posted: 1_000_000n - PRICE_OF_USAGE, held: 0n }])
  assert.strictEqual(money.pending, 0)
  assert.strictEqual(money.records.length, 1)
  const [record] = money.records
  assert.deepStrictEqual(
    [record?.model, record?.machine_id, record?.input_tokens, record?.output_tokens, record?.credits, record?.list_credits],
    ["chat-one", "m-local", 1_200n, 300n, PRICE_OF_USAGE, PRICE_OF_USAGE]
  )
})

it("a streamed call is passed on chunk by chunk and charged the usage its last chunk reports", async () => {
  const account = await accountWith(1_000_000n)
  const stream = await client(account.secret).chat.completions.create({
    model: "chat-one",
    messages: [{ role: "user", content: "Say hello." }],
    max_tokens: 100,
    stream: true
  })
  let text = ""
  let usage: unknown
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta.content ?? ""
    if (chunk.usage) usage = chunk.usage
  }
  assert.strictEqual(text, "Hello streamed.")
  assert.deepStrictEqual(usage, USAGE)
  const money = await moneyOf(account.id)
  assert.deepStrictEqual(money.balances, [{ machine_id: null, posted: 1_000_000n - PRICE_OF_USAGE, held: 0n }])
  assert.deepStrictEqual(money.records.map((r) => r.credits), [PRICE_OF_USAGE])
})

it("a call its balance cannot cover is refused with 402 insufficient_credit in the inference error shape, and charges nothing", async () => {
  // 100 micro-credits: less than the call's bound (100 output tokens alone are 600).
  const account = await accountWith(100n)
  const before = upstreamCalls
  const refused = await client(account.secret).chat.completions
    .create({ model: "chat-one", messages: [{ role: "user", content: "Say hello." }], max_tokens: 100 })
    .then(() => undefined, (error: unknown) => error)
  assert.instanceOf(refused, OpenAI.APIError)
  const error = refused as InstanceType<typeof OpenAI.APIError>
  assert.strictEqual(error.status, 402)
  const shape = error.error as Record<string, unknown>
  assert.deepStrictEqual(Object.keys(shape).sort(), ["code", "message", "type"])
  assert.strictEqual(shape["code"], "insufficient_credit")
  assert.isString(shape["message"])
  assert.isString(shape["type"])
  assert.strictEqual(upstreamCalls, before, "the refused call reached the upstream")
  const money = await moneyOf(account.id)
  assert.deepStrictEqual(money.balances, [{ machine_id: null, posted: 100n, held: 0n }])
  assert.strictEqual(money.pending, 0)
  assert.deepStrictEqual(money.records, [])
})
