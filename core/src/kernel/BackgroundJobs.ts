/**
 * When the platform's background jobs make their first pass: the reservation sweeper, plan
 * renewals, the machines' health check, dataset deletions, the healing of paid orders and the
 * deposit watcher's loop.
 *
 * A server starts them at once (JobsStart unset), so a restart frees what the previous process
 * left and heals before it listens. A Lambda function sets JobsStart to the end of its first
 * invocation: a cold start then carries none of their reads (docs/lambda.md "Background jobs after
 * the first invocation").
 */
import { Context, type Duration, Effect, Schedule } from "effect"

/** What the jobs' first pass waits for; undefined: nothing. */
export const JobsStart = Context.Reference<Effect.Effect<void> | undefined>("@model-platform/core/kernel/JobsStart", {
  defaultValue: () => undefined
})

/** `pass` in a fiber of the layer's scope, once JobsStart lets it, then every `every` after each pass. */
export const repeatInBackground = <R>(pass: Effect.Effect<unknown, never, R>, every: Duration.Input) =>
  Effect.gen(function*() {
    const start = (yield* JobsStart) ?? Effect.void
    yield* Effect.forkScoped(Effect.andThen(start, Effect.repeat(pass, Schedule.spaced(every))))
  })

/** `pass` now, before the layer is built (a server); or in the layer's scope once JobsStart lets it. */
export const onceAtStart = <R>(pass: Effect.Effect<unknown, never, R>) =>
  Effect.gen(function*() {
    const start = yield* JobsStart
    if (start === undefined) return yield* Effect.asVoid(pass)
    yield* Effect.forkScoped(Effect.andThen(start, pass))
  })
