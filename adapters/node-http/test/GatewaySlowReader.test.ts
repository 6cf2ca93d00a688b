/**
 * Issue 22, finding 1, through the platform's own Node server on PostgreSQL (embedded PGlite, and
 * a PostgreSQL server when TEST_DATABASE_URL is set): a client that reads a stream a few kilobytes
 * a second does not get the answer for free (docs/gateway.md "Streaming"). The stream limit is
 * shortened to 2 s (it is 10 minutes by default); what was charged is read as a user would, from
 * GET /credits/activity and GET /credits.
 *
 * The machine here is a stub that streams fast (8 MB in well under the limit: more than the sockets
 * between the gateway and a client hold) or slowly (an event every 20 ms for 4 s: past the limit).
 */
import type { CatalogueConfig } from "@model-platform/core/catalogue"
import { creditsToMicro } from "@model-platform/core/kernel"
import { Layer } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Database } from "@model-platform/postgres-stores/database"
import { PgPlatformStores } from "@model-platform/postgres-stores"
import { gatewayCatalogue } from "./gatewaySupport.ts"
import { freshDatabaseUrl, startNodeServer } from "./support.ts"

/** The machine's usage report for a fast stream; at ref-chat's 2 and 6 credits per Mtok, 6040 micro-credits. */
const USAGE = { prompt_tokens: 20, completion_tokens: 1000, total_tokens: 1020 }
const USAGE_COST = 6_040n
const FAST_EVENTS = 1_500
const FAST_EVENT_CHARS = 5_500
const SLOW_EVENTS = 200
const SLOW_EVENT_MS = 20
const MESSAGES = [{ role: "user", content: "write at length" }]

interface Stub {
  readonly url: string
  readonly close: () => Promise<void>
}

/**
 * A machine streaming `ref-chat` answers: "fast" (FAST_EVENTS events of FAST_EVENT_CHARS
 * characters, written as quickly as its socket takes them, then usage and [DONE]) or "slow"
 * (SLOW_EVENTS events of 5 characters, SLOW_EVENT_MS apart, then usage and [DONE]), as the call's
 * `user` field says.
 */
const startStub = (): Promise<Stub> => {
  const chunk = (extra: Record<string, unknown>) =>
    `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", created: 1, model: "ref-chat", ...extra })}\n\n`
  const content = (text: string) => chunk({ choices: [{ index: 0, delta: { content: text }, finish_reason: null }] })
  const server = Http.createServer((req, res) => {
    const parts: Array<Buffer> = []
    req.on("data", (c: Buffer) => parts.push(c))
    req.on("end", () => {
      const body = JSON.parse(Buffer.concat(parts).toString("utf8")) as { user?: string }
      res.writeHead(200, { "content-type": "text/event-stream" })
      const fast = body.user === "fast"
      const total = fast ? FAST_EVENTS : SLOW_EVENTS
      const text = fast ? "x".repeat(FAST_EVENT_CHARS) : "word "
      let i = 0
      const next = () => {
        if (res.destroyed) return
        if (i === total) {
          res.end(chunk({ choices: [], usage: USAGE }) + "data: [DONE]\n\n")
          return
        }
        i += 1
        const more = res.write(content(text))
        if (!fast) setTimeout(next, SLOW_EVENT_MS)
        else if (more) setImmediate(next)
        else res.once("drain", next)
      }
      next()
    })
  })
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
        close: () => new Promise((r) => server.close(() => r()))
      }))
  )
}

/**
 * POSTs a streamed chat call and reads its answer 4 KB every 500 ms for its first `slowForMs`,
 * then as fast as it comes; the whole text.
 */
const readSlowly = (url: string, secret: string, user: "fast" | "slow", slowForMs: number) =>
  new Promise<string>((resolve, reject) => {
    const request = Http.request(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" }
    }, (res) => {
      const parts: Array<Buffer> = []
      const started = Date.now()
      res.pause()
      const slowly = setInterval(() => {
        const piece = res.read(4096) as Buffer | null
        if (piece !== null) parts.push(piece)
        if (Date.now() - started < slowForMs) return
        clearInterval(slowly)
        res.on("data", (c: Buffer) => parts.push(c))
        res.resume()
      }, 500)
      res.on("end", () => {
        clearInterval(slowly)
        resolve(Buffer.concat(parts).toString("utf8"))
      })
      res.on("error", reject)
    })
    request.on("error", reject)
    request.end(JSON.stringify({ model: "ref-chat", messages: MESSAGES, max_tokens: 1000, stream: true, user }))
  })

const eventsOf = (text: string) => text.split("\n\n").filter((e) => e.startsWith("data: ")).map((e) => e.slice(6))

/** The events of a call read slowly: a stream of them, else the answer shown in the failure. */
const slowEvents = async (url: string, secret: string, user: "fast" | "slow") => {
  const text = await readSlowly(url, secret, user, 3_000)
  const events = eventsOf(text)
  expect(events.length, `not a stream of events: ${JSON.stringify(text.slice(0, 1_000))}`).toBeGreaterThan(0)
  return events
}
const contentOf = (events: ReadonlyArray<string>) =>
  events.filter((e) => e.startsWith("{\"id\"")).map((e) => JSON.parse(e).choices[0]?.delta?.content ?? "").join("")

type Start = (catalogue: CatalogueConfig, streamBufferBytes?: number) => ReturnType<typeof startNodeServer>

