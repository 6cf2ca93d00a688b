/**
 * A card processor's webhook (docs/payments.md "Webhooks"): the raw body and its signature go to
 * the processor's `verifyEvent` (nothing is read from a body that does not verify), and what the
 * verified event reports is applied once by its id: an event id already applied is answered
 * `duplicate` and changes nothing. Applying is idempotent anyway (a payment pays its order once,
 * a reversal is a ledger entry with its own reference), so two deliveries racing each apply
 * nothing twice; the record of applied ids (document kind "card_event") spares the work and says
 * so.
 *
 * Every verified event is answered 200, whatever it did (paid, already paid, no such order, a
 * mismatch, ignored), so the processor stops sending it; only a body that does not verify is
 * refused (400), and a failure to apply it (the processor or a store unreachable) is a 500 the
 * processor retries.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { CardSetups, type SetupApplied } from "./CardSetups.ts"
import { CardProcessor, type InvalidEvent, type ProcessorEvent } from "../payments/CardProcessor.ts"
import { documentKind } from "../kernel/Documents.ts"
import { DocumentStores } from "../kernel/DocumentStores.ts"
import * as Time from "../kernel/Time.ts"
import { Timestamp } from "../kernel/Time.ts"
import { CardCheckouts, type PaymentApplied } from "./CardCheckouts.ts"
import { type ReversalApplied, Reversals } from "../payments/Reversals.ts"

/** An event applied: its processor and id, and what it did. */
export const CardEventRecord = Schema.Struct({
  /** `<processor>:<event id>` */
  id: Schema.String,
  processor: Schema.String,
  type: Schema.String,
  outcome: Schema.String,
  created_at: Timestamp,
  version: Schema.Int
})
export type CardEventRecord = typeof CardEventRecord.Type

/** Listed by processor and UTC day (never read as a list: the owner only spreads the records). */
export const CardEventDocuments = documentKind("card_event", CardEventRecord, (r) => `${r.processor}:${r.created_at.slice(0, 10)}`)

/** What a verified event did. */
export type EventOutcome =
  | PaymentApplied
  /** A checkout that is not paid yet, or did not go through: nothing to do. */
  | "not_paid"
  /** A card saved on the processor's setup page (billing/CardSetups.ts). */
  | SetupApplied
  /** Refunds and disputes (Reversals.ts): "reversed" when any took credits back. */
  | ReversalApplied
  | "ignored"
  /** Its id was applied before: nothing changed. */
  | "duplicate"

export interface EventAnswer {
  readonly event_id: string
  readonly outcome: EventOutcome
}

export class CardEvents extends Context.Service<CardEvents, {
  /** The processor's webhook: verified, then applied once by its id. */
  readonly receive: (payload: string, signature: string | undefined) => Effect.Effect<EventAnswer, InvalidEvent>
}>()("@model-platform/core/billing/CardEvents") {
  static readonly layer: Layer.Layer<CardEvents, never, CardProcessor | CardCheckouts | CardSetups | Reversals | DocumentStores> = Layer.effect(
    CardEvents,
    Effect.gen(function*() {
      const processor = yield* CardProcessor
      const checkouts = yield* CardCheckouts
      const setups = yield* CardSetups
      const reversals = yield* Reversals
      const applied = (yield* DocumentStores).of(CardEventDocuments)

      const apply = (event: ProcessorEvent): Effect.Effect<EventOutcome> => {
        switch (event._tag) {
          case "Ignored":
            return Effect.succeed("ignored")
          case "Reversals":
            return Effect.map(Effect.forEach(event.reversals, reversals.apply), (outcomes) =>
              outcomes.includes("reversed") ? "reversed" : outcomes[0] ?? "ignored")
          case "Checkout": {
            const result = event.result
            if (result._tag === "Paid") return checkouts.applyPaid(result)
            if (result._tag === "CardSaved") return setups.record(result)
            return Effect.succeed("not_paid")
          }
        }
      }

      const receive = Effect.fn("CardEvents.receive")(function*(payload: string, signature: string | undefined) {
        const event = yield* processor.verifyEvent(payload, signature)
        const id = `${processor.processor}:${event.event_id}`
        if ((yield* applied.get(id)) !== undefined) return { event_id: event.event_id, outcome: "duplicate" } satisfies EventAnswer
        const outcome = yield* apply(event)
        const record: CardEventRecord = {
          id,
          processor: processor.processor,
          type: event._tag === "Ignored" ? event.type : event._tag,
          outcome,
          created_at: yield* Time.now,
          version: 0
        }
        // A twin delivery recorded it meanwhile: it applied the same, idempotently.
        const recorded = yield* applied.insert(record).pipe(
          Effect.as(true),
          Effect.catchDefect((defect) => Effect.flatMap(applied.get(id), (found) => (found === undefined ? Effect.die(defect) : Effect.succeed(false))))
        )
        return { event_id: event.event_id, outcome: recorded ? outcome : "duplicate" } satisfies EventAnswer
      })

      return CardEvents.of({ receive })
    })
  )
}
