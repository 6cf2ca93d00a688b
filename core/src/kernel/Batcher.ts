/**
 * Group commit: writes submitted while a batch is being written wait, and go together in the next
 * batch. Alone, a write goes at once, or after `lingerMs` when asked (what arrives meanwhile joins
 * its batch); under load, many share one store round trip (the gateway's admission and metering:
 * docs/gateway.md "Admission in one store step"). The linger is the host's time (a timer), not the
 * platform's clock: it orders work, it measures nothing.
 *
 * The fiber that finds no batch being written writes batches until none is waiting; the others
 * wait for their result. When a batch fails, its items are written one by one, so one bad item
 * fails alone.
 */
import { type Cause, Deferred, Effect, Exit } from "effect"

export interface Batcher<A, B> {
  /** Writes `item` in the next batch; its own result. */
  readonly submit: (item: A) => Effect.Effect<B>
}

export const makeBatcher = <A, B>(
  /** Writes a batch; answers one result per item, in order. */
  write: (items: ReadonlyArray<A>) => Effect.Effect<ReadonlyArray<B>>,
  maxBatch: number,
  lingerMs = 0
): Batcher<A, B> => {
  const linger = Effect.callback<void>((resume) => {
    const timer = setTimeout(() => resume(Effect.void), lingerMs)
    return Effect.sync(() => clearTimeout(timer))
  })
  const waiting: Array<{ readonly item: A; readonly result: Deferred.Deferred<B> }> = []
  let writing = false

  const writeBatch = (batch: ReadonlyArray<{ readonly item: A; readonly result: Deferred.Deferred<B> }>): Effect.Effect<void> =>
    write(batch.map((entry) => entry.item)).pipe(
      Effect.flatMap((results) =>
        results.length === batch.length
          ? Effect.sync(() => batch.forEach((entry, i) => Deferred.doneUnsafe(entry.result, Exit.succeed(results[i]!))))
          : Effect.die(new Error(`Batcher: ${results.length} results for ${batch.length} items`))
      ),
      Effect.catchCause((cause) =>
        batch.length === 1
          ? Effect.sync(() => Deferred.doneUnsafe(batch[0]!.result, Exit.failCause(cause as Cause.Cause<never>)))
          : Effect.forEach(batch, (entry) => writeBatch([entry]), { discard: true })
      )
    )

  // Taking the next batch and giving up the writer's role are one step, so an item submitted
  // meanwhile either lands in a batch or finds no writer and becomes the writer itself.
  const nextBatch = Effect.sync(() => {
    if (waiting.length === 0) writing = false
    return writing ? waiting.splice(0, maxBatch) : undefined
  })
  const drain: Effect.Effect<void> = Effect.flatMap(nextBatch, (batch) =>
    batch === undefined ? Effect.void : Effect.andThen(writeBatch(batch), drain))

  return {
    submit: (item) =>
      Effect.suspend(() => {
        const result = Deferred.makeUnsafe<B>()
        waiting.push({ item, result })
        if (writing) return Deferred.await(result)
        writing = true
        const start = lingerMs > 0 ? Effect.andThen(linger, drain) : drain
        return Effect.andThen(Effect.uninterruptible(start), Deferred.await(result))
      })
  }
}
