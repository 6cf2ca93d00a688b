/**
 * Issue 22, finding 1: no client behaviour makes an answered stream free (docs/gateway.md
 * "Streaming"). The pump (core/src/gateway/Streaming.ts) is run on the TestClock against a machine
 * that writes content events at its own pace and then ends (usage chunk or not, [DONE]) or breaks
 * off (after its usage chunk or before), and a client that reads at some pace, stops reading, or
 * leaves after some events; the platform's time limit and drain limits cut in where they fall.
 *
 * Whatever happens: `finish` (the call's one settlement and usage record) is called exactly once;
 * a stream of which the machine wrote any event is charged: the machine's usage when the pump read
 * it, else an estimate of what was read; the pump is done by the time limit whatever the client
 * does (it never waits for the client); and it never holds more than its byte cap for the client.
 */
import { describe, expect, it } from "@effect/vitest"
import { Clock, Deferred, Effect, Exit, Fiber, Semaphore, Stream } from "effect"
import { TestClock } from "effect/testing"
import * as fc from "fast-check"
import type { CatalogueConfig, ModelConfig } from "../../src/catalogue/CatalogueConfig.ts"
import { startStream, type StreamOutcome } from "../../src/gateway/Streaming.ts"
import { validateCall, type ValidCall } from "../../src/gateway/Validation.ts"
import { MachineFailure } from "../../src/gateway/MachineClient.ts"

const chatModel: ModelConfig = {
  id: "chat", name: "chat", family: "f", description: "", modality: "text", service: "chat", owned_by: "x",
  endpoint: "/v1/chat/completions", context_length: 8192, max_output_tokens: 4096, features: [],
  pricing: { input_credits_per_mtok: 2, output_credits_per_mtok: 6, credits_per_request: 0 }
}
const config = {
  operators: [], machines: [], models: [chatModel], packages: [],
  payments: { card: null, stablecoin: null, charging_starts_at: null },
  prices: { credits_per_usd: null, services: [] },
  tiers: [{ tier: 0, name: "t", purchased_credits: 0, rpm: 1, monthly_limit_credits: 0 }]
} satisfies CatalogueConfig

const call: ValidCall = Effect.runSync(validateCall("/v1/chat/completions", {
  model: "chat", messages: [{ role: "user", content: "write a long story" }], max_tokens: 4096, stream: true
}, config))

/** What the machine reports in its usage chunk. */
const USAGE = { prompt_tokens: 12, completion_tokens: 345, total_tokens: 357 }

const encoder = new TextEncoder()
const decoder = new TextDecoder()
const event = (data: unknown) => encoder.encode(`data: ${JSON.stringify(data)}\n\n`)
const content = (text: string) =>
  event({ id: "c1", object: "chat.completion.chunk", created: 1, model: "chat", choices: [{ index: 0, delta: { content: text }, finish_reason: null }] })
const usageChunk = event({ id: "c1", object: "chat.completion.chunk", created: 1, model: "chat", choices: [], usage: USAGE })

interface Scenario {
  /** The machine's content events: each written `gapMs` after the one before (multiples of 10). */
  readonly events: ReadonlyArray<{ readonly gapMs: number; readonly chars: number }>
  /** What the machine does after them. */
  readonly tail: "usage, [DONE]" | "[DONE] without usage" | "break" | "usage, break"
  /** The client: reads a piece every gapMs; or stops reading (and stays) after `after` pieces; or leaves after them. */
  readonly client: { readonly kind: "reads" | "stops" | "leaves"; readonly gapMs: number; readonly after: number }
  /** The time limit: never at the instant the machine writes (those are multiples of 10). */
  readonly maxStreamMs: number
  readonly bufferBytes: number
  readonly drainSlots: number
  readonly drainTimeoutMs: number
  /** Lambda's settle-inline: the client's stream ends only after `finish`. */
  readonly finishBeforeEnd: boolean
}

