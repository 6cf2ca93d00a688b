/**
 * Lambda response streaming (Streaming.ts) on a shim of the runtime's `awslambda` global
 * (awslambdaShim.ts): bodies arrive chunk by chunk as they are produced, status, headers and
 * cookies travel in the prelude, a slow client holds the producer back, a client that goes away
 * stops the producer, and the platform's own answers stream as they are buffered; a dataset
 * item's bytes go out chunk by chunk as the blob store reads them (issue 22, finding 7).
 */
import { fixtureCatalogue } from "@model-platform/test-harness/Fixtures"
import { MemoryPlatformStores as MemoryStores } from "@model-platform/memory-stores/MemoryPlatformStores"
import { Cause, Effect, Layer, Stream } from "effect"
import { HttpRouter, HttpServer, HttpServerResponse } from "effect/http"
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest"
import { makeHandler } from "../src/Handler.ts"
import { makeStreamHandler, responseMetadata, streamifyResponse, writeResponse } from "../src/Streaming.ts"
import { awslambdaShim, FakeResponseStream, INTEGRATION_CONTENT_TYPE, installAwsLambdaShim, invokeStreaming } from "./awslambdaShim.ts"
import { MAX_BLOB_CHUNK_BYTES } from "@model-platform/core/datasets"
import { patternBytes } from "@model-platform/contract-kit/BlobFixtures"
import { createHash } from "node:crypto"
import { invocationContext, invoke, requestToEvent } from "./support.ts"

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
const encoder = new TextEncoder()

const event = (path: string, init?: RequestInit) => requestToEvent(new Request(`https://stream.platform.test${path}`, init))

/** A body that produces `count` SSE events, one every `delayMs`, recording when each was produced. */
const slowBody = (count: number, delayMs: number) => {
  const produced: Array<number> = []
  let cancelled: unknown
  let index = 0
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (index === count) return controller.close()
      await sleep(delayMs)
      produced.push(performance.now())
      controller.enqueue(encoder.encode(`data: ${index++}\n\n`))
    },
    cancel(reason) {
      cancelled = reason ?? "cancelled"
    }
  })
  return { body, produced, cancelled: () => cancelled }
}

const sseHeaders = () => {
  const headers = new Headers({ "content-type": "text/event-stream", "cache-control": "no-cache", "x-request-id": "req_1" })
  headers.append("x-tag", "a")
  headers.append("x-tag", "b")
  headers.append("set-cookie", "session=1; HttpOnly")
  headers.append("set-cookie", "theme=dark")
  headers.set("content-length", "999")
  return headers
}

beforeAll(() => {
  installAwsLambdaShim()
})
afterAll(() => {
  vi.unstubAllGlobals()
})

