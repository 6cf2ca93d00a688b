/**
 * An account's billing settings, one record per account (billing/BillingSettingsStore.ts): the
 * alert points and whether alerts are emailed (POST /billing/limits), the automatic top-up
 * (GET/POST /billing/auto-reload, the card saved on the billing page) and the request for
 * invoiced billing (POST /billing/invoicing). The monthly limits are not here: they are ledger
 * budgets, checked in the same store step as the balance (docs/billing.md "Monthly limits").
 *
 * The record is written once, as this Schema: every store keeps its encoded form (JSON: amounts
 * as decimal strings) and reads it back through it, in sections. An update replaces whole
 * sections and leaves the others as they are, also when two updates of different sections race
 * (the alert settings and the top-up are changed by different requests).
 */
import { Schema } from "effect"
import { Timestamp } from "../kernel/Time.ts"
import { AlertPoint } from "./Schemas.ts"

/** An amount of micro-credits in a stored record: an integer >= 0 below 2^63 (a PostgreSQL int8). */
export const StoredMicroCredits = Schema.BigIntFromString.check(
  Schema.isBetweenBigInt({ minimum: 0n, maximum: 2n ** 63n - 1n }, { expected: "micro-credits from 0 to 2^63 - 1" })
)

/** Alert points as kept: whole percentages 1 to 100, ascending, each once (alertPointsOf makes them so). */
export const AlertPoints = Schema.Array(AlertPoint).check(
  Schema.makeFilter((points: ReadonlyArray<number>) => points.every((p, i) => i === 0 || points[i - 1]! < p), {
    expected: "alert points in ascending order, each once"
  })
)

/** What a client sent as alert points, as they are kept: ascending, duplicates dropped. */
export const alertPointsOf = (points: ReadonlyArray<number>): ReadonlyArray<number> =>
  [...new Set(points)].sort((a, b) => a - b)

/** A card saved with the card processor for off-session charges (automatic top-ups). */
export const SavedCard = Schema.Struct({
  /** The processor that holds it (CardProcessor.processor) and its reference there. */
  processor: Schema.String,
  reference: Schema.String,
  /** How the card is shown: brand, last four digits, expiry. */
  description: Schema.String,
  saved_at: Timestamp
})
export type SavedCard = typeof SavedCard.Type

/** The automatic top-up: one charge of amount_usd when a settlement takes the balance below threshold. */
export const AutoReloadSettings = Schema.Struct({
  enabled: Schema.Boolean,
  threshold: StoredMicroCredits,
  amount_usd: Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)),
  /**
   * Why the last top-up failed is not kept here: this record is written only by the person
   * (a read-modify-write of the section), the top-up's outcome by the settling processes, so it
   * lives in the top-up state (billing/AlertStore.ts TopUpState.last_error). A stored record that
   * still holds a last_error reads without it.
   */
  card: Schema.NullOr(SavedCard)
})
export type AutoReloadSettings = typeof AutoReloadSettings.Type

/** A request for invoiced billing (a person reviews it). */
export const InvoicingRequestRecord = Schema.Struct({
  state: Schema.Literal("requested"),
  note: Schema.String,
  requested_at: Timestamp
})
export type InvoicingRequestRecord = typeof InvoicingRequestRecord.Type

export const BillingSettings = Schema.Struct({
  alert_points: AlertPoints,
  alert_email: Schema.Boolean,
  auto_reload: AutoReloadSettings,
  invoicing: Schema.NullOr(InvoicingRequestRecord)
})
export type BillingSettings = typeof BillingSettings.Type

/** The sections of the record: an update replaces each one it names, whole. */
export type BillingSettingsSection = keyof BillingSettings
export const BILLING_SETTINGS_SECTIONS = Object.keys(BillingSettings.fields) as ReadonlyArray<BillingSettingsSection>

export type BillingSettingsPatch = Partial<BillingSettings>

/** An account that never saved anything: no alert points, no email, no top-up, no invoicing. */
export const DEFAULT_BILLING_SETTINGS: BillingSettings = {
  alert_points: [],
  alert_email: false,
  auto_reload: { enabled: false, threshold: 0n, amount_usd: 0, card: null },
  invoicing: null
}

/** The JSON a store keeps: the encoded record (amounts as decimal strings). */
export type EncodedBillingSettings = typeof BillingSettings.Encoded

const encodeSettings = Schema.encodeUnknownExit(BillingSettings)
const decodeSettings = Schema.decodeUnknownExit(BillingSettings)

/**
 * The encoded form of each section a patch names, or why a store must refuse it (a value the
 * record's Schema does not accept). Pure, shared by the stores: they refuse the whole patch.
 */
export const encodePatch = (
  patch: BillingSettingsPatch
): { readonly _tag: "ok"; readonly sections: Partial<EncodedBillingSettings> } | { readonly _tag: "invalid"; readonly message: string } => {
  const exit = encodeSettings({ ...DEFAULT_BILLING_SETTINGS, ...patch })
  if (exit._tag === "Failure") return { _tag: "invalid", message: String(exit.cause) }
  const sections: Record<string, unknown> = {}
  for (const section of BILLING_SETTINGS_SECTIONS) {
    if (patch[section] !== undefined) sections[section] = exit.value[section]
  }
  return { _tag: "ok", sections: sections as Partial<EncodedBillingSettings> }
}

/**
 * A stored record read back: the sections it holds over the defaults (a record saved before a
 * section existed has the section's default). Undefined when it does not decode.
 */
export const decodeStored = (stored: Readonly<Record<string, unknown>> | undefined): BillingSettings | undefined => {
  const defaults = encodeSettings(DEFAULT_BILLING_SETTINGS)
  if (defaults._tag === "Failure") return undefined
  const merged: Record<string, unknown> = { ...defaults.value }
  for (const section of BILLING_SETTINGS_SECTIONS) {
    if (stored !== undefined && stored[section] !== undefined) merged[section] = stored[section]
  }
  const exit = decodeSettings(merged)
  return exit._tag === "Success" ? exit.value : undefined
}