const scenario: fc.Arbitrary<Scenario> = fc.record({
  events: fc.oneof(
    fc.array(fc.record({ gapMs: fc.integer({ min: 0, max: 5 }).map((n) => n * 10), chars: fc.integer({ min: 1, max: 60 }) }), { maxLength: 40 }),
    // Many events, quickly: more than a queue of 256 pieces holds.
    fc.array(fc.record({ gapMs: fc.constantFrom(0, 0, 10), chars: fc.integer({ min: 1, max: 20 }) }), { minLength: 200, maxLength: 400 })
  ),
  tail: fc.constantFrom("usage, [DONE]", "[DONE] without usage", "break", "usage, break"),
  client: fc.record({
    kind: fc.constantFrom("reads", "reads", "stops", "leaves"),
    gapMs: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 200 })),
    after: fc.integer({ min: 0, max: 50 })
  }),
  maxStreamMs: fc.integer({ min: 0, max: 1_000 }).map((n) => n * 10 + 5),
  bufferBytes: fc.oneof(fc.integer({ min: 1_024, max: 8_192 }), fc.constant(1_048_576)),
  drainSlots: fc.constantFrom(0, 4),
  drainTimeoutMs: fc.integer({ min: 1, max: 3_000 }),
  finishBeforeEnd: fc.boolean()
})

/** The finding's case: 600 events 10 ms apart, then usage and [DONE]; a limit of 9 s, a buffer of 1 MiB. */
const finding: Scenario = {
  events: Array.from({ length: 600 }, () => ({ gapMs: 10, chars: 12 })),
  tail: "usage, [DONE]",
  client: { kind: "reads", gapMs: 0, after: 0 },
  maxStreamMs: 9_005,
  bufferBytes: 1_048_576,
  drainSlots: 4,
  drainTimeoutMs: 60_000,
  finishBeforeEnd: false
}

/** Runs one scenario to its end on the TestClock; what the machine, the pump and the client did. */
const simulate = (s: Scenario) =>
  Effect.gen(function*() {
    const machine = { contentEvents: 0, chars: 0, usageWritten: false, ended: false }
    const body = Stream.fromIterable(s.events).pipe(
      Stream.mapEffect(({ chars, gapMs }) =>
        Effect.as(Effect.sleep(gapMs), content("x".repeat(chars))).pipe(Effect.tap(() =>
          Effect.sync(() => {
            machine.contentEvents += 1
            machine.chars += chars
          })
        ))),
      Stream.concat(Stream.suspend(() => {
        const usage = s.tail.startsWith("usage") ? Stream.make(usageChunk) : Stream.empty
        const rest = s.tail.endsWith("break")
          ? Stream.fail(new MachineFailure({ machine_id: "m", reason: "dropped", message: "reset mid-body" }))
          : Stream.make(encoder.encode("data: [DONE]\n\n"))
        return Stream.concat(Stream.tap(usage, () => Effect.sync(() => (machine.usageWritten = true))), rest)
      })),
      // Ended or broke off on its own (not interrupted): the pump read every event before.
      Stream.onExit((exit) => Effect.sync(() => (machine.ended = Exit.isSuccess(exit) || !Exit.hasInterrupts(exit))))
    )

    const outcomes: Array<{ readonly outcome: StreamOutcome; readonly at: number }> = []
    const finished = yield* Deferred.make<void>()
    const pumped = yield* startStream({
      call,
      machineId: "m",
      body,
      settings: { keepAliveMs: 1_000, drainTimeoutMs: s.drainTimeoutMs, maxStreamMs: s.maxStreamMs, bufferBytes: s.bufferBytes, finishBeforeEnd: s.finishBeforeEnd },
      drains: yield* Semaphore.make(s.drainSlots),
      finish: (outcome) =>
        Effect.gen(function*() {
          outcomes.push({ outcome, at: yield* Clock.currentTimeMillis })
          yield* Deferred.succeed(finished, undefined)
          return true
        }),
      fork: (pump) => Effect.asVoid(Effect.forkDetach(pump))
    })

    let received = ""
    let pieces = 0
    const take = (piece: Uint8Array) =>
      Effect.gen(function*() {
        received += decoder.decode(piece)
        pieces += 1
        if (s.client.kind === "stops" && pieces >= s.client.after) yield* Effect.never
        yield* Effect.sleep(s.client.gapMs)
      })
    const reading = s.client.kind === "leaves" ? Stream.take(pumped.stream, s.client.after) : pumped.stream
    const client = yield* Effect.forkChild(Stream.runForEach(reading, take))

    // Twice: a pump that finished without a sleep left to wake (every limit's timer gone) ends the
    // first adjustment at once, its client woken but not run yet; the second runs it and its sleeps.
    yield* TestClock.adjust(200_000)
    yield* TestClock.adjust(200_000)
    const clientDone = client.pollUnsafe() !== undefined
    yield* Fiber.interrupt(client)
    return { machine, outcomes, finishedBy: yield* Deferred.isDone(finished), received, clientDone, peakBytes: pumped.peakBytes() }
  }).pipe(Effect.provide(TestClock.layer()))

