/**
 * Automatic top-ups, the use-cases (docs/billing.md "Automatic top-ups"): GET and POST
 * /billing/auto-reload, and saving the card a person enters on the billing page (`saveCard`).
 * The settings live in the billing settings record (billing/Settings.ts auto_reload), written
 * only here, by the person or a manage key; what the charges did (last_error, the daily count)
 * lives in the top-up state the engine swaps (billing/TopUp.ts). Either change re-arms the
 * top-up and lifts the wait after a failure (TopUps.resume).
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import type { Caller } from "../keys/Caller.ts"
import { Catalogue } from "../catalogue/Catalogue.ts"
import { billingError, type BillingErrorOf } from "./BillingErrors.ts"
import { creditsToMicro, microToCredits } from "../kernel/Money.ts"
import { type CardDetails, CardProcessor, type DeclineReason } from "../payments/CardProcessor.ts"
import { BillingSettingsStore } from "./BillingSettingsStore.ts"
import * as Time from "../kernel/Time.ts"
import type { AutoReloadView, SetAutoReload } from "./Schemas.ts"
import type { BillingSettings } from "./Settings.ts"
import type { SavedCard } from "./Settings.ts"
import { TopUps } from "./TopUp.ts"
import { BillingWatch } from "./Watch.ts"
import type { AccountId } from "../kernel/Ids.ts"

/** The largest threshold a record keeps (an int8 of micro-credits). */
export const MAX_THRESHOLD_MICRO = 2n ** 63n - 1n

export type SaveCardResult =
  | { readonly _tag: "Saved"; readonly auto_reload: AutoReloadView }
  | { readonly _tag: "Declined"; readonly reason: DeclineReason; readonly message: string }

export class AutoReload extends Context.Service<AutoReload, {
  /** GET /billing/auto-reload (and GET /billing's auto_reload). */
  readonly view: (accountId: AccountId) => Effect.Effect<AutoReloadView>
  /**
   * POST /billing/auto-reload: the settings whole (the saved card stays). 400 when enabling
   * without a saved card or where card payments or the credit price are not set up, or for a
   * threshold beyond what is kept.
   */
  readonly set: (caller: Caller, body: SetAutoReload) => Effect.Effect<AutoReloadView, BillingErrorOf<"threshold_invalid" | "card_required" | "card_payments_off">>
  /** The billing page: saves (replaces) the card for automatic top-ups, or says why the processor declined it. */
  readonly saveCard: (accountId: AccountId, card: CardDetails) => Effect.Effect<SaveCardResult, BillingErrorOf<"card_payments_off">>
  /**
   * Keeps `card` as the account's card for automatic top-ups (a card saved on a processor's own
   * page: billing/CardSetups.ts), or removes it (null: top-ups turn off, they have nothing to
   * charge). Either lifts the wait after a failure, as saving a card does.
   */
  readonly setCard: (accountId: AccountId, card: SavedCard | null) => Effect.Effect<AutoReloadView>
}>()("@model-platform/core/billing/AutoReload") {
  static readonly layer: Layer.Layer<AutoReload, never, BillingSettingsStore | TopUps | CardProcessor | Catalogue> = Layer.effect(
    AutoReload,
    Effect.gen(function*() {
      const settingsStore = yield* BillingSettingsStore
      const topUps = yield* TopUps
      const watch = Option.getOrUndefined(yield* Effect.serviceOption(BillingWatch))
      /** After a change: armed again, the wait after a failure lifted, the watch reading the settings anew. */
      const changed = (accountId: AccountId) =>
        Effect.andThen(topUps.resume(accountId), watch === undefined ? Effect.void : watch.forget(accountId))
      const processor = yield* CardProcessor
      const catalogue = yield* Catalogue
      const cardsTaken = catalogue.config.payments.card !== null
      const canCharge = cardsTaken && catalogue.config.prices.credits_per_usd !== null

      const toView = (settings: BillingSettings, lastError: string | null): AutoReloadView => ({
        enabled: settings.auto_reload.enabled,
        threshold_credits: microToCredits(settings.auto_reload.threshold),
        amount_usd: settings.auto_reload.amount_usd,
        card: settings.auto_reload.card?.description ?? null,
        last_error: lastError
      })

      const view = Effect.fn("AutoReload.view")(function*(accountId: AccountId) {
        const [settings, state] = yield* Effect.all([settingsStore.get(accountId), topUps.state(accountId)], { concurrency: 2 })
        return toView(settings, state?.last_error ?? null)
      })

      const set = Effect.fn("AutoReload.set")(function*(caller: Caller, body: SetAutoReload) {
        const accountId = caller.account.id
        const threshold = creditsToMicro(body.threshold_credits)
        if (threshold === undefined || threshold < 0n || threshold > MAX_THRESHOLD_MICRO) {
          return yield* billingError("threshold_invalid", `threshold_credits: at most ${microToCredits(MAX_THRESHOLD_MICRO)} credits.`)
        }
        const current = yield* settingsStore.get(accountId)
        if (body.enabled && current.auto_reload.card === null) {
          return yield* billingError(
            "card_required",
            "enabled: automatic top-ups need a saved card, and a person saves one on the billing page."
          )
        }
        if (body.enabled && !canCharge) {
          return yield* billingError(
            "card_payments_off",
            "enabled: automatic top-ups need card payments and a credit price, which are not set up (GET /payment-methods)."
          )
        }
        yield* settingsStore.update(accountId, {
          auto_reload: { enabled: body.enabled, threshold, amount_usd: body.amount_usd, card: current.auto_reload.card }
        })
        yield* changed(accountId)
        return yield* view(accountId)
      })

      const setCard = Effect.fn("AutoReload.setCard")(function*(accountId: AccountId, card: SavedCard | null) {
        const current = yield* settingsStore.get(accountId)
        yield* settingsStore.update(accountId, {
          auto_reload: { ...current.auto_reload, enabled: card === null ? false : current.auto_reload.enabled, card }
        })
        yield* changed(accountId)
        return yield* view(accountId)
      })

      const saveCard = Effect.fn("AutoReload.saveCard")(function*(accountId: AccountId, card: CardDetails) {
        if (!cardsTaken) {
          return yield* billingError("card_payments_off", "Card payments are not set up (see GET /payment-methods).")
        }
        const saved = yield* processor.saveCard(accountId, card)
        if (saved._tag === "Declined") return { _tag: "Declined", reason: saved.reason, message: saved.message } satisfies SaveCardResult
        const auto_reload = yield* setCard(accountId, {
          processor: processor.processor,
          reference: saved.reference,
          description: saved.description,
          saved_at: Time.toTimestamp(yield* Clock.currentTimeMillis)
        })
        return { _tag: "Saved", auto_reload } satisfies SaveCardResult
      })

      return AutoReload.of({ view, set, saveCard, setCard })
    })
  )
}
