/**
 * The charging gate (spec: "Charging starts only when a payment rail is configured"): whether
 * usage is charged yet, derived from the catalogue's payments configuration and the time.
 *
 * - No rail (card and stablecoin both null): closed, reason says so, starts_at null (nothing is
 *   scheduled: charging cannot start before a rail exists).
 * - A rail and charging_starts_at null, or in the past: open (reason null); starts_at is the
 *   configured instant, or null when none was set.
 * - A rail and charging_starts_at in the future: closed until then; starts_at tells when.
 * - A charging_starts_at that is not a timestamp: closed (the safe side: nobody is charged on a
 *   misconfiguration), reason says so.
 */
import { Schema } from "effect"
import type { PaymentsConfig } from "./CatalogueConfig.ts"
import { Timestamp, toTimestamp } from "../kernel/Time.ts"

/** Whether usage is charged yet; reason and starts_at explain a closed state (else null). */
export const Charging = Schema.Struct({
  open: Schema.Boolean,
  reason: Schema.NullOr(Schema.String),
  starts_at: Schema.NullOr(Timestamp)
})
export type Charging = typeof Charging.Type


export const hasPaymentRail = (payments: PaymentsConfig): boolean => payments.card !== null || payments.stablecoin !== null

export const chargingGate = (payments: PaymentsConfig, nowMillis: number): Charging => {
  const configured = payments.charging_starts_at
  const startsMillis = configured === null ? null : Date.parse(configured)
  if (startsMillis !== null && Number.isNaN(startsMillis)) {
    return {
      open: false,
      reason: `charging_starts_at is not a valid timestamp (${JSON.stringify(configured)}); nothing is charged.`,
      starts_at: null
    }
  }
  const startsAt = startsMillis === null ? null : toTimestamp(startsMillis)
  if (!hasPaymentRail(payments)) {
    return {
      open: false,
      reason: "No payment rail is configured yet: usage is recorded at list price and charged nothing.",
      starts_at: null
    }
  }
  if (startsMillis !== null && nowMillis < startsMillis) {
    return {
      open: false,
      reason: `Charging starts at ${startsAt}: until then usage is recorded at list price and charged nothing.`,
      starts_at: startsAt
    }
  }
  return { open: true, reason: null, starts_at: startsAt }
}
