/**
 * Streamed chat replies (docs/gateway.md "Streaming").
 *
 * A "pump" fiber, owned by the gateway (not by the request), reads the machine's server-sent
 * events at the machine's speed and queues them for the client as they arrive (the events of one
 * read of the machine's stream together; never a whole reply) in a buffer bounded in bytes
 * (ClientBuffer.ts). The client's response body is a stream over that buffer. So:
 *
 * - A slow client never slows the pump: a client that falls `bufferBytes` behind is treated as
 *   gone: what it had not taken is dropped, its stream ends with a `client_too_slow` error event,
 *   and the pump carries on as a drain.
 * - The client leaving (its stream is interrupted) does not stop the pump: it keeps reading the
 *   machine's stream to its final usage chunk (a "drain"), bounded in time (drainTimeoutMs) and
 *   in number (maxDrains concurrent drains, a semaphore). A drain that finds no free slot, or runs
 *   out of time, stops reading and the call is billed on the estimate of what was seen.
 * - The pump calls `finish` exactly once with the outcome: the machine's usage when it was read,
 *   else an estimate of what was read (the stream completed without usage, a drain was cut short,
 *   the machine broke off or the stream ran past maxStreamMs after events were passed on), or a
 *   failure (the machine broke off, or ran out of time, before any event: the client got nothing,
 *   not charged).
 * - Until the first event, a keep-alive comment is sent every keepAliveMs.
 * - The usage chunk is passed on (every client gets it, as the spec says: the last chunk carries
 *   usage); when the machine sent none, one with the estimate is added before `data: [DONE]`.
 * - An error after the first byte is sent as an event `data: {"error": {...}}`, then the stream ends.
 * - `[DONE]` is sent after `finish` (which journals the call, or inline meters it); a call it could
 *   not meter ends with a `store_unavailable` error event instead. finishBeforeEnd (Lambda): every
 *   stream ends after `finish`.
 */
import { Clock, Effect, Exit, Fiber, Semaphore, Stream } from "effect"
import type { MachineFailure } from "./MachineClient.ts"
import { Metric } from "effect"
import { streamsDrained } from "../observability/Metrics.ts"
import { makeClientBuffer } from "./ClientBuffer.ts"
import { completionChars, estimatedUsage, type Quantities, reportedUsage } from "./Metering.ts"
import type { ValidCall } from "./Validation.ts"

// ---- Server-sent events -------------------------------------------------------------------

/**
 * Splits a byte stream of server-sent events into the data of each complete event (multi-line
 * data joined with "\n"); comments and events without data are dropped. CRLF is accepted.
 */
export class SseSplitter {
  private buffer = ""
  private readonly decoder = new TextDecoder()

  push(bytes: Uint8Array): ReadonlyArray<string> {
    this.buffer += this.decoder.decode(bytes, { stream: true })
    return this.take(false)
  }

  /** What is left at the end of the stream (an event without its blank line). */
  end(): ReadonlyArray<string> {
    this.buffer += this.decoder.decode()
    return this.take(true)
  }

  private take(final: boolean): ReadonlyArray<string> {
    if (this.buffer.includes("\r")) {
      // Keep a trailing "\r": its "\n" may come in the next chunk.
      const keep = !final && this.buffer.endsWith("\r")
      const body = keep ? this.buffer.slice(0, -1) : this.buffer
      this.buffer = body.replace(/\r\n?/g, "\n") + (keep ? "\r" : "")
    }
    const out: Array<string> = []
    let start = 0
    for (;;) {
      const end = this.buffer.indexOf("\n\n", start)
      if (end === -1) break
      const data = dataOf(this.buffer.slice(start, end))
      if (data !== undefined) out.push(data)
      start = end + 2
    }
    this.buffer = this.buffer.slice(start)
    if (final && this.buffer.trim() !== "") {
      const data = dataOf(this.buffer)
      if (data !== undefined) out.push(data)
      this.buffer = ""
    }
    return out
  }
}

const dataOf = (event: string): string | undefined => {
  let data: string | undefined
  for (const line of event.split("\n")) {
    if (!line.startsWith("data:")) continue
    const value = line.charCodeAt(5) === 32 ? line.slice(6) : line.slice(5)
    data = data === undefined ? value : `${data}\n${value}`
  }
  return data
}

const encoder = new TextEncoder()
export const sseEvent = (data: string): Uint8Array => encoder.encode(`data: ${data}\n\n`)
export const KEEP_ALIVE = encoder.encode(": keep-alive\n\n")
export const DONE = sseEvent("[DONE]")

export const sseError = (message: string, code: string, type = "server_error"): Uint8Array =>
  sseEvent(JSON.stringify({ error: { message, type, code } }))

