/**
 * Each inference call observed from outside the gateway (docs/operations.md "Metrics", "Traces"):
 * `observeGateway` wraps the Gateway service so that every call
 * - counts in `model_platform_calls_in_flight` while it is answered (a stream: until it ends);
 * - records its duration (`gen_ai_server_request_duration_seconds`, with `error.type` when it
 *   failed) and, when it answered, its time to first token (`gen_ai_server_time_to_first_token_seconds`:
 *   a stream's first event, a whole answer's body);
 * - runs in a span named after its operation, with OpenTelemetry's GenAI attributes.
 *
 * What only the gateway knows (the model once the call is validated, the machine that answered)
 * it notes with `noteCall` (CallFacts.ts; two hooks in Gateway.ts); the labels are those catalogue ids, the
 * operation of the endpoint, and the platform's own error codes: bounded sets.
 */
import { Cause, Clock, Effect, Exit, Layer, Metric, Option, Stream } from "effect"
import { Gateway, type GatewayResponse } from "../../gateway/Gateway.ts"
import type { Endpoint } from "../../gateway/Validation.ts"
import { type CallFacts, CurrentCall, OPERATIONS } from "../../gateway/CallFacts.ts"
import { CurrentActivity } from "../../gateway/Activity.ts"
import { tracing } from "./Tracing.ts"
import { callsInFlight, genAiRequestDuration, genAiTimeToFirstToken, seriesOf } from "../../observability/Metrics.ts"
import { toInferenceError } from "../InferenceRefusals.ts"

const decoder = new TextDecoder()
const COLON = 0x3a

/** The `code` of a stream's error event (`data: {"error": {...}}`, Streaming.ts), or undefined for any other chunk. */
const streamErrorCode = (chunk: Uint8Array): string | undefined => {
  if (chunk.length > 4096) return undefined
  const text = decoder.decode(chunk)
  if (!text.startsWith("data: {\"error\"")) return undefined
  try {
    const code = (JSON.parse(text.slice(6)) as { error?: { code?: unknown } }).error?.code
    return typeof code === "string" ? code : "stream_error"
  } catch {
    return "stream_error"
  }
}

const seconds = (from: bigint, to: bigint) => Number(to - from) / 1e9

const inFlightSeries = seriesOf(callsInFlight)
const durationSeries = seriesOf(genAiRequestDuration)
const firstTokenSeries = seriesOf(genAiTimeToFirstToken)

const observe = (gateway: Gateway["Service"]): Gateway["Service"] => ({
  ...gateway,
  call: Effect.fnUntraced(function*(endpoint: Endpoint, authorization: string | undefined, body: string) {
    const operation = OPERATIONS[endpoint]
    const activity = yield* CurrentActivity
    const facts: CallFacts = { model: undefined, machine: undefined, onMachine: (machine) => activity.machineCallStarted(machine) }
    const clock = yield* Clock.Clock
    const started = clock.currentTimeNanosUnsafe()
    // Spans only where they are exported (Tracing.ts): the gateway's hot path pays nothing else.
    const span = (yield* tracing)
      ? yield* Effect.makeSpan(operation, { kind: "internal", attributes: { "gen_ai.operation.name": operation } })
      : undefined
    const inFlight = inFlightSeries({ "gen_ai.operation.name": operation })
    yield* Metric.modify(inFlight, 1)

    const labels = (errorType: string | undefined) => ({
      "gen_ai.operation.name": operation,
      ...(facts.model === undefined ? {} : { "gen_ai.request.model": facts.model }),
      ...(facts.machine === undefined ? {} : { machine: facts.machine }),
      ...(errorType === undefined ? {} : { "error.type": errorType })
    })
    /** The call is over: its duration, its span, and it no longer counts in flight. */
    const finish = (errorType: string | undefined, exit: Exit.Exit<unknown, unknown>) =>
      Effect.suspend(() => {
        const now = clock.currentTimeNanosUnsafe()
        if (facts.machine !== undefined) activity.machineCallEnded(facts.machine)
        if (span !== undefined) {
          if (facts.model !== undefined) span.attribute("gen_ai.request.model", facts.model)
          if (facts.machine !== undefined) span.attribute("model_platform.machine", facts.machine)
          if (errorType !== undefined) span.attribute("error.type", errorType)
          span.end(now, exit)
        }
        return Effect.andThen(
          Metric.modify(inFlight, -1),
          Metric.update(durationSeries(labels(errorType)), seconds(started, now))
        )
      })
    const firstToken = Effect.suspend(() =>
      Metric.update(firstTokenSeries(labels(undefined)), seconds(started, clock.currentTimeNanosUnsafe()))
    )

    const call = Effect.provideService(gateway.call(endpoint, authorization, body), CurrentCall, facts)
    const result = yield* Effect.exit(span === undefined ? call : Effect.withParentSpan(call, span))
    if (Exit.isFailure(result)) {
      const error = Cause.findErrorOption(result.cause)
      const code = Option.isSome(error) ? toInferenceError(error.value).error.code : Cause.hasInterruptsOnly(result.cause) ? "client_closed" : "internal_error"
      yield* finish(code, result)
      return yield* result
    }
    const response: GatewayResponse = result.value
    if (response._tag === "Body") {
      // A machine's answer to the client's own mistake (400, 413...) is passed on: an error all the same.
      if (response.status >= 400) {
        yield* finish(String(response.status), result)
      } else {
        yield* firstToken
        yield* finish(undefined, result)
      }
      return response
    }
    // A stream: its first event is its first token; it is over when the client's stream ends.
    let first = true
    let streamError: string | undefined
    const stream = response.stream.pipe(
      Stream.tap((chunk) => {
        // Keep-alive comments are no token; an error event is none either.
        if (chunk.length === 0 || chunk[0] === COLON) return Effect.void
        streamError ??= streamErrorCode(chunk)
        if (!first || streamError !== undefined) return Effect.void
        first = false
        return firstToken
      }),
      Stream.onExit((exit) =>
        Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause)
          ? finish("client_closed", exit)
          : finish(streamError, streamError === undefined ? exit : Exit.fail(streamError)))
    )
    return { _tag: "Events", stream } satisfies GatewayResponse
  })
})

/** The Gateway of `gateway`, observed (see the module's comment). */
export const observeGateway = <E, R>(gateway: Layer.Layer<Gateway, E, R>): Layer.Layer<Gateway, E, R> =>
  Layer.effect(Gateway, Effect.map(Gateway, observe)).pipe(Layer.provide(gateway))
