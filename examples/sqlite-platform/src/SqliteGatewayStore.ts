/**
 * The gateway store port (`GatewayStore` of @model-platform/core/gateway) on the shared SQLite
 * connection: each admission (the key still live, its use, the rpm count, the reservation) and
 * each metered call (the settlement and the usage record) is one `BEGIN IMMEDIATE` transaction
 * over the ledger, key, rate-limit and usage tables, so a call is never admitted half way nor
 * charged without its record. Why not `GatewayStoreComposed`: README.md "The gateway store".
 *
 * The rules are the composed steps' (core/src/gateway/GatewayStore.ts), run as plain functions
 * (`sqliteLedger`, `sqliteKeys`, `sqliteRateLimits`, `sqliteUsage`) inside the transaction:
 * a batch's broken input is refused before anything of it is written (a defect), and a replayed
 * commit whose reservation is no longer pending records what was charged then.
 */
import { Effect } from "effect"
import { type AdmissionResult, GatewayStore, hitsProblem, type Metered, type MeteredResult } from "@model-platform/core/gateway"
import { hitProblem, markUnavailable } from "@model-platform/core/kernel"
import { orderedReservationProblem } from "@model-platform/core/ledger"
import { usageRecordProblem } from "@model-platform/core/billing"
import { isBusy, type SqliteDatabase } from "./SqliteDatabase.ts"
import { sqliteKeys } from "./SqliteKeyStore.ts"
import { sqliteLedger } from "./SqliteLedgerStore.ts"
import { sqliteRateLimits, sqliteUsage } from "./SqliteUsageStore.ts"

export const gatewayStoreOn = (db: SqliteDatabase): GatewayStore["Service"] => {
  const keys = sqliteKeys(db)
  const counters = sqliteRateLimits(db)
  const ledger = sqliteLedger(db)
  const usage = sqliteUsage(db)

  const meter = ({ drawn, record, settlement }: Metered): MeteredResult => {
    // Credit leases need LedgerStore.draw, which this example's ledger does not have.
    if (drawn !== undefined) throw new Error("GatewayStore.commit: a call drew from a lease, and this ledger store has no draw")
    const settled = settlement === undefined ? "none" as const : ledger.settle(settlement)
    let charged = record
    if (settlement !== undefined && settled === "not_pending") {
      // Settled already (a replay): what was charged then. Expired or voided: nothing.
      const reservation = ledger.reservation(settlement.ref)
      charged = reservation?.status === "settled"
        ? { ...record, credits: reservation.charged ?? 0n }
        : { ...record, credits: 0n, from_allowance: 0n, from_trial: 0n }
    }
    return { settlement: settled, record: usage.record(charged) }
  }

  return GatewayStore.of(markUnavailable("GatewayStore", {
    admit: (admissions) =>
      Effect.sync(() => {
        for (const { rate, reservation } of admissions) {
          const problem = hitProblem(rate.bucket, rate.window_start, rate.window_ms) ?? hitsProblem(rate.hits) ??
            (reservation === undefined ? undefined : orderedReservationProblem(reservation))
          if (problem !== undefined) throw new Error(`GatewayStore.admit: ${problem}`)
        }
        return admissions.map((admission) =>
          db.transaction((): AdmissionResult => {
            const key = keys.get(admission.account_id, admission.key_id)
            if (key === undefined || key.revoked_at !== null) return { _tag: "KeyRevoked" }
            if (admission.touch_at !== undefined) keys.touch(admission.key_id, admission.touch_at)
            // Several hits at once: a lease's calls' (Admission.rate.hits); refused when the first passes the limit.
            const { bucket, hits = 1, limit, window_ms, window_start } = admission.rate
            let count = 0
            for (let i = 0; i < hits; i++) count = counters.hit(bucket, window_start, window_ms)
            if (count - hits + 1 > limit) return { _tag: "RateLimited", count }
            const reserved = admission.reservation === undefined ? undefined : ledger.reserveInOrder(admission.reservation)
            return { _tag: "Admitted", count, reserved }
          })
        )
      }).pipe(Effect.withSpan("GatewayStore.admit")),
    commit: (calls) =>
      Effect.sync(() => {
        for (const { record } of calls) {
          const problem = usageRecordProblem(record)
          if (problem !== undefined) throw new Error(`GatewayStore.commit: record ${record.ref}: ${problem}`)
        }
        return calls.map((call) => db.transaction(() => meter(call)))
      }).pipe(Effect.withSpan("GatewayStore.commit"))
  }, isBusy))
}
