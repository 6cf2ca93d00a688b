/**
 * What a stream's pump holds for its client (docs/gateway.md "Streaming"): the bytes read from the
 * machine that the client has not taken yet, at most `capBytes`. `offer` never waits: the pump
 * reads the machine at the machine's speed whatever the client does, and a bytes cap (not a count
 * of pieces) bounds what a client that reads slowly, or not at all, costs in memory.
 */
import { type Cause, Effect, Queue, Stream } from "effect"

export interface ClientBuffer {
  /** Queues bytes for the client; false, queuing nothing, when they would take it past its cap. */
  readonly offer: (bytes: Uint8Array) => Effect.Effect<boolean>
  /**
   * Drops every byte the client has not taken (it never gets them) and queues `last` in their
   * place, if it fits: the client's stream ends with it.
   */
  readonly cut: (last: Uint8Array) => Effect.Effect<void>
  /** Nothing more: the client's stream ends after what is queued. */
  readonly end: Effect.Effect<void>
  /** Drops what is queued and refuses more (the client's stream is over). */
  readonly close: Effect.Effect<void>
  /** The client's side: what is queued, in order, as it is taken. */
  readonly stream: Stream.Stream<Uint8Array>
  /** The most bytes it ever held at once. */
  readonly peakBytes: () => number
}

export const makeClientBuffer = (capBytes: number): Effect.Effect<ClientBuffer> =>
  Effect.map(Queue.unbounded<Uint8Array, Cause.Done>(), (queue) => {
    let held = 0
    let peak = 0
    // A queue that is done (the client's stream ended) takes nothing, and that is no overflow.
    const enqueue = (bytes: Uint8Array) =>
      Effect.map(Queue.offer(queue, bytes), (queued) => {
        if (queued) {
          held += bytes.length
          peak = Math.max(peak, held)
        }
        return true
      })
    const drop = Effect.map(Queue.clear(queue), () => {
      held = 0
    })
    return {
      offer: (bytes) => Effect.suspend(() => (held + bytes.length > capBytes ? Effect.succeed(false) : enqueue(bytes))),
      cut: (last) => Effect.andThen(drop, Effect.suspend(() => (last.length > capBytes ? Effect.void : Effect.asVoid(enqueue(last))))),
      end: Effect.asVoid(Queue.end(queue)),
      close: Effect.andThen(drop, Effect.asVoid(Queue.shutdown(queue))),
      stream: Stream.fromQueue(queue).pipe(Stream.mapArray((pieces) => {
        for (const piece of pieces) held -= piece.length
        return pieces
      })),
      peakBytes: () => peak
    }
  })