describe("writeResponse", () => {
  it("streams a body chunk by chunk, in order, as it is produced, with status, headers and cookies first", async () => {
    const { body, produced } = slowBody(5, 40)
    const handler = streamifyResponse(makeStreamHandler(async () => new Response(body, { status: 201, headers: sseHeaders() })))
    expect(awslambdaShim.streamingHandlers.has(handler)).toBe(true)

    const { stream, done } = invokeStreaming(handler, await event("/events"))
    await done

    expect(stream.contentType).toBe(INTEGRATION_CONTENT_TYPE)
    expect(stream.prelude).toEqual({
      statusCode: 201,
      headers: { "content-type": "text/event-stream", "cache-control": "no-cache", "x-request-id": "req_1", "x-tag": "a, b" },
      cookies: ["session=1; HttpOnly", "theme=dark"]
    })
    // The prelude went out before the body produced anything.
    expect(stream.preludeAt).toBeLessThan(produced[0]!)
    // One write per produced chunk, in order, each one before the next was produced.
    expect(stream.chunks.map((chunk) => chunk.bytes.toString())).toEqual([0, 1, 2, 3, 4].map((i) => `data: ${i}\n\n`))
    for (let i = 0; i < 4; i++) expect(stream.chunks[i]!.at).toBeLessThan(produced[i + 1]!)
    // Not buffered: the first chunk reached the client before the last one was produced.
    expect(stream.chunks[0]!.at).toBeLessThan(produced[4]! - 100)
    expect(stream.writableFinished).toBe(true)
  })

  it("a client that goes away cancels the body, which stops producing, and the handler returns", async () => {
    let pulls = 0
    let cancelled: unknown
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const index = pulls++
        await sleep(20)
        controller.enqueue(encoder.encode(`data: ${index}\n\n`))
      },
      cancel(reason) {
        cancelled = reason
      }
    })
    const stream = new FakeResponseStream()
    const outcome = writeResponse(new Response(body, { headers: { "content-type": "text/event-stream" } }), stream)
    await stream.waitForChunks(3)
    stream.abort()
    const started = performance.now()
    expect(await outcome).toBe("client-gone")
    expect(performance.now() - started).toBeLessThan(200)
    expect(cancelled).toBeInstanceOf(Error)
    // No pull started after the cancel (one may have been under way).
    const pullsAtCancel = pulls
    await sleep(100)
    expect(pulls).toBe(pullsAtCancel)
    expect(stream.chunks.length).toBeGreaterThanOrEqual(3)
  })

  it("a slow client holds the producer back instead of the body piling up in memory", async () => {
    const total = 30
    const stream = new FakeResponseStream({ highWaterMark: 1, writeDelayMs: 5 })
    let produced = 0
    let maxAhead = 0
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (produced === total) return controller.close()
        maxAhead = Math.max(maxAhead, produced - stream.chunks.length)
        controller.enqueue(encoder.encode(`chunk ${String(produced++).padStart(2, "0")};`))
      }
    }, { highWaterMark: 0 })
    expect(await writeResponse(new Response(body), stream)).toBe("completed")
    expect(stream.text).toBe(Array.from({ length: total }, (_, i) => `chunk ${String(i).padStart(2, "0")};`).join(""))
    // At most a couple of chunks between what was produced and what the client took.
    expect(maxAhead).toBeLessThanOrEqual(3)
  })

  it("an empty body still sends status and headers, and ends the stream", async () => {
    const stream = new FakeResponseStream()
    expect(await writeResponse(new Response(null, { status: 204, headers: { "x-empty": "yes" } }), stream)).toBe("completed")
    expect(stream.prelude).toEqual({ statusCode: 204, headers: { "x-empty": "yes" }, cookies: [] })
    expect(stream.chunks).toEqual([])
    expect(stream.writableFinished).toBe(true)
  })

  it("a body that fails half way ends the stream after what was sent", async () => {
    let index = 0
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (index === 2) return controller.error(new Error("the model went away"))
        controller.enqueue(encoder.encode(`data: ${index++}\n\n`))
      }
    })
    const consoleError = vi.spyOn(console, "error").mockImplementation(() => undefined)
    try {
      const stream = new FakeResponseStream()
      expect(await writeResponse(new Response(body), stream)).toBe("body-failed")
      expect(stream.text).toBe("data: 0\n\ndata: 1\n\n")
      expect(stream.writableFinished).toBe(true)
      expect(consoleError).toHaveBeenCalledOnce()
    } finally {
      consoleError.mockRestore()
    }
  })

  it("metadata leaves the body's framing to the stream and Set-Cookie to cookies", () => {
    expect(responseMetadata(new Response("x", { headers: sseHeaders() }))).toEqual({
      statusCode: 200,
      headers: { "content-type": "text/event-stream", "cache-control": "no-cache", "x-request-id": "req_1", "x-tag": "a, b" },
      cookies: ["session=1; HttpOnly", "theme=dark"]
    })
  })
})

describe("an Effect web handler streaming SSE", () => {
  it("arrives event by event, and a client gone interrupts the Effect stream", async () => {
    const exits: Array<string> = []
    const events = Stream.tick("30 millis").pipe(
      Stream.zipWithIndex,
      Stream.map(([, index]) => `data: {"n":${index}}\n\n`),
      Stream.encodeText,
      Stream.onExit((exit) =>
        Effect.sync(() => exits.push(exit._tag === "Failure" && Cause.hasInterrupts(exit.cause) ? "interrupted" : exit._tag))
      )
    )
    const route = HttpRouter.add("GET", "/events", HttpServerResponse.stream(events, { contentType: "text/event-stream" }))
    const web = HttpRouter.toWebHandler(route.pipe(Layer.provide(HttpServer.layerServices)), { disableLogger: true })
    try {
      const { payloadV2 } = await import("../src/Events.ts")
      const handler = makeStreamHandler(async (event) => web.handler(payloadV2.toRequest(event)))
      const { stream, done } = invokeStreaming(handler, await event("/events"))
      await stream.waitForChunks(3)
      expect(stream.prelude?.statusCode).toBe(200)
      expect(stream.prelude?.headers["content-type"]).toBe("text/event-stream")
      expect(stream.chunks.slice(0, 3).map((chunk) => chunk.bytes.toString())).toEqual([0, 1, 2].map((n) => `data: {"n":${n}}\n\n`))
      // Chunks arrive spread over time, not in one piece.
      expect(stream.chunks[2]!.at - stream.chunks[0]!.at).toBeGreaterThan(40)
      stream.abort()
      await done
      await vi.waitFor(() => expect(exits).toEqual(["interrupted"]), { timeout: 1_000 })
    } finally {
      await web.dispose()
    }
  })
})

