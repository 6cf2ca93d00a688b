/**
 * The request boundary over HTTP, run unchanged by every shell beside the shared HTTP suite
 * (issue 10, findings 2 to 5; docs/limits.md): body sizes refused with 413 before the body is read
 * whole, JSON nesting depth, header sizes (431), the text rule (NUL, lone surrogates) on bodies,
 * queries and paths, and path ids that are never a 405 or a 500.
 *
 * Bytes such as %00 and dot segments must reach the server as sent, so a shell whose client would
 * normalise them (fetch) passes a `raw` sender (Node: node:http on a socket; Lambda: the event's
 * rawPath); without one, requests go through `fetch` with streamed bodies.
 */
import { inferenceBodyLimit, MAX_HEADER_BYTES, MAX_MANAGEMENT_BODY_BYTES } from "@model-platform/core/kernel"
import { request as httpRequest } from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { fixtureCatalogue } from "./Fixtures.ts"
import type { ShellUnderTest } from "./HttpSuite.ts"

export interface RawInit {
  readonly headers?: Readonly<Record<string, string>>
  /** Sent as it comes, without a Content-Length unless `headers` has one (chunked on a socket). */
  readonly body?: AsyncIterable<Uint8Array> | Uint8Array | string
}

export interface RawAnswer {
  readonly status: number
  readonly headers: Headers
  readonly text: string
}

/** Sends `target` (path and query) exactly as given: no dot segment resolved, no byte re-encoded. */
export type RawSender = (method: string, target: string, init?: RawInit) => Promise<RawAnswer>

export interface BoundaryShell extends ShellUnderTest {
  readonly raw?: RawSender
}

export interface BoundaryOptions {
  /**
   * Bytes of the "huge" bodies: 200 MB over a socket (issue 10's POST /quotes); a shell holding
   * the whole body in memory first (Lambda, whose API Gateway stops at 10 MB) sends less.
   */
  readonly hugeBodyBytes?: number
  /** The shell takes the whole body before the platform sees it (Lambda: API Gateway does). */
  readonly buffersBody?: boolean
}

const encoder = new TextEncoder()

/**
 * A valid JSON body of about `bytes` bytes: `prefix` + `"pad":"aaa..."` + `}`, in 64 KiB chunks.
 * `pulled` counts the bytes the receiver has asked for so far.
 */
async function* paddedJson(prefix: string, bytes: number, pulled = { bytes: 0 }): AsyncIterable<Uint8Array> {
  yield encoder.encode(`${prefix},"pad":"`)
  const chunk = new Uint8Array(64 * 1024).fill(0x61)
  for (let sent = 0; sent < bytes; sent += chunk.length) {
    pulled.bytes += chunk.length
    yield chunk
  }
  yield encoder.encode(`"}`)
}

export const readAll = async (body: AsyncIterable<Uint8Array> | Uint8Array | string): Promise<Uint8Array> => {
  if (typeof body === "string") return encoder.encode(body)
  if (body instanceof Uint8Array) return body
  const parts: Array<Uint8Array> = []
  for await (const part of body) parts.push(part)
  return Buffer.concat(parts)
}

/** A web stream pulled from an async iterable (lib ES2023 has no ReadableStream.from). */
const toStream = (body: AsyncIterable<Uint8Array>): ReadableStream<Uint8Array> => {
  const iterator = body[Symbol.asyncIterator]()
  return new ReadableStream<Uint8Array>({
    pull: async (controller) => {
      const next = await iterator.next()
      if (next.done === true) controller.close()
      else controller.enqueue(next.value)
    },
    cancel: async () => {
      await iterator.return?.()
    }
  })
}

/** A raw sender over node:http to a server at `baseUrl`: the target goes on the wire as given. */
export const nodeRawSender = (baseUrl: string): RawSender => (method, target, init = {}) =>
  new Promise((resolve, reject) => {
    const url = new URL(baseUrl)
    const req = httpRequest({ host: url.hostname, port: url.port, method, path: target, headers: { ...init.headers } }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (chunk: Buffer) => chunks.push(chunk))
      res.on("end", () => {
        const headers = new Headers()
        for (const [name, value] of Object.entries(res.headers)) {
          if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(", ") : value)
        }
        resolve({ status: res.statusCode ?? 0, headers, text: Buffer.concat(chunks).toString("utf8") })
        // The server may answer before the body is sent: stop sending.
        req.destroy()
      })
    })
    // A server that answered and closed while the body was still going: the answer already came.
    req.on("error", (error) => reject(error))
    const body = init.body
    if (body === undefined) return req.end()
    if (typeof body === "string" || body instanceof Uint8Array) return req.end(body)
    void (async () => {
      for await (const chunk of body) {
        if (req.destroyed) return
        if (!req.write(chunk)) {
          await new Promise((drained) => {
            req.once("drain", drained)
            req.once("close", drained)
          })
        }
      }
      req.end()
    })().catch(() => undefined)
  })

