/**
 * A memory outbox for tests: the `EmailSender` (core/src/kernel/EmailSender.ts) that keeps every
 * message it accepts, with injectable failures. It provides
 * - `EmailSender` (transport "memory"): checks the address as every sender does, then takes the
 *   next injected failure if there is one, else keeps the message;
 * - `MemoryOutbox`: `messages` in order, `to(address)` for one recipient's, and `failNext` to make
 *   the next sends fail (`unavailable`: the mail server is down; `refused`: the address is refused).
 */
import { Context, Effect, Layer, Ref } from "effect"
import { checkMessage, type EmailMessage, EmailRefused, EmailSender, EmailUnavailable, Time } from "@model-platform/core/kernel"

export interface OutboxMessage extends EmailMessage {
  readonly id: string
  /** When it was accepted (the Clock's time). */
  readonly at: Time.Timestamp
}

export type InjectedEmailFailure =
  | { readonly _tag: "unavailable"; readonly reason?: string }
  | { readonly _tag: "refused"; readonly reason?: string }

export class MemoryOutbox extends Context.Service<MemoryOutbox, {
  readonly messages: Effect.Effect<ReadonlyArray<OutboxMessage>>
  /** The messages sent to one address, oldest first. */
  readonly to: (address: string) => Effect.Effect<ReadonlyArray<OutboxMessage>>
  /** The next `count` sends (with a well-formed address) fail this way. */
  readonly failNext: (count: number, failure: InjectedEmailFailure) => Effect.Effect<void>
  readonly clear: Effect.Effect<void>
}>()("@model-platform/test-harness/MemoryOutbox") {
  static readonly layer: Layer.Layer<MemoryOutbox | EmailSender> = Layer.effectContext(
    Effect.gen(function*() {
      const sent = yield* Ref.make<ReadonlyArray<OutboxMessage>>([])
      const failures = yield* Ref.make<ReadonlyArray<InjectedEmailFailure>>([])
      const send = Effect.fn("MemoryOutbox.send")(function*(input: EmailMessage) {
        const message = yield* checkMessage(input)
        const failure = yield* Ref.modify(failures, (queue) => [queue[0], queue.slice(1)] as const)
        if (failure?._tag === "unavailable") {
          return yield* new EmailUnavailable({ reason: failure.reason ?? "injected: the mail server is down" })
        }
        if (failure?._tag === "refused") {
          return yield* new EmailRefused({ to: message.to, reason: failure.reason ?? "injected: mailbox unavailable" })
        }
        const count = (yield* Ref.get(sent)).length
        const kept: OutboxMessage = { ...message, id: `memory-${count + 1}`, at: yield* Time.now }
        yield* Ref.update(sent, (all) => [...all, kept])
        return { id: kept.id }
      })
      const outbox = MemoryOutbox.of({
        messages: Ref.get(sent),
        to: (address) => Effect.map(Ref.get(sent), (all) => all.filter((m) => m.to === address)),
        failNext: (count, failure) =>
          Ref.update(failures, (queue) => [...queue, ...Array.from({ length: count }, () => failure)]),
        clear: Effect.andThen(Ref.set(sent, []), Ref.set(failures, []))
      })
      return Context.make(MemoryOutbox, outbox).pipe(
        Context.add(EmailSender, EmailSender.of({ transport: "memory", send }))
      )
    })
  )
}