const slowReaderSuite = (shell: string, start: Start) =>
  describe(`a slow reader on ${shell}: charged for what the machine produced`, () => {
    let stub: Stub
    let platform: Awaited<ReturnType<Start>>
    let roomy: Awaited<ReturnType<Start>>
    beforeAll(async () => {
      stub = await startStub()
      const catalogue = gatewayCatalogue([{ id: "m-a", url: stub.url, score: 1 }])
      platform = await start(catalogue)
      roomy = await start(catalogue, 16 * 1_048_576)
    }, 120_000)
    afterAll(async () => {
      await platform?.close()
      await roomy?.close()
      await stub?.close()
    })

    const api = async (on: typeof platform, secret: string, path: string) => {
      const res = await on.fetch(path, { headers: { authorization: `Bearer ${secret}` } })
      expect(res.status, path).toBe(200)
      return res.json()
    }
    /** A new account holding 1000 credits; its key. */
    const funded = async (on: typeof platform) => {
      const secret = await on.newAccount!()
      const { id } = await api(on, secret, "/me")
      await on.postCredits([{
        id: `led_${crypto.randomUUID()}`, account_id: id, machine_id: null, amount: 1_000_000_000n, type: "credit_added",
        ref: `order_${crypto.randomUUID()}`, created_at: new Date().toISOString() as never
      }])
      return secret
    }
    /** The call's usage entries once metered (the Node server meters after the answer), and the balance. */
    const charged = async (on: typeof platform, secret: string) => {
      let usage: Array<{ credits: number }> = []
      for (let i = 0; i < 100 && usage.length === 0; i++) {
        if (i > 0) await new Promise((r) => setTimeout(r, 100))
        usage = (await api(on, secret, "/credits/activity")).data.filter((e: { type: string }) => e.type === "usage")
      }
      const balance = creditsToMicro((await api(on, secret, "/credits")).total_credits)!
      return { usage: usage.map((e) => -creditsToMicro(e.credits)!), balance }
    }

    it("a reader that falls 1 MiB behind a fast stream is cut with an error event, and charged the machine's usage", async () => {
      const secret = await funded(platform)
      const events = await slowEvents(platform.url, secret, "fast")
      expect(JSON.parse(events[events.length - 1]!).error.code).toBe("client_too_slow")
      // What it got is the start of the answer, in order.
      const got = contentOf(events)
      expect(got.length).toBeGreaterThan(0)
      expect(got).toBe("x".repeat(got.length))
      const { usage, balance } = await charged(platform, secret)
      expect(usage).toEqual([USAGE_COST])
      expect(balance).toBe(1_000_000_000n - USAGE_COST)
    })

    it("with room for the answer, the slow reader gets all of it, [DONE] last, and is charged the machine's usage", async () => {
      const secret = await funded(roomy)
      const events = await slowEvents(roomy.url, secret, "fast")
      expect(events[events.length - 1]).toBe("[DONE]")
      expect(JSON.parse(events[events.length - 2]!).usage).toEqual(USAGE)
      expect(contentOf(events)).toBe("x".repeat(FAST_EVENTS * FAST_EVENT_CHARS))
      const { usage, balance } = await charged(roomy, secret)
      expect(usage).toEqual([USAGE_COST])
      expect(balance).toBe(1_000_000_000n - USAGE_COST)
    })

    it("a stream past the platform's time limit ends with an error event and is charged the estimate of what was read", async () => {
      const secret = await funded(platform)
      const events = await slowEvents(platform.url, secret, "slow")
      expect(JSON.parse(events[events.length - 1]!).error.code).toBe("stream_time_limit")
      const got = contentOf(events)
      // About 2 s of a 4 s answer.
      expect(got.length).toBeGreaterThan(0)
      expect(got.length).toBeLessThan(SLOW_EVENTS * 5)
      // The estimate (docs/gateway.md "Metering"): a token per 4 bytes of the messages and per 4 characters read.
      const estimate = BigInt(Math.ceil(JSON.stringify(MESSAGES).length / 4)) * 2n + BigInt(Math.ceil(got.length / 4)) * 6n
      const { usage, balance } = await charged(platform, secret)
      expect(usage).toEqual([estimate])
      expect(balance).toBe(1_000_000_000n - estimate)
    })
  })

const gateway = (streamBufferBytes: number | undefined) => ({
  platform: { gateway: { maxStreamMs: 2_000, ...(streamBufferBytes === undefined ? {} : { streamBufferBytes }) } }
})

slowReaderSuite("node-http, embedded Postgres", (catalogue, streamBufferBytes) =>
  startNodeServer(catalogue, PgPlatformStores.pipe(Layer.provide(Database.layer({ dataDir: Database.MEMORY }))), gateway(streamBufferBytes)))

const serverUrl = process.env.TEST_DATABASE_URL
describe.skipIf(serverUrl === undefined)("on a PostgreSQL server (TEST_DATABASE_URL)", () => {
  slowReaderSuite("node-http, PostgreSQL server", async (catalogue, streamBufferBytes) =>
    startNodeServer(
      catalogue,
      PgPlatformStores.pipe(Layer.provide(Database.layer({ databaseUrl: await freshDatabaseUrl(serverUrl!), dataDir: "" }))),
      gateway(streamBufferBytes)
    ))
})
