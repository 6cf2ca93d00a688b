/**
 * The gateway store port on Postgres: an admission is one call of `gateway_admit`, a batch of
 * metered calls one call of `gateway_commit` (migration 0007, ./migrations.ts). The inputs are
 * checked here as the individual stores check them (a broken one is a defect), so what the
 * functions raise is only what needs the rows (an entry of another account or machine).
 */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import {
  type Admission,
  type AdmissionResult,
  GatewayStore,
  type Metered,
  type MeteredResult
} from "@model-platform/core/ports/GatewayStore"
import { scopeKey } from "@model-platform/core/ports/LedgerStore"
import { hitProblem } from "@model-platform/core/ports/RateLimitStore"
import { usageRecordProblem } from "@model-platform/core/ports/UsageStore"
import { orderedReservationProblem, settlementShapeProblem } from "./PgLedgerStore.ts"
import { makePruner } from "./PgRateLimitStore.ts"

const machineOf = (scope: string): string | null => (scope === "" ? null : scope)

/**
 * `p_limit` is an integer, as the counter is (rate_limit_windows.count): no count can pass
 * 2^31 - 1, so a larger limit (the catalogue's rpm has no upper bound) is that one.
 */
const MAX_INT4 = 2_147_483_647

interface AdmitRow {
  readonly result: "key_revoked" | "rate_limited" | "admitted" | "reserved" | "insufficient" | "duplicate"
  readonly hits: number | null
  readonly scopes: ReadonlyArray<string> | null
  readonly amounts: ReadonlyArray<string | bigint> | null
  readonly available: string | bigint | null
}

const toAdmission = (row: AdmitRow): AdmissionResult => {
  const count = Number(row.hits ?? 0)
  switch (row.result) {
    case "key_revoked":
      return { _tag: "KeyRevoked" }
    case "rate_limited":
      return { _tag: "RateLimited", count }
    case "admitted":
      return { _tag: "Admitted", count, reserved: undefined }
    case "duplicate":
      return { _tag: "Admitted", count, reserved: { _tag: "duplicate" } }
    case "insufficient":
      return { _tag: "Admitted", count, reserved: { _tag: "insufficient", available: BigInt(row.available ?? 0) } }
    case "reserved": {
      const amounts = row.amounts ?? []
      const allocations = (row.scopes ?? []).map((scope, i) => ({ machine_id: machineOf(scope), amount: BigInt(amounts[i]!) }))
      return { _tag: "Admitted", count, reserved: { _tag: "reserved", allocations } }
    }
  }
}

/** A metered call as `gateway_commit` reads it: bigints as strings, entries as parallel arrays. */
const toJson = ({ record, settlement }: Metered) => ({
  settlement: settlement === undefined ? null : {
    ref: settlement.ref,
    at: settlement.at,
    charged: String(settlement.charged),
    excess: String(settlement.excess),
    ids: settlement.entries.map((e) => e.id),
    account_ids: settlement.entries.map((e) => e.account_id),
    scopes: settlement.entries.map((e) => scopeKey(e.machine_id)),
    amounts: settlement.entries.map((e) => String(e.amount)),
    refs: settlement.entries.map((e) => e.ref),
    created_at: settlement.entries.map((e) => e.created_at)
  },
  record: {
    ...record,
    quantity: String(record.quantity),
    input_tokens: String(record.input_tokens),
    output_tokens: String(record.output_tokens),
    list_credits: String(record.list_credits),
    credits: String(record.credits),
    from_allowance: String(record.from_allowance),
    from_trial: String(record.from_trial)
  }
})

const problemOf = ({ record, settlement }: Metered): string | undefined => {
  const recordProblem = usageRecordProblem(record)
  if (recordProblem !== undefined) return `record ${record.ref}: ${recordProblem}`
  if (settlement === undefined) return undefined
  const problem = settlementShapeProblem(settlement)
  return problem === undefined ? undefined : `settlement ${settlement.ref}: ${problem}`
}

export const GatewayStorePg: Layer.Layer<GatewayStore, never, SqlClient.SqlClient> = Layer.effect(
  GatewayStore,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const pruneAfterHit = makePruner(sql)

    const admit = (a: Admission) => {
      const r = a.reservation
      const problem = hitProblem(a.rate.bucket, a.rate.window_start, a.rate.window_ms) ??
        (r === undefined ? undefined : orderedReservationProblem(r))
      if (problem !== undefined) return Effect.die(new Error(`GatewayStore.admit: ${problem}`))
      return Effect.gen(function*() {
        const rows = yield* sql<AdmitRow>`
          SELECT result, hits, scopes, amounts, available FROM gateway_admit(
            ${a.account_id}, ${a.key_id}, ${a.touch_at ?? null}::timestamptz,
            ${a.rate.bucket}, ${a.rate.window_start}::bigint, ${a.rate.window_start + a.rate.window_ms}::bigint,
            ${Math.min(a.rate.limit, MAX_INT4)}::integer, ${r?.ref ?? null}, ${r?.machine_id ?? null},
            ${r === undefined ? null : r.scopes.map(scopeKey)}::text[], ${r?.amount ?? null}::bigint,
            ${r?.created_at ?? null}::timestamptz, ${r?.expires_at ?? null}::timestamptz)`.pipe(Effect.orDie)
        const result = toAdmission(rows[0]!)
        if (result._tag !== "KeyRevoked") yield* pruneAfterHit(a.rate.window_start)
        return result
      }).pipe(Effect.withSpan("GatewayStore.admit"))
    }

    const commit = (calls: ReadonlyArray<Metered>) => {
      if (calls.length === 0) return Effect.succeed([])
      for (const call of calls) {
        const problem = problemOf(call)
        if (problem !== undefined) return Effect.die(new Error(`GatewayStore.commit: ${problem}`))
      }
      // One lock order for every batch: by account (balance rows), then by ref.
      const order = calls.map((_, i) => i).sort((i, j) => {
        const a = calls[i]!.record, b = calls[j]!.record
        return a.account_id < b.account_id ? -1 : a.account_id > b.account_id ? 1 : a.ref < b.ref ? -1 : a.ref > b.ref ? 1 : 0
      })
      const items = JSON.stringify(order.map((i) => toJson(calls[i]!)))
      return sql<{ readonly n: number; readonly settlement: MeteredResult["settlement"]; readonly recorded: boolean }>`
        SELECT n, settlement, recorded FROM gateway_commit(${items}::jsonb)`.pipe(
        Effect.map((rows) => {
          const results = new Array<MeteredResult>(calls.length)
          for (const row of rows) {
            results[order[row.n - 1]!] = { settlement: row.settlement, record: row.recorded ? "Recorded" : "Duplicate" }
          }
          return results
        }),
        Effect.orDie,
        Effect.withSpan("GatewayStore.commit")
      )
    }

    return GatewayStore.of({ admit, commit })
  })
)