// ---- The pump -----------------------------------------------------------------------------

export type StreamOutcome =
  /** The machine reported usage. */
  | { readonly _tag: "Reported"; readonly usage: Quantities }
  /**
   * No usage: the stream completed without it, the drain was cut, or the stream broke off (or ran
   * out of time) after events were passed on (`broke`: why); bill the estimate.
   */
  | { readonly _tag: "Estimated"; readonly outputChars: number; readonly reason: string; readonly broke?: string }
  /** The machine failed (or ran out of time) before any event was passed on: not charged. */
  | { readonly _tag: "Failed"; readonly reason: string }

export interface StreamSettings {
  readonly keepAliveMs: number
  readonly drainTimeoutMs: number
  /** Whole-stream limit: past it the stream ends (error event), charged for what was read. */
  readonly maxStreamMs: number
  /** What is held for a client that reads slower than the machine writes; past it the client is cut. */
  readonly bufferBytes: number
  /** Call `finish` before the client's stream ends (hosts that freeze after the response). */
  readonly finishBeforeEnd: boolean
}

export interface PumpInput {
  readonly call: ValidCall
  readonly machineId: string
  readonly body: Stream.Stream<Uint8Array, MachineFailure>
  readonly settings: StreamSettings
  /** Concurrent drains after a client left. */
  readonly drains: Semaphore.Semaphore
  /**
   * Called exactly once, uninterruptibly, when the pump is done, before `[DONE]` is sent. False:
   * the call could not be metered: the stream ends with an error event instead of `[DONE]`.
   */
  readonly finish: (outcome: StreamOutcome) => Effect.Effect<boolean>
  /** Forks the pump where it outlives the request (the gateway's fiber set). */
  readonly fork: (pump: Effect.Effect<void>) => Effect.Effect<void>
}

export interface PumpedStream {
  /** The client's body. */
  readonly stream: Stream.Stream<Uint8Array>
  /** The most bytes the pump ever held for the client (at most settings.bufferBytes). */
  readonly peakBytes: () => number
}

type ReadEnd =
  | { readonly _tag: "Ended" }
  | { readonly _tag: "Broken"; readonly message: string }
  | { readonly _tag: "TimedOut" }
  | { readonly _tag: "Cut"; readonly reason: string }

/**
 * Starts the pump and returns the client's body stream. Must be called uninterruptibly together
 * with handing the call's reservation to `finish` (the gateway does).
 */