describe("the platform over a response stream", () => {
  const platform = makeHandler({ catalogue: fixtureCatalogue, ownerEmail: "owner@test.local", stores: MemoryStores })
  const streamHandler = streamifyResponse(makeStreamHandler(platform.respond))
  afterAll(() => platform.dispose())

  it("answers what the buffered handler answers: status, headers and body", async () => {
    const owner = await platform.firstStart()
    const authorization = `Bearer ${owner?.key.secret}`
    for (const [path, headers] of [["/models", {}], ["/me", { authorization }], ["/me", {}], ["/no/such/route", {}]] as const) {
      const buffered = await platform(await event(path, { headers }), invocationContext)
      const { stream, done } = invokeStreaming(streamHandler, await event(path, { headers }))
      await done
      expect(stream.prelude?.statusCode, path).toBe(buffered.statusCode)
      expect(stream.prelude?.headers["content-type"], path).toBe(buffered.headers?.["content-type"])
      // last_used_at is the time of each request
      const sameButTouch = (text: string | undefined) => text?.replace(/"last_used_at":"[^"]+"/g, "\"last_used_at\":\"…\"")
      expect(sameButTouch(stream.text), path).toBe(sameButTouch(buffered.body))
      expect(stream.writableFinished).toBe(true)
    }
  })

  it("a dataset item goes out chunk by chunk as the store reads it, every byte; API Gateway's buffered answer has the same bytes", async () => {
    const owner = await platform.firstStart()
    const authorization = `Bearer ${owner?.key.secret}`
    const request = (path: string, init: RequestInit = {}) => new Request(`https://stream.platform.test${path}`, init)
    const dataset = await (await invoke(platform, request("/datasets", {
      method: "POST",
      headers: { authorization, "content-type": "application/json" },
      body: JSON.stringify({ name: "takes", kind: "audio" })
    }))).json()
    // Within a Lambda request's 6 MB, base64 included.
    const bytes = patternBytes(3 * 1024 * 1024, 11)
    const sha = createHash("sha256").update(bytes).digest("hex")
    const uploaded = await invoke(platform, request(`/datasets/${dataset.id}/items?name=take.wav`, {
      method: "POST",
      headers: { authorization, "content-type": "audio/wav", "x-content-sha256": sha },
      body: new Uint8Array(bytes)
    }))
    expect(uploaded.status).toBe(201)
    const item = await uploaded.json()
    const path = `/datasets/${dataset.id}/items/${item.id}/content`

    const { stream, done } = invokeStreaming(streamHandler, await event(path, { headers: { authorization } }))
    await done
    expect(stream.prelude?.statusCode).toBe(200)
    expect(stream.prelude?.headers).toMatchObject({ "content-type": "audio/wav", "x-content-sha256": sha })
    const received = Buffer.concat(stream.chunks.map((chunk) => chunk.bytes))
    expect(createHash("sha256").update(received).digest("hex")).toBe(sha)
    // Read whole, the item would leave as one write of 3 MiB.
    expect(stream.chunks.length).toBeGreaterThanOrEqual(bytes.byteLength / MAX_BLOB_CHUNK_BYTES)
    expect(Math.max(...stream.chunks.map((chunk) => chunk.bytes.byteLength))).toBeLessThanOrEqual(MAX_BLOB_CHUNK_BYTES)

    const buffered = await invoke(platform, request(path, { headers: { authorization } }))
    expect(buffered.status).toBe(200)
    expect(createHash("sha256").update(new Uint8Array(await buffered.arrayBuffer())).digest("hex")).toBe(sha)
  })

  it("a malformed event answers 400 in the platform shape on the stream too", async () => {
    const good = await event("/models")
    const { stream, done } = invokeStreaming(streamHandler, { ...good, headers: { ...good.headers, "bad name": "x" } })
    await done
    expect(stream.prelude?.statusCode).toBe(400)
    expect(JSON.parse(stream.text)).toMatchObject({ error: { code: "invalid_request" } })
  })
})
