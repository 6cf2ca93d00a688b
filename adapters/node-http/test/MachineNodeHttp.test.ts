/**
 * The machine clients' failure mapping against raw node:http servers that misbehave on purpose:
 * the Node shell's node:http client (MachineNodeHttp.ts) and, for the same semantics, core's
 * fetch client (MachineHttp.ts); the node:http client's body read whole (`bytes`).
 */
import { makeMachineHttp } from "@model-platform/core/gateway"
import type { MachineClient, MachineTarget } from "@model-platform/core/gateway"
import { Effect, Exit, Fiber, Stream } from "effect"
import * as Http from "node:http"
import * as V8 from "node:v8"
import * as Vm from "node:vm"
import type { AddressInfo, Socket } from "node:net"
import { afterEach, describe, expect, it } from "vitest"
import { makeMachineNodeHttp } from "../src/MachineNodeHttp.ts"

type Handler = (req: Http.IncomingMessage, res: Http.ServerResponse) => void

const servers: Array<Http.Server> = []

/** A server on a free port of 127.0.0.1; its connections are destroyed after the test. */
const serve = async (handler: Handler): Promise<{ target: MachineTarget; sockets: Array<Socket> }> => {
  const sockets: Array<Socket> = []
  const server = Http.createServer(handler)
  server.on("connection", (socket) => sockets.push(socket))
  servers.push(server)
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const port = (server.address() as AddressInfo).port
  return { target: { id: "m", base_url: `http://127.0.0.1:${port}/v1` }, sockets }
}

afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  }
})

/** A machine that sends part of an answer and then loses its connection. */
const serveCutMidBody = () =>
  serve((_req, res) => {
    res.writeHead(200, { "content-type": "application/json", "content-length": "1000" })
    res.write(`{"partial":`)
    setTimeout(() => res.socket?.destroy(), 20)
  })

const failureOf = <A>(exit: Exit.Exit<A, { readonly reason: string }>) =>
  Exit.isFailure(exit) ? exit.cause.reasons.find((r) => r._tag === "Fail")?.error : undefined

const text = (chunks: ReadonlyArray<Uint8Array>) => Buffer.concat(chunks).toString("utf8")

// A full collection on demand, without starting the test runner with --expose-gc.
V8.setFlagsFromString("--expose-gc")
const collectGarbage = Vm.runInNewContext("gc") as () => void

const waitFor = async (condition: () => boolean, ms = 2_000) => {
  const until = Date.now() + ms
  while (!condition()) {
    if (Date.now() > until) throw new Error("timed out waiting")
    await new Promise((r) => setTimeout(r, 5))
  }
}

const clients: ReadonlyArray<{ readonly name: string; readonly make: () => MachineClient["Service"] & { destroy?: () => void } }> = [
  { name: "node:http (MachineNodeHttp.ts)", make: () => makeMachineNodeHttp() },
  { name: "fetch (MachineHttp.ts)", make: () => makeMachineHttp() }
]

