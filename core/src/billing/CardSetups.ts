/**
 * The card for automatic top-ups, saved on a card processor's own page (Stripe Checkout in setup
 * mode; docs/billing.md "Automatic top-ups", docs/payments.md "Saved cards"): the billing page
 * opens the processor's setup page (`open`), and the card saved there reaches the account twice —
 * when the person comes back to the billing page (`complete`, which asks the processor) and from
 * the processor's webhook (`record`) — each applying it once:
 *
 * - a setup session is applied at most once (document kind "card_setup", by the session's id):
 *   the second report finds it applied, so a removal made in between is not undone;
 * - a setup opened before the card now saved does not replace it (a late report of an older setup);
 * - the report must be for the account it is applied to: the person back on the billing page is
 *   that account's, the processor names the account it was opened for.
 *
 * `remove` forgets the card (top-ups turn off). Cards typed into the platform's own form (the test
 * processor) are AutoReload.saveCard's.
 */
import { Clock, Context, Effect, Layer, Schema } from "effect"
import { Catalogue } from "../catalogue/Catalogue.ts"
import { billingError, type BillingErrorOf } from "./BillingErrors.ts"
import { CardProcessor, type CheckoutResult, type CheckoutSession } from "../payments/CardProcessor.ts"
import { documentKind } from "../kernel/Documents.ts"
import { DocumentStores } from "../kernel/DocumentStores.ts"
import { BillingSettingsStore } from "./BillingSettingsStore.ts"
import * as Time from "../kernel/Time.ts"
import { Timestamp } from "../kernel/Time.ts"
import { AutoReload } from "./AutoReload.ts"
import type { AutoReloadView } from "./Schemas.ts"
import type { AccountId } from "../kernel/Ids.ts"

/** A setup session applied to an account. */
export const CardSetupRecord = Schema.Struct({
  /** The processor's setup session. */
  id: Schema.String,
  account_id: Schema.String,
  created_at: Timestamp,
  version: Schema.Int
})
export type CardSetupRecord = typeof CardSetupRecord.Type

export const CardSetupDocuments = documentKind("card_setup", CardSetupRecord, (r) => r.account_id)

export type CardSaved = Extract<CheckoutResult, { readonly _tag: "CardSaved" }>

/** What applying a saved card did. */
export type SetupApplied = "card_saved" | "already_applied" | "older_than_the_saved_card"

export type SetupResult =
  | { readonly _tag: "Saved"; readonly auto_reload: AutoReloadView }
  | { readonly _tag: "NotSaved"; readonly message: string }

export class CardSetups extends Context.Service<CardSetups, {
  /** Opens the processor's page to save a card; the person comes back to `returnUrl` (400 when cards are not taken). */
  readonly open: (accountId: AccountId, returnUrl: string) => Effect.Effect<CheckoutSession, BillingErrorOf<"card_setup_off">>
  /** The person is back from the processor's page: the card saved there, asked of the processor, for their account. */
  readonly complete: (accountId: AccountId, sessionId: string) => Effect.Effect<SetupResult>
  /** The processor reports a card saved (its webhook): applied once, unless an older setup than the card saved. */
  readonly record: (saved: CardSaved) => Effect.Effect<SetupApplied>
  /** Forgets the account's card; automatic top-ups turn off. */
  readonly remove: (accountId: AccountId) => Effect.Effect<AutoReloadView>
}>()("@model-platform/core/billing/CardSetups") {
  static readonly layer: Layer.Layer<CardSetups, never, AutoReload | BillingSettingsStore | CardProcessor | DocumentStores | Catalogue> =
    Layer.effect(
      CardSetups,
      Effect.gen(function*() {
        const autoReload = yield* AutoReload
        const settings = yield* BillingSettingsStore
        const processor = yield* CardProcessor
        const applied = (yield* DocumentStores).of(CardSetupDocuments)
        const cardsTaken = (yield* Catalogue).config.payments.card !== null

        const record = Effect.fn("CardSetups.record")(function*(saved: CardSaved) {
          if ((yield* applied.get(saved.session_id)) !== undefined) return "already_applied" as const
          const current = (yield* settings.get(saved.account_id)).auto_reload.card
          if (current !== null && current.reference !== saved.card.reference && Date.parse(current.saved_at) > saved.opened_at) {
            return "older_than_the_saved_card" as const
          }
          yield* autoReload.setCard(saved.account_id, {
            processor: processor.processor,
            reference: saved.card.reference,
            description: saved.card.description,
            // When the setup was opened: a later setup replaces it, an earlier one does not.
            saved_at: Time.toTimestamp(Math.min(saved.opened_at, yield* Clock.currentTimeMillis))
          })
          // Recorded once the card is kept, so a twin report that finds it recorded finds the card
          // there too (twins racing both keep the same card).
          const first = yield* applied.insert({ id: saved.session_id, account_id: saved.account_id, created_at: yield* Time.now, version: 0 }).pipe(
            Effect.as(true),
            Effect.catchDefect((defect) => Effect.flatMap(applied.get(saved.session_id), (found) => (found === undefined ? Effect.die(defect) : Effect.succeed(false))))
          )
          if (!first) return "already_applied" as const
          return "card_saved" as const
        })

        const open = Effect.fn("CardSetups.open")(function*(accountId: AccountId, returnUrl: string) {
          if (!cardsTaken || processor.pages !== "processor") {
            return yield* billingError("card_setup_off", "Cards are not saved on a processor's page here (see GET /payment-methods).")
          }
          return yield* processor.openCardSetup({ account_id: accountId, return_url: returnUrl })
        })

        const complete = Effect.fn("CardSetups.complete")(function*(accountId: AccountId, sessionId: string) {
          if (processor.pages !== "processor") return { _tag: "NotSaved", message: "No card is saved on a processor's page here." } satisfies SetupResult
          const result = yield* processor.checkoutResult(sessionId)
          if (result._tag !== "CardSaved" || result.account_id !== accountId) {
            return {
              _tag: "NotSaved",
              message: result._tag === "Open" ? "No card was saved: the card page was left before saving." : "No card was saved."
            } satisfies SetupResult
          }
          yield* record(result)
          return { _tag: "Saved", auto_reload: yield* autoReload.view(accountId) } satisfies SetupResult
        })

        return CardSetups.of({ open, complete, record, remove: (accountId) => autoReload.setCard(accountId, null) })
      })
    )
}