export const startStream: (input: PumpInput) => Effect.Effect<PumpedStream> = Effect.fnUntraced(function*(input: PumpInput) {
  const buffer = yield* makeClientBuffer(input.settings.bufferBytes)
  const { call, settings } = input
  const startedAt = yield* Clock.currentTimeMillis

  // Set when the client's stream ended, or the client fell bufferBytes behind (`tooSlow`).
  let clientGone = false
  let tooSlow = false
  let sentEvent = false
  let usage: Quantities | undefined
  let outputChars = 0
  let sawDone = false
  // `[DONE]` waits for `finish`: the call is journaled (or, inline, metered) before its answer is whole.
  let doneDue = false
  let lastChunk: { id?: unknown; created?: unknown; model?: unknown } = {}

  const send = (bytes: Uint8Array): Effect.Effect<void> =>
    Effect.suspend(() => clientGone ? Effect.void : Effect.flatMap(buffer.offer(bytes), (queued) => queued ? Effect.void : cutSlowClient))

  /**
   * The client fell bufferBytes behind: it is treated as gone (the pump drains on), what it had
   * not taken is dropped and its stream ends with an error event (after `finish` when the host
   * freezes after a response).
   */
  const cutSlowClient = Effect.suspend(() => {
    clientGone = true
    tooSlow = true
    const message = `The client read this stream more slowly than the machine wrote it and fell ${settings.bufferBytes} bytes ` +
      "behind, so the stream was cut. The call is charged for what the machine produced."
    return buffer.cut(sseError(message, "client_too_slow", "invalid_request_error")).pipe(
      Effect.andThen(settings.finishBeforeEnd ? Effect.void : buffer.end),
      Effect.andThen(onGone)
    )
  })

  /** Notes one event's data; whether it is passed on (all but the machine's [DONE]). */
  const onData = (data: string): boolean => {
    if (data === "[DONE]") {
      sawDone = true
      return false
    }
    let chunk: unknown
    try {
      chunk = JSON.parse(data)
    } catch {
      chunk = undefined
    }
    if (typeof chunk === "object" && chunk !== null) {
      const c = chunk as { id?: unknown; created?: unknown; model?: unknown; usage?: unknown }
      if (c.usage !== undefined && c.usage !== null) usage = reportedUsage(call, chunk) ?? usage
      outputChars += completionChars(chunk)
      if (c.id !== undefined) lastChunk = c
    }
    sentEvent = true
    return true
  }

  /**
   * The events that came in one read of the machine's stream go on as one piece: nothing waits
   * for more, and the client's socket gets one write instead of one per event.
   */
  const onEvents = (events: ReadonlyArray<string>): Effect.Effect<void> => {
    let text = ""
    for (const data of events) if (onData(data)) text += `data: ${data}\n\n`
    return text === "" ? Effect.void : send(encoder.encode(text))
  }

  const splitter = new SseSplitter()
  const read: Effect.Effect<ReadEnd> = input.body.pipe(
    Stream.runForEach((bytes) => onEvents(splitter.push(bytes))),
    Effect.flatMap(() => onEvents(splitter.end())),
    Effect.as<ReadEnd>({ _tag: "Ended" }),
    Effect.catch((failure) => Effect.succeed<ReadEnd>({ _tag: "Broken", message: failure.message }))
  )

  // The read runs in a fiber of its own (`reader`), which `stop` interrupts when it must end
  // before the machine's stream does; one more fiber (`watch`) sends the keep-alives and ends
  // the stream at maxStreamMs. Fewer fibers than racing each limit against the read (five forks
  // a call before; docs/performance.md "A streamed call's fibers"). Combinators, not generators,
  // in here: no generator function is made per call (docs/gateway.md "Code on the call path").
  let stopped: ReadEnd | undefined
  let reader: Fiber.Fiber<ReadEnd> | undefined
  let readDone = false
  let holdsSlot = false
  let drainTimer: Fiber.Fiber<void> | undefined
  /** Ends the read early for `end` (the first reason given wins); nothing once the read is over. */
  const stop = (end: ReadEnd): Effect.Effect<void> =>
    Effect.sync(() => {
      if (stopped !== undefined || readDone) return
      stopped = end
      reader?.interruptUnsafe()
    })

  /** The client is gone: a drain slot for at most drainTimeoutMs, or stop at once. */
  let goneSeen = false
  const onGone: Effect.Effect<void> = Effect.suspend(() => {
    if (goneSeen || readDone) return Effect.void
    goneSeen = true
    const left = tooSlow ? `the client fell ${settings.bufferBytes} bytes behind` : "the client left"
    return Effect.flatMap(Semaphore.takeIfAvailable(input.drains, 1), (slot): Effect.Effect<void> => {
      if (!slot) return stop({ _tag: "Cut", reason: `${left} and no drain slot was free` })
      // The read ended meanwhile: nothing to drain.
      if (readDone) return Semaphore.release(input.drains, 1)
      holdsSlot = true
      const cut = stop({ _tag: "Cut", reason: `${left} and the drain took over ${settings.drainTimeoutMs} ms` })
      // A timer started after the read ended (the pump interrupts only one it finds) ends at once.
      const timer = Effect.suspend(() => readDone ? Effect.void : Effect.andThen(Effect.sleep(settings.drainTimeoutMs), cut))
      return Effect.andThen(
        Metric.update(streamsDrained, 1),
        Effect.map(Effect.forkDetach(timer), (fiber) => {
          drainTimer = fiber
        })
      )
    })
  })

  /** Keep-alives until the first event (at startedAt + k * keepAliveMs), then maxStreamMs. */
  const deadline = startedAt + settings.maxStreamMs
  const watch = (nextKeepAlive: number): Effect.Effect<void> =>
    Effect.flatMap(Clock.currentTimeMillis, (now) => {
      if (now >= deadline) return stop({ _tag: "TimedOut" })
      if (sentEvent || clientGone) return Effect.andThen(Effect.sleep(deadline - now), Effect.suspend(() => watch(nextKeepAlive)))
      if (now >= nextKeepAlive) return Effect.andThen(send(KEEP_ALIVE), Effect.suspend(() => watch(nextKeepAlive + settings.keepAliveMs)))
      return Effect.andThen(Effect.sleep(Math.min(nextKeepAlive, deadline) - now), Effect.suspend(() => watch(nextKeepAlive)))
    })

  const synthesizedUsage = (q: Quantities): Effect.Effect<Uint8Array> =>
    Effect.map(Clock.currentTimeMillis, (now) =>
      sseEvent(JSON.stringify({
        id: typeof lastChunk.id === "string" ? lastChunk.id : "chatcmpl-gateway",
        object: "chat.completion.chunk",
        created: typeof lastChunk.created === "number" ? lastChunk.created : Math.floor(now / 1000),
        model: typeof lastChunk.model === "string" ? lastChunk.model : call.model.id,
        choices: [],
        usage: {
          prompt_tokens: Number(q.input_tokens),
          completion_tokens: Number(q.output_tokens),
          total_tokens: Number(q.input_tokens + q.output_tokens)
        }
      })))

  const pump: Effect.Effect<ReadEnd> = Effect.flatMap(Effect.forkChild(read), (fiber) => {
    reader = fiber
    // A client gone before the pump started, with no drain slot.
    if (stopped !== undefined) fiber.interruptUnsafe()
    return Effect.flatMap(Effect.forkChild(watch(startedAt + settings.keepAliveMs)), (watcher) =>
      Fiber.await(fiber).pipe(
        // Also when the pump itself is interrupted (the gateway stopping): no timer outlives it.
        Effect.onExit(() =>
          Effect.suspend(() => {
            readDone = true
            return Effect.andThen(
              Effect.andThen(Fiber.interrupt(watcher), drainTimer === undefined ? Effect.void : Fiber.interrupt(drainTimer)),
              holdsSlot ? Semaphore.release(input.drains, 1) : Effect.void
            )
          })
        ),
        // Ended by itself, or stopped (interrupted) for `stopped`.
        Effect.flatMap((exit): Effect.Effect<ReadEnd> =>
          Exit.isSuccess(exit) ? Effect.succeed(exit.value) : stopped !== undefined ? Effect.succeed(stopped) : Effect.failCause(exit.cause)
        )
      ))
  })

  const conclude = (end: ReadEnd): Effect.Effect<StreamOutcome> =>
    Effect.suspend((): Effect.Effect<StreamOutcome> => {
      if ((end._tag === "Broken" || end._tag === "TimedOut") && usage === undefined) {
        const [reason, what, code] = end._tag === "Broken"
          ? [end.message, `The machine's stream failed: ${end.message}.`, "machine_error"]
          : [`the stream took over ${settings.maxStreamMs} ms`, `The stream ran past the platform's limit of ${settings.maxStreamMs} ms.`, "stream_time_limit"]
        // The client got nothing but keep-alives: nothing to charge. Else what was read is charged.
        if (!sentEvent) {
          return Effect.as(send(sseError(`${what} Nothing is charged for this call.`, code)), { _tag: "Failed", reason } as const)
        }
        return Effect.as(
          send(sseError(`${what} The call is charged for what the machine sent before.`, code)),
          { _tag: "Estimated", outputChars, reason: `the stream ended early: ${reason}`, broke: reason } as const
        )
      }
      if (end._tag === "Cut") {
        return Effect.succeed(
          usage !== undefined
            ? { _tag: "Reported", usage } as const
            : { _tag: "Estimated", outputChars, reason: end.reason } as const
        )
      }
      // Ended (or broke after its usage chunk): close the stream properly for the client.
      const due = end._tag === "Ended" || sawDone
      if (usage === undefined) {
        const estimate = { _tag: "Estimated", outputChars, reason: "the machine reported no usage" } as const
        return Effect.flatMap(synthesizedUsage(estimatedUsage(call, outputChars)), (bytes) =>
          Effect.map(send(bytes), () => {
            if (due) doneDue = true
            return estimate
          }))
      }
      if (due) doneDue = true
      return Effect.succeed({ _tag: "Reported", usage } as const)
    })

  const run = pump.pipe(
    Effect.flatMap(conclude),
    Effect.onExit((exit) =>
      Effect.suspend(() => {
        const outcome: StreamOutcome = Exit.isSuccess(exit)
          ? exit.value
          : usage !== undefined
          ? { _tag: "Reported", usage }
          : { _tag: "Estimated", outputChars, reason: "the gateway stopped while the call streamed" }
        // A stream without its [DONE] to send (failed, cut, stopped) ends first, unless the host freezes after it.
        return (!settings.finishBeforeEnd && !doneDue ? buffer.end : Effect.void).pipe(
          Effect.andThen(Effect.suspend(() => input.finish(outcome))),
          Effect.flatMap((metered) =>
            doneDue
              ? send(metered ? DONE : sseError("The platform could not record this call's usage, so it is not charged; retry shortly.", "store_unavailable"))
              : Effect.void
          ),
          Effect.andThen(Effect.suspend(() => settings.finishBeforeEnd || doneDue ? buffer.end : Effect.void))
        )
      })
    ),
    Effect.asVoid
  )
  yield* input.fork(run)

  return {
    stream: buffer.stream.pipe(
      Stream.onExit(() =>
        Effect.suspend(() => {
          clientGone = true
          return Effect.andThen(buffer.close, onGone)
        })
      )
    ),
    peakBytes: buffer.peakBytes
  }
})