/** The data of each event the client got (keep-alive comments left out). */
const eventsOf = (text: string) => text.split("\n\n").filter((e) => e.startsWith("data: ")).map((e) => e.slice(6))
const contentChars = (data: string) => {
  try {
    const c = JSON.parse(data).choices?.[0]?.delta?.content
    return typeof c === "string" ? c.length : 0
  } catch {
    return 0
  }
}

describe("a streamed call whatever its client does (property, on the TestClock)", () => {
  it("is settled exactly once, charged whenever the machine wrote an event, within the time limit and the byte cap", async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        const r = await Effect.runPromise(simulate(s))
        const { machine, outcomes } = r

        // One settlement (one usage record), and the pump never waits for its client past the time limit.
        expect(r.finishedBy).toBe(true)
        expect(outcomes).toHaveLength(1)
        const { outcome, at } = outcomes[0]!
        expect(at).toBeLessThanOrEqual(s.maxStreamMs)

        // Never more held for the client than the cap, however slowly it reads.
        expect(r.peakBytes).toBeLessThanOrEqual(s.bufferBytes)

        const wroteEvent = machine.contentEvents > 0 || machine.usageWritten
        if (wroteEvent) expect(outcome._tag).not.toBe("Failed")
        const clientChars = eventsOf(r.received).reduce((n, e) => n + contentChars(e), 0)
        switch (outcome._tag) {
          case "Failed":
            // Only a machine that broke off (or ran out of time) before any event: the client got nothing.
            expect(machine.contentEvents).toBe(0)
            expect(clientChars).toBe(0)
            break
          case "Reported":
            expect(machine.usageWritten).toBe(true)
            expect(outcome.usage).toEqual({ input_tokens: 12n, output_tokens: 345n, requests: 1n })
            break
          case "Estimated":
            // The estimate is of what the pump read: at least what the client got, at most what the machine wrote.
            expect(outcome.outputChars).toBeGreaterThanOrEqual(clientChars)
            expect(outcome.outputChars).toBeLessThanOrEqual(machine.chars)
            if (machine.ended) {
              expect(machine.usageWritten).toBe(false)
              expect(outcome.outputChars).toBe(machine.chars)
            }
            break
        }
        // The pump read the machine to its end: its usage is charged when it wrote it.
        if (machine.ended && machine.usageWritten) expect(outcome._tag).toBe("Reported")

        // A client that read on got a prefix of the answer, then [DONE] or an error event saying why it ended.
        const got = eventsOf(r.received).map(contentChars).filter((n) => n > 0)
        expect(got).toEqual(s.events.slice(0, got.length).map((e) => e.chars))
        if (s.client.kind === "reads" && r.clientDone) {
          const events = eventsOf(r.received)
          const last = events[events.length - 1]
          // (A machine that broke off after its usage chunk ends the answer with it: it is whole.)
          if (last !== "[DONE]" && JSON.parse(last!).usage === undefined) {
            expect(JSON.parse(last!).error.code).toMatch(/^(machine_error|stream_time_limit|client_too_slow)$/)
          }
        }
        if (s.client.kind === "reads") expect(r.clientDone).toBe(true)
      }),
      {
        numRuns: 300,
        examples: [
          // The finding: a machine done in 6 s, a client taking a piece every 200 ms, the limit at 9 s.
          [{ ...finding, client: { kind: "reads", gapMs: 200, after: 0 } }],
          // A client that stops reading after 5 pieces and stays.
          [{ ...finding, client: { kind: "stops", gapMs: 0, after: 5 }, bufferBytes: 8_192 }]
        ]
      }
    )
  })
})