export const boundarySuite = (shell: string, start: () => Promise<BoundaryShell>, options: BoundaryOptions = {}) =>
  describe(`request boundary on ${shell}`, () => {
    let platform: BoundaryShell
    beforeAll(async () => {
      platform = await start()
    })
    afterAll(async () => {
      await platform?.close()
    })
    const huge = options.hugeBodyBytes ?? 200 * 1000 * 1000

    /** Through the shell's raw sender, else fetch (bodies streamed, so nothing is buffered first). */
    const send = async (method: string, target: string, init: RawInit & { key?: string } = {}): Promise<RawAnswer & { json: any }> => {
      const headers: Record<string, string> = { ...init.headers }
      if (init.key !== undefined) headers.authorization = `Bearer ${init.key}`
      if (init.body !== undefined) headers["content-type"] ??= "application/json"
      const answer = platform.raw !== undefined
        ? await platform.raw(method, target, { headers, ...(init.body === undefined ? {} : { body: init.body }) })
        : await viaFetch(method, target, headers, init.body)
      expect(answer.text.length, `${method} ${target.slice(0, 60)} answered ${answer.status} with an empty body`).toBeGreaterThan(0)
      return { ...answer, json: JSON.parse(answer.text) }
    }
    const viaFetch = async (method: string, target: string, headers: Record<string, string>, body: RawInit["body"]) => {
      const streamed = body !== undefined && typeof body !== "string" && !(body instanceof Uint8Array)
      const response = await platform.fetch(target, {
        method,
        headers,
        ...(body === undefined ? {} : { body: streamed ? toStream(body as AsyncIterable<Uint8Array>) : body }),
        ...(streamed ? { duplex: "half" } : {})
      } as RequestInit)
      return { status: response.status, headers: response.headers, text: await response.text() }
    }
    const owner = () => platform.ownerSecret
    const json = (value: unknown) => JSON.stringify(value)
    const expectPlatformError = (answer: { status: number; json: any }, status: number, code: string) => {
      expect(answer.status, JSON.stringify(answer.json)).toBe(status)
      expect(answer.json).toEqual({ error: { code, message: expect.any(String) } })
    }
    const expectInferenceError = (answer: { status: number; json: any }, status: number, code: string) => {
      expect(answer.status, JSON.stringify(answer.json)).toBe(status)
      expect(answer.json).toEqual({ error: { message: expect.any(String), type: expect.any(String), code } })
    }
    const keyNames = async () => (await send("GET", "/keys", { key: owner() })).json.data.map((k: any) => k.name) as Array<string>
    const orderCount = async () => (await send("GET", "/orders?limit=200", { key: owner() })).json.data.length as number

    describe("body size (finding 2)", () => {
      /** The body was not read whole: the server stopped taking bytes long before the end. */
      const expectNotReadWhole = (pulled: { bytes: number }) => {
        if (options.buffersBody !== true) expect(pulled.bytes).toBeLessThan(Math.max(huge / 4, 32 * 1024 * 1024))
      }
      it(`POST /quotes with a ${huge}-byte body declared in Content-Length -> 413 payload_too_large, at once`, async () => {
        const started = Date.now()
        const pulled = { bytes: 0 }
        const answer = await send("POST", "/quotes", {
          headers: { "content-length": String(huge + 64) },
          body: paddedJson(`{"type":"credits","amount_usd":10`, huge, pulled)
        })
        expectPlatformError(answer, 413, "payload_too_large")
        expect(Date.now() - started).toBeLessThan(3_000)
        expectNotReadWhole(pulled)
      })
      it(`POST /quotes with a ${huge}-byte body sent without a length -> 413 while reading, at once`, async () => {
        const started = Date.now()
        const pulled = { bytes: 0 }
        const answer = await send("POST", "/quotes", { body: paddedJson(`{"type":"credits","amount_usd":10`, huge, pulled) })
        expectPlatformError(answer, 413, "payload_too_large")
        expect(Date.now() - started).toBeLessThan(3_000)
        expectNotReadWhole(pulled)
      })
      it("POST /orders with a body over the management size -> 413, and no order is made", async () => {
        const before = await orderCount()
        const answer = await send("POST", "/orders", {
          key: owner(),
          body: paddedJson(`{"type":"credits","amount_usd":10`, Math.min(huge, 20 * 1000 * 1000))
        })
        expectPlatformError(answer, 413, "payload_too_large")
        expect(await orderCount()).toBe(before)
      })
      it("a management body just under the size is served", async () => {
        const answer = await send("POST", "/quotes", {
          body: await readAll(paddedJson(`{"type":"credits","amount_usd":10`, MAX_MANAGEMENT_BODY_BYTES - 64 * 1024))
        })
        expect(answer.status, answer.text).toBe(200)
      })
      const inferenceLimit = inferenceBodyLimit(fixtureCatalogue)
      it(`a /v1 body over the catalogue's size (${inferenceLimit} bytes) -> 413 in the inference shape`, async () => {
        const body = paddedJson(`{"model":"chat-small","messages":[{"role":"user","content":"hi"}]`, inferenceLimit)
        expectInferenceError(await send("POST", "/v1/chat/completions", { key: owner(), body }), 413, "payload_too_large")
        const forecast = paddedJson(`{"model":"forecast-small","history":[1,2,3],"horizon":2`, inferenceLimit)
        expectInferenceError(await send("POST", "/forecasts", { key: owner(), body: forecast }), 413, "payload_too_large")
      })
      it("a /v1 body larger than the management size but within the catalogue's reaches the gateway", async () => {
        // An unknown model, so that no machine is called: the gateway's own 404 shows it got the body.
        const body = await readAll(paddedJson(`{"model":"no-such-model","messages":[{"role":"user","content":"hi"}]`, 200 * 1024))
        expectInferenceError(await send("POST", "/v1/chat/completions", { key: owner(), body }), 404, "model_not_found")
      })
    })

    describe("JSON nesting depth (finding 3)", () => {
      it("POST /keys with a field nested 5000 deep -> 400 invalid_request, and no key is made", async () => {
        const deep = "[".repeat(5000) + "]".repeat(5000)
        const answer = await send("POST", "/keys", { key: owner(), body: `{"name":"deep-key","extra":${deep}}` })
        expectPlatformError(answer, 400, "invalid_request")
        expect(answer.json.error.message).toMatch(/deeper than 64/)
        expect(await keyNames()).not.toContain("deep-key")
      })
      it("a body nested 64 deep is served", async () => {
        const answer = await send("POST", "/quotes", {
          body: `{"type":"credits","amount_usd":10,"extra":${"[".repeat(63)}${"]".repeat(63)}}`
        })
        expect(answer.status, answer.text).toBe(200)
      })
    })

    describe("header sizes", () => {
      const big = "a".repeat(MAX_HEADER_BYTES + 1024)
      it("headers over the limit -> 431 headers_too_large in the platform shape", async () => {
        expectPlatformError(await send("GET", "/me", { key: owner(), headers: { "x-padding": big } }), 431, "headers_too_large")
      })
      it("headers over the limit under /v1 -> 431 in the inference shape", async () => {
        expectInferenceError(await send("GET", "/v1/models", { headers: { "x-padding": big } }), 431, "headers_too_large")
      })
      it("headers just under the limit are served", async () => {
        const answer = await send("GET", "/me", { key: owner(), headers: { "x-padding": "a".repeat(MAX_HEADER_BYTES - 2048) } })
        expect(answer.status, answer.text).toBe(200)
      })
    })

    describe("text at the boundary (findings 3 and 5)", () => {
      it("POST /keys with NUL in the name -> 400 naming the field, and nothing is stored", async () => {
        const answer = await send("POST", "/keys", { key: owner(), body: json({ name: "nul-\u0000-key" }) })
        expectPlatformError(answer, 400, "invalid_request")
        expect(answer.json.error.message).toContain(`"name"`)
        expect(answer.json.error.message).toContain("NUL")
        expect((await keyNames()).some((name) => name.startsWith("nul-"))).toBe(false)
      })
      it("POST /keys with a lone surrogate in the name -> 400, never echoed then stored as U+FFFD", async () => {
        const answer = await send("POST", "/keys", { key: owner(), body: `{"name":"lone-\\ud800-key"}` })
        expectPlatformError(answer, 400, "invalid_request")
        expect(answer.json.error.message).toContain(`"name"`)
        expect((await keyNames()).some((name) => name.startsWith("lone-"))).toBe(false)
      })
      it("a name with valid non-ASCII text (a surrogate pair) is stored and listed as sent", async () => {
        const name = "emoji-\u{1F600}-é-名"
        const answer = await send("POST", "/keys", { key: owner(), body: json({ name }) })
        expect(answer.status, answer.text).toBe(200)
        expect(answer.json.name).toBe(name)
        expect(await keyNames()).toContain(name)
      })
      it("POST /_simulated/deposits with NUL in `to` -> 400 naming the field", async () => {
        const answer = await send("POST", "/_simulated/deposits", {
          key: owner(),
          body: json({ to: "0xab\u0000cd", amount: "1", chain: "base", token: "USDC" })
        })
        expectPlatformError(answer, 400, "invalid_request")
        expect(answer.json.error.message).toContain(`"to"`)
      })
      it("POST /orders with NUL in an id of the body -> 400 naming the field, and no order is made", async () => {
        const before = await orderCount()
        const answer = await send("POST", "/orders", { key: owner(), body: json({ type: "package", package_id: "p\u0000" }) })
        expectPlatformError(answer, 400, "invalid_request")
        expect(answer.json.error.message).toContain(`"package_id"`)
        expect(await orderCount()).toBe(before)
      })
      it("a query value with NUL or that is not UTF-8 -> 400 naming the query", async () => {
        for (const target of ["/route?model=%00", "/machines?region=%ff", "/route?model=chat-small&region=a%E0%A4%A"]) {
          const answer = await send("GET", target)
          expectPlatformError(answer, 400, "invalid_request")
          expect(answer.json.error.message).toMatch(/query/)
        }
      })
    })

    describe("path ids (findings 3 and 4)", () => {
      const malformed: ReadonlyArray<readonly [string, string]> = [
        ["GET", "/orders/%00"],
        ["GET", "/orders/ord_%00x"],
        ["GET", "/checkout/%00"],
        ["GET", "/billing/receipts/%00"],
        ["DELETE", "/keys/%00"],
        ["POST", "/orders/%00/pay"],
        ["GET", "/orders/%ff%fe"],
        ["GET", "/orders/%E0%A4%A"],
        ["GET", "/models/%ED%A0%80"],
        ["GET", "/v1/models/%00"]
      ]
      for (const [method, target] of malformed) {
        it(`${method} ${target} -> 400 invalid_request in its surface's shape, never a 405 or a 500`, async () => {
          const answer = await send(method, target, { key: owner(), ...(method === "POST" ? { body: json({ method: "card" }) } : {}) })
          if (target.startsWith("/v1/")) expectInferenceError(answer, 400, "invalid_request")
          else expectPlatformError(answer, 400, "invalid_request")
          expect(answer.json.error.message).toMatch(/path/)
        })
      }
      it("GET /orders/<200 x a> -> 404: an id longer than any id names nothing (not a 405 naming GET)", async () => {
        const answer = await send("GET", `/orders/${"a".repeat(200)}`, { key: owner() })
        expectPlatformError(answer, 404, "not_found")
        const head = await send("DELETE", `/keys/${"k".repeat(300)}`, { key: owner() })
        expectPlatformError(head, 404, "not_found")
      })
      it("an id of the longest length (128) reaches its handler: 404 order_not_found", async () => {
        expectPlatformError(await send("GET", `/orders/${"a".repeat(128)}`, { key: owner() }), 404, "order_not_found")
      })
      it("dot segments are resolved as fetch clients do: GET /./me and GET /orders/../keys are served", async () => {
        const me = await send("GET", "/./me", { key: owner() })
        expect(me.status, me.text).toBe(200)
        expect(me.json.email).toBeDefined()
        const keys = await send("GET", "/orders/../keys", { key: owner() })
        expect(keys.status, keys.text).toBe(200)
        expect(Array.isArray(keys.json.data)).toBe(true)
      })
      it("a 405 only ever names methods other than the one sent", async () => {
        const cases: ReadonlyArray<readonly [string, string]> = [
          ["DELETE", "/orders/ord_x"],
          ["PUT", "/keys"],
          ["GET", "/orders/ord_x/pay"],
          ["POST", "/me"],
          ["GET", "/v1/chat/completions"]
        ]
        const notAllowed = async (method: string, target: string) => {
          const answer = await send(method, target, { key: owner() })
          const allowed = (answer.headers.get("allow") ?? "").split(/,\s*/)
          expect(allowed, `${method} ${target}: ${answer.text}`).not.toContain(method)
          expect(answer.json.error?.message ?? "").not.toMatch(new RegExp(`use (?:.* or )?${method}\\b`))
          return answer
        }
        for (const [method, target] of cases) expect((await notAllowed(method, target)).status).toBe(405)
        // Each of these once answered "GET is not allowed on ...; use GET."
        for (const target of [`/orders/${"a".repeat(200)}`, "/./me", "/orders/../keys"]) {
          expect((await notAllowed("GET", target)).status).not.toBe(405)
        }
      })
    })
  })
