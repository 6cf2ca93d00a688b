/**
 * The gateway store port on Postgres: a batch of admissions is one call of `gateway_admit_batch`,
 * a batch of metered calls one call of `gateway_commit` (migrations 0007, 0012, 0017 and 0024,
 * ./migrations.ts: each row a batch needs is locked once, in the one lock order, and each table
 * written once). The inputs are checked here as the individual stores check them (a
 * broken one is a defect), so what the functions raise is only what needs the rows (an entry of
 * another account or machine, a grant charge beyond the reservation's hold).
 */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import {
  type Admission,
  type AdmissionResult,
  GatewayStore,
  hitsProblem,
  type Metered,
  type MeteredResult
} from "@model-platform/core/gateway"
import { drawShapeProblem, type GrantHold, orderedReservationProblem, scopeKey } from "@model-platform/core/ledger"
import { hitProblem } from "@model-platform/core/kernel"
import { usageRecordProblem } from "@model-platform/core/billing"
import { claimArrays, grantClaimArrays, grantHoldArrays, grantHoldsOf } from "./PgBudgets.ts"
import { settlementShapeProblem } from "./PgSettlementShape.ts"
import { makePruner } from "./PgRateLimitStore.ts"

const machineOf = (scope: string): string | null => (scope === "" ? null : scope)

/**
 * `p_limit` is an integer, as the counter is (rate_limit_windows.count): no count can pass
 * 2^31 - 1, so a larger limit (the catalogue's rpm has no upper bound) is that one.
 */
const MAX_INT4 = 2_147_483_647

interface AdmitRow {
  readonly result: "key_revoked" | "rate_limited" | "admitted" | "reserved" | "insufficient" | "duplicate" | "over_budget"
  readonly hits: number | null
  readonly scopes: ReadonlyArray<string> | null
  readonly amounts: ReadonlyArray<string | bigint> | null
  readonly available: string | bigint | null
  readonly budget: string | null
  readonly lim: string | bigint | null
  readonly used: string | bigint | null
  readonly grant_names: ReadonlyArray<string> | null
  readonly grant_periods: ReadonlyArray<string> | null
  readonly grant_amounts: ReadonlyArray<string | bigint> | null
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
    case "over_budget": {
      const reserved = { _tag: "over_budget", budget: row.budget!, limit: BigInt(row.lim!), used: BigInt(row.used!) } as const
      return { _tag: "Admitted", count, reserved }
    }
    case "reserved": {
      const amounts = row.amounts ?? []
      const allocations = (row.scopes ?? []).map((scope, i) => ({ machine_id: machineOf(scope), amount: BigInt(amounts[i]!) }))
      const grants = grantHoldsOf(row.grant_names, row.grant_periods, row.grant_amounts)
      return {
        _tag: "Admitted",
        count,
        reserved: { _tag: "reserved", allocations, ...(grants.length === 0 ? {} : { grants }) }
      }
    }
  }
}

/** JSON for the functions' jsonb arguments: bigints as decimal strings (exact; SQL casts them). */
const toJsonb = (value: unknown): string =>
  JSON.stringify(value, (_, v: unknown) => (typeof v === "bigint" ? v.toString() : v))

/** A settlement's grant charges as `gateway_commit` reads them. */
const grantChargesItem = (charges: ReadonlyArray<GrantHold> | undefined) => {
  const { grants, periods, amounts } = grantHoldArrays(charges)
  return { grants, grant_periods: periods, grant_amounts: amounts }
}

/**
 * A metered call as `gateway_commit` reads it: the settlement's entries and grant charges as
 * parallel arrays.
 */
const commitItem = ({ drawn, record, settlement }: Metered) => ({
  settlement: settlement === undefined ? null : {
    ...grantChargesItem(settlement.grants),
    // A draw from a lease (migration 0028): the lease, and what the call drew of it.
    ...(drawn === undefined ? {} : {
      lease: drawn.lease,
      drawn_scopes: drawn.allocations.map((a) => scopeKey(a.machine_id)),
      drawn_amounts: drawn.allocations.map((a) => a.amount),
      drawn_grants: (drawn.grants ?? []).map((h) => h.grant),
      drawn_grant_periods: (drawn.grants ?? []).map((h) => h.period),
      drawn_grant_amounts: (drawn.grants ?? []).map((h) => h.amount)
    }),
    ref: settlement.ref,
    at: settlement.at,
    charged: settlement.charged,
    excess: settlement.excess,
    ids: settlement.entries.map((e) => e.id),
    account_ids: settlement.entries.map((e) => e.account_id),
    scopes: settlement.entries.map((e) => scopeKey(e.machine_id)),
    amounts: settlement.entries.map((e) => e.amount),
    refs: settlement.entries.map((e) => e.ref),
    created_at: settlement.entries.map((e) => e.created_at)
  },
  record
})

