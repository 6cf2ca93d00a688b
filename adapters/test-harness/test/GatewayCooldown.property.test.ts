/**
 * Issue 10, finding 1: no sequence of requests from one key can cool a machine down. The machine
 * here is healthy for every well-formed call and fails, in every way a machine can fail, on calls
 * carrying a poison (as a real machine resets a body above its own size limit, or crashes
 * on an input): no connection, no answer in time, retryable statuses, a body that breaks off or is
 * not JSON, a stream that breaks after its head, a forecast of nulls. Whatever one key sends, in
 * any order, the machine stays in service (the gateway's canaries pass) and another key is served.
 * And a machine that really fails (every call) is cooled down, by its canaries.
 */
import type { Endpoint } from "@model-platform/core/gateway"
import { Gateway } from "@model-platform/core/gateway"
import { Effect } from "effect"
import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { callOnce, newKey, type Poison, poisoned, POISONS, startStubGateway } from "./gatewayStub.ts"

interface Call {
  readonly endpoint: Endpoint
  readonly stream: boolean
  readonly poison: Poison | undefined
}

const bodyOf = (call: Call): Record<string, unknown> => {
  const body = (() => {
    switch (call.endpoint) {
      case "/v1/chat/completions":
        return { model: "chat", messages: [{ role: "user", content: "hi" }], ...(call.stream ? { stream: true } : {}) }
      case "/v1/embeddings":
        return { model: "embed", input: "hi" }
      default:
        return { model: "forecast", history: [1, 2, 3], horizon: 1 }
    }
  })()
  return call.poison === undefined ? body : poisoned(body, call.poison)
}

const callArb: fc.Arbitrary<Call> = fc.record({
  endpoint: fc.constantFrom<Endpoint>("/v1/chat/completions", "/v1/embeddings", "/v1/forecasts"),
  stream: fc.boolean(),
  poison: fc.option(fc.constantFrom(...POISONS), { nil: undefined, freq: 5 })
}).map((c) => ({ ...c, stream: c.endpoint === "/v1/chat/completions" && c.stream }))

describe("gateway failure accounting (issue 10, finding 1)", () => {
  it("no sequence of requests from one key cools a machine down: its canaries pass, another key is served", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(callArb, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 6 }),
        async (rounds) => {
          const runtime = startStubGateway()
          try {
            await runtime.runPromise(Effect.gen(function*() {
              const attacker = (yield* newKey()).auth
              // Rounds one after another, the calls of a round at once.
              for (const round of rounds) {
                yield* Effect.forEach(round, (call) => callOnce(call.endpoint, attacker, bodyOf(call)), { concurrency: "unbounded" })
              }
              const gateway = yield* Gateway
              yield* gateway.idle
              expect(yield* gateway.coolingDown).toEqual([])
              const victim = (yield* newKey()).auth
              expect(yield* callOnce("/v1/chat/completions", victim, bodyOf({ endpoint: "/v1/chat/completions", stream: false, poison: undefined })))
                .toBe(200)
            }))
          } finally {
            await runtime.dispose()
          }
        }
      ),
      { numRuns: 40 }
    )
  }, 60_000)

  it("a machine failing every call is cooled down by its failed canaries", async () => {
    const runtime = startStubGateway({ alwaysFail: true, answers: {} })
    try {
      await runtime.runPromise(Effect.gen(function*() {
        const key = (yield* newKey()).auth
        expect(yield* callOnce("/v1/embeddings", key, { model: "embed", input: "hi" })).toBe(502)
        const gateway = yield* Gateway
        yield* gateway.idle
        expect(yield* gateway.coolingDown).toEqual(["only"])
        // The only machine cools down: 503 no_capacity, and it is not called.
        expect(yield* callOnce("/v1/embeddings", key, { model: "embed", input: "hi" })).toBe(503)
      }))
    } finally {
      await runtime.dispose()
    }
  })
})
