/**
 * The Lambda shell's logs (docs/operations.md "Logs"): JSON lines (LOG_FORMAT's default there),
 * one access line per invocation whose request id is API Gateway's requestContext.requestId and
 * the answer's X-Request-Id; a failure logged while answering carries the same id.
 */
import { KeyStore } from "@model-platform/core/keys"
import { StoreUnavailable } from "@model-platform/core/kernel"
import { loggingLayer } from "@model-platform/core/observability"
import { fixtureCatalogue } from "@model-platform/test-harness/Fixtures"
import { MemoryPlatformStores } from "@model-platform/memory-stores/MemoryPlatformStores"
import { Effect, Layer } from "effect"
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest"
import { type LambdaHandler, makeHandler } from "../src/Handler.ts"
import { invocationContext, requestToEvent, resultToResponse } from "./support.ts"

const keysDown = { now: false }
const FlakyKeys = Layer.effect(KeyStore, Effect.map(KeyStore, ({ findCaller: _joined, ...keys }) => KeyStore.of({
  ...keys,
  findByHash: (hash) =>
    keysDown.now ? Effect.die(new StoreUnavailable("KeyStore.findByHash", new Error("connect ETIMEDOUT dynamodb"))) : keys.findByHash(hash)
}))).pipe(Layer.provide(MemoryPlatformStores))

describe("Lambda logs", () => {
  let handler: LambdaHandler
  let secret: string
  const lines: Array<Record<string, any>> = []
  beforeAll(async () => {
    handler = makeHandler({
      catalogue: fixtureCatalogue,
      ownerEmail: "owner@test.local",
      stores: Layer.merge(MemoryPlatformStores, FlakyKeys),
      logging: loggingLayer({ format: "json", level: "Info" })
    })
    secret = (await handler.firstStart())!.key.secret
    vi.spyOn(console, "log").mockImplementation((...args: Array<unknown>) => {
      for (const arg of args) if (typeof arg === "string" && arg.startsWith("{")) lines.push(JSON.parse(arg))
    })
  })
  afterEach(() => {
    lines.length = 0
  })
  afterAll(async () => {
    vi.restoreAllMocks()
    await handler.dispose()
  })

  const invoke = async (path: string, headers: Record<string, string> = {}) => {
    const event = await requestToEvent(new Request(`https://api.platform.test${path}`, { headers }))
    const response = resultToResponse(await handler(event, invocationContext))
    return { response, event }
  }

  it("one JSON access line per invocation, with API Gateway's request id, which the answer carries too", async () => {
    const { response, event } = await invoke("/me", { authorization: `Bearer ${secret}` })
    expect(response.status).toBe(200)
    const id = event.requestContext.requestId
    expect(response.headers.get("x-request-id")).toBe(id)
    const access = lines.filter((l) => l.message === "request")
    expect(access).toEqual([expect.objectContaining({ level: "info", request_id: id, method: "GET", route: "/me", status: 200, account_id: expect.stringMatching(/^acct_/) })])
    expect(JSON.stringify(lines)).not.toContain(secret)
  })

  it("a client's well-formed X-Request-Id wins over API Gateway's", async () => {
    const { response } = await invoke("/models", { "x-request-id": "client-chosen-1" })
    expect(response.headers.get("x-request-id")).toBe("client-chosen-1")
    expect(lines.filter((l) => l.message === "request").map((l) => l.request_id)).toEqual(["client-chosen-1"])
  })

  it("a failure logged while answering carries the request's id", async () => {
    keysDown.now = true
    try {
      const { response, event } = await invoke("/me", { authorization: `Bearer ${secret}` })
      expect(response.status).toBe(503)
      const id = event.requestContext.requestId
      const warning = lines.find((l) => l.level === "warn")
      expect(warning).toMatchObject({ request_id: id, message: expect.stringContaining("503") })
      expect(lines.find((l) => l.message === "request")).toMatchObject({ request_id: id, status: 503 })
    } finally {
      keysDown.now = false
    }
  })
})