const problemOf = ({ drawn, record, settlement }: Metered): string | undefined => {
  const recordProblem = usageRecordProblem(record)
  if (recordProblem !== undefined) return `record ${record.ref}: ${recordProblem}`
  if (settlement === undefined) return undefined
  // The lease's machine is checked by the function; here, that at most one machine is drawn.
  const machine = drawn?.allocations.find((a) => a.machine_id !== null)?.machine_id ?? null
  const problem = (drawn === undefined ? undefined : drawShapeProblem({ allocations: drawn.allocations, grants: drawn.grants ?? [] }, machine)) ??
    settlementShapeProblem(settlement)
  return problem === undefined ? undefined : `settlement ${settlement.ref}: ${problem}`
}

export const GatewayStorePg: Layer.Layer<GatewayStore, never, SqlClient.SqlClient> = Layer.effect(
  GatewayStore,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const pruneAfterHit = makePruner(sql)

    const admit = (admissions: ReadonlyArray<Admission>) => {
      if (admissions.length === 0) return Effect.succeed([])
      for (const a of admissions) {
        const r = a.reservation
        const problem = hitProblem(a.rate.bucket, a.rate.window_start, a.rate.window_ms) ?? hitsProblem(a.rate.hits) ??
          (r === undefined ? undefined : orderedReservationProblem(r))
        if (problem !== undefined) return Effect.die(new Error(`GatewayStore.admit: ${problem}`))
      }
      // By account, then key; a key's own admissions keep the order given (the function admits
      // them in the array's order and takes each table's locks in its own sorted order).
      const order = admissions.map((_, i) => i).sort((i, j) => {
        const a = admissions[i]!, b = admissions[j]!
        return a.account_id < b.account_id ? -1 : a.account_id > b.account_id ? 1
          : a.key_id < b.key_id ? -1 : a.key_id > b.key_id ? 1 : i - j
      })
      const items = toJsonb(order.map((i) => {
        const a = admissions[i]!
        const r = a.reservation
        const claims = claimArrays(r?.budgets)
        const grants = grantClaimArrays(r?.grants)
        return {
          account_id: a.account_id,
          key_id: a.key_id,
          touch_at: a.touch_at ?? null,
          bucket: a.rate.bucket,
          window_start: a.rate.window_start,
          window_end: a.rate.window_start + a.rate.window_ms,
          // The counter is an int4: a larger limit is never reached anyway.
          rpm_limit: Math.min(a.rate.limit, MAX_INT4),
          hits: a.rate.hits ?? 1,
          // A ledger_reserve_request (migration 0024), or null: none.
          reservation: r === undefined ? null : {
            ref: r.ref,
            account_id: r.account_id,
            machine_id: r.machine_id,
            scope_order: r.scopes.map(scopeKey),
            amount: r.amount,
            created_at: r.created_at,
            expires_at: r.expires_at,
            budgets: claims.budgets,
            budget_months: claims.months,
            budget_defaults: claims.defaults,
            grants: grants.grants,
            grant_periods: grants.periods,
            grant_sizes: grants.sizes
          }
        }
      }))
      return admitRows(admissions, order, items).pipe(Effect.withSpan("GatewayStore.admit"))
    }
    // One statement: the function admits the elements in the array's order. (A generator function
    // made once, not per batch: docs/performance.md "Generators made per call".)
    const admitRows = Effect.fnUntraced(function*(admissions: ReadonlyArray<Admission>, order: ReadonlyArray<number>, items: string) {
      const rows = yield* sql<AdmitRow & { readonly n: number }>`
        SELECT n, result, hits, scopes, amounts, available, budget, lim, used, grant_names, grant_periods, grant_amounts
        FROM gateway_admit_batch(${items}::jsonb) ORDER BY n`.pipe(Effect.orDie)
      const results = new Array<AdmissionResult>(admissions.length)
      for (const row of rows) results[order[row.n - 1]!] = toAdmission(row)
      for (const a of admissions) yield* pruneAfterHit(a.rate.window_start)
      return results
    })

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
      const items = toJsonb(order.map((i) => commitItem(calls[i]!)))
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
