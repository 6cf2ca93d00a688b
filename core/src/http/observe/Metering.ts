/**
 * What metering wrote, as metrics (docs/operations.md "Metrics"): `observeGatewayStore` wraps the
 * GatewayStore the gateway meters through, so that each call whose usage record the store wrote
 * for the first time counts its tokens (`gen_ai_client_token_usage`, input and output) and, when
 * its settlement charged it, its credits (`model_platform_credits_charged_total`, exact
 * micro-credits). A replay (the journal, a retry) finds its record written and counts nothing
 * again; a settlement that found its reservation expired or voided charged nothing.
 *
 * Also the metering journal, observed for its backlog (Activity.ts).
 */
import { Effect, Layer, Metric } from "effect"
import { Catalogue } from "../../catalogue/Catalogue.ts"
import { GatewayStore } from "../../gateway/GatewayStore.ts"
import { MeteringJournal } from "../../gateway/MeteringJournal.ts"
import { CurrentActivity } from "../../gateway/Activity.ts"
import { OPERATIONS } from "../../gateway/CallFacts.ts"
import { creditsCharged, genAiTokenUsage, seriesOf } from "../../observability/Metrics.ts"

const tokenUsage = seriesOf(genAiTokenUsage)
const charged = seriesOf(creditsCharged)

/** The GatewayStore from the context, observed; needs the Catalogue (a model's operation). */
export const observeGatewayStore: Layer.Layer<GatewayStore, never, GatewayStore | Catalogue> = Layer.effect(
  GatewayStore,
  Effect.gen(function*() {
    const store = yield* GatewayStore
    const catalogue = yield* Catalogue
    const operationOf = new Map(catalogue.config.models.map((m) => [m.id, OPERATIONS[m.endpoint]]))
    return GatewayStore.of({
      admit: store.admit,
      commit: (calls) =>
        Effect.tap(store.commit(calls), (results) =>
          Effect.forEach(calls, ({ record }, i) => {
            const result = results[i]
            if (result === undefined || result.record !== "Recorded") return Effect.void
            const model = { "gen_ai.operation.name": operationOf.get(record.model) ?? "unknown", "gen_ai.request.model": record.model }
            const tokens = Effect.andThen(
              Metric.update(tokenUsage({ ...model, "gen_ai.token.type": "input" }), Number(record.input_tokens)),
              Metric.update(tokenUsage({ ...model, "gen_ai.token.type": "output" }), Number(record.output_tokens))
            )
            // Only a settlement that charged says what was charged: the record's credits are then its.
            return result.settlement === "settled"
              ? Effect.andThen(tokens, Metric.update(charged(model), record.credits))
              : tokens
          }, { discard: true }))
    })
  })
)

/** The metering journal from the context, when there is one, counting its open entries (Activity.ts). */
export const observeJournal = <E, R>(journal: Layer.Layer<MeteringJournal, E, R>): Layer.Layer<MeteringJournal, E, R> =>
  Layer.effect(
    MeteringJournal,
    Effect.gen(function*() {
      const activity = yield* CurrentActivity
      return MeteringJournal.of(activity.observeJournal(yield* MeteringJournal))
    })
  ).pipe(Layer.provide(journal))