describe.each(clients)("machine client $name", ({ make, name }) => {
  let client: ReturnType<typeof make>
  const fresh = () => (client = make())
  afterEach(() => client?.destroy?.())

  it("posts JSON to base_url + path; any status is a response with lower-case headers; the body streams", async () => {
    let seen: { method?: string; url?: string; type?: string; body?: string } = {}
    const { target } = await serve((req, res) => {
      let body = ""
      req.on("data", (c: Buffer) => (body += c.toString()))
      req.on("end", () => {
        seen = { method: req.method!, url: req.url!, type: req.headers["content-type"]!, body }
        res.writeHead(429, { "Content-Type": "application/json", "X-Thing": "1" })
        res.end(`{"error":{"code":"busy"}}`)
      })
    })
    fresh()
    const out = await Effect.runPromise(Effect.gen(function*() {
      const response = yield* client.post(target, "/chat/completions", { model: "x", n: 1 }, { firstByteTimeoutMs: 5_000 })
      const chunks = yield* Stream.runCollect(response.body)
      return { status: response.status, headers: response.headers, body: text(Array.from(chunks)) }
    }))
    expect(seen).toEqual({ method: "POST", url: "/v1/chat/completions", type: "application/json", body: `{"model":"x","n":1}` })
    expect(out.status).toBe(429)
    expect(out.headers["content-type"]).toBe("application/json")
    expect(out.headers["x-thing"]).toBe("1")
    expect(out.body).toBe(`{"error":{"code":"busy"}}`)
  })

  it("the body is whole when read after garbage collections: the answer keeps what it reads from alive", async () => {
    // Node's fetch cancels the body of a Response that is collected; an answer read after its head
    // (admission runs in between) must not lose its body to a collection meanwhile.
    const { target } = await serve((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" })
      res.end(`{"answer":"whole"}`)
    })
    fresh()
    const response = await Effect.runPromise(client.post(target, "/chat/completions", { model: "x" }, { firstByteTimeoutMs: 5_000 }))
    for (let i = 0; i < 3; i++) {
      collectGarbage()
      // FinalizationRegistry callbacks run in a later task.
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    const chunks = await Effect.runPromise(Stream.runCollect(response.body))
    expect(text(Array.from(chunks))).toBe(`{"answer":"whole"}`)
  })

  it("resolves at the head, before the body has come: chunks arrive as they are sent", async () => {
    let release: () => void = () => undefined
    const { target } = await serve((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" })
      res.write("data: 1\n\n")
      release = () => res.end("data: [DONE]\n\n")
    })
    fresh()
    const first = await Effect.runPromise(Effect.gen(function*() {
      const response = yield* client.post(target, "/chat/completions", {}, { firstByteTimeoutMs: 5_000 })
      return yield* Stream.runHead(response.body)
    }))
    expect(first._tag === "Some" ? Buffer.from(first.value).toString() : undefined).toBe("data: 1\n\n")
    release()
  })

  it("connection refused: MachineFailure unreachable", async () => {
    const { target } = await serve(() => undefined)
    const server = servers.pop()!
    await new Promise((resolve) => server.close(resolve))
    fresh()
    const exit = await Effect.runPromiseExit(client.post(target, "/chat/completions", {}, { firstByteTimeoutMs: 5_000 }))
    expect(failureOf(exit)).toMatchObject({ _tag: "MachineFailure", machine_id: "m", reason: "unreachable" })
  })

  it("no head within firstByteTimeoutMs: MachineFailure timeout, and the request is abandoned", async () => {
    let closed = false
    const { target } = await serve((req) => {
      req.socket.on("close", () => (closed = true))
    })
    fresh()
    const started = Date.now()
    const exit = await Effect.runPromiseExit(client.post(target, "/chat/completions", {}, { firstByteTimeoutMs: 100 }))
    expect(failureOf(exit)).toMatchObject({ reason: "timeout" })
    expect(Date.now() - started).toBeLessThan(2_000)
    await waitFor(() => closed)
  })

  it("the connection destroyed mid-body: the body stream fails with MachineFailure dropped", async () => {
    const { target } = await serveCutMidBody()
    fresh()
    const exit = await Effect.runPromiseExit(Effect.gen(function*() {
      const response = yield* client.post(target, "/chat/completions", {}, { firstByteTimeoutMs: 5_000 })
      return yield* Stream.runCollect(response.body)
    }))
    expect(failureOf(exit)).toMatchObject({ _tag: "MachineFailure", reason: "dropped" })
  })

  it("interrupting the call before the head aborts the request: the machine sees its socket close", async () => {
    let arrived = false
    let closed = false
    const { target } = await serve((req) => {
      arrived = true
      req.socket.on("close", () => (closed = true))
    })
    fresh()
    const fiber = Effect.runFork(client.post(target, "/chat/completions", {}, { firstByteTimeoutMs: 60_000 }))
    await waitFor(() => arrived)
    await Effect.runPromise(Fiber.interrupt(fiber))
    await waitFor(() => closed)
  })

  it("interrupting the body's consumption mid-stream aborts the request: the machine sees its socket close", async () => {
    let closed = false
    const { target } = await serve((req, res) => {
      req.socket.on("close", () => (closed = true))
      res.writeHead(200, { "content-type": "text/event-stream" })
      res.write("data: 1\n\n")
    })
    fresh()
    let chunks = 0
    const fiber = Effect.runFork(Effect.gen(function*() {
      const response = yield* client.post(target, "/chat/completions", {}, { firstByteTimeoutMs: 5_000 })
      yield* Stream.runForEach(response.body, () => Effect.sync(() => void chunks++))
    }))
    await waitFor(() => chunks === 1)
    await Effect.runPromise(Fiber.interrupt(fiber))
    await waitFor(() => closed)
  })

  // The whole body at once (MachineClient.ts `bytes`), where a client offers it.
  const bytesOf = (response: { readonly bytes?: Effect.Effect<Uint8Array, { readonly reason: string }> }) =>
    response.bytes === undefined ? Effect.die(new Error(`${name} offers no bytes`)) : response.bytes

  it.runIf(name.startsWith("node:http"))("the body read whole: every chunk, in order, once the answer has ended", async () => {
    const { target } = await serve((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" })
      res.write(`{"a":`)
      setTimeout(() => res.end(`"${"x".repeat(100_000)}"}`), 20)
    })
    fresh()
    const body = await Effect.runPromise(Effect.gen(function*() {
      const response = yield* client.post(target, "/chat/completions", {}, { firstByteTimeoutMs: 5_000 })
      return yield* bytesOf(response)
    }))
    expect(JSON.parse(Buffer.from(body).toString("utf8"))).toEqual({ a: "x".repeat(100_000) })
  })

  it.runIf(name.startsWith("node:http"))("the body read whole, its connection destroyed mid-body: MachineFailure dropped", async () => {
    const { target } = await serveCutMidBody()
    fresh()
    const exit = await Effect.runPromiseExit(Effect.gen(function*() {
      const response = yield* client.post(target, "/chat/completions", {}, { firstByteTimeoutMs: 5_000 })
      return yield* bytesOf(response)
    }))
    expect(failureOf(exit)).toMatchObject({ _tag: "MachineFailure", machine_id: "m", reason: "dropped" })
  })

  it.runIf(name.startsWith("node:http"))("interrupting the body read whole aborts the request: the machine sees its socket close", async () => {
    let closed = false
    let sent = false
    const { target } = await serve((req, res) => {
      req.socket.on("close", () => (closed = true))
      res.writeHead(200, { "content-type": "application/json" })
      res.write(`{"partial":`)
      sent = true
    })
    fresh()
    const fiber = Effect.runFork(Effect.gen(function*() {
      const response = yield* client.post(target, "/chat/completions", {}, { firstByteTimeoutMs: 5_000 })
      return yield* bytesOf(response)
    }))
    await waitFor(() => sent)
    await new Promise((r) => setTimeout(r, 20))
    await Effect.runPromise(Fiber.interrupt(fiber))
    await waitFor(() => closed)
  })

  // (undici's global pool sometimes opens a second connection here; the keep-alive Agent must not.)
  it.runIf(name.startsWith("node:http"))("keeps one connection alive across sequential calls", async () => {
    const { target, sockets } = await serve((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" }).end("{}")
    })
    fresh()
    for (let i = 0; i < 5; i++) {
      await Effect.runPromise(Effect.gen(function*() {
        const response = yield* client.post(target, "/chat/completions", {}, { firstByteTimeoutMs: 5_000 })
        yield* Stream.runDrain(response.body)
      }))
    }
    expect(sockets).toHaveLength(1)
  })

  it("models: the ids of GET {base_url}/models; a bad status, a bad body or no answer in time is a failure", async () => {
    let mode = "ok"
    const { target } = await serve((req, res) => {
      expect(req.url).toBe("/v1/models")
      if (mode === "ok") res.writeHead(200).end(JSON.stringify({ data: [{ id: "a" }, { id: "b" }, { nope: 1 }] }))
      else if (mode === "500") res.writeHead(500).end("{}")
      else if (mode === "text") res.writeHead(200).end("not json")
      // "slow": never answers
    })
    fresh()
    expect(await Effect.runPromise(client.models(target, 1_000))).toEqual(["a", "b"])
    mode = "500"
    expect(failureOf(await Effect.runPromiseExit(client.models(target, 1_000)))).toMatchObject({ reason: "dropped" })
    mode = "text"
    expect(failureOf(await Effect.runPromiseExit(client.models(target, 1_000)))).toMatchObject({ reason: "dropped" })
    mode = "slow"
    expect(failureOf(await Effect.runPromiseExit(client.models(target, 100)))).toMatchObject({ reason: "timeout" })
  })
})
