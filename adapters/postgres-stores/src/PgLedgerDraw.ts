/**
 * `LedgerStore.draw` on Postgres (core/src/ledger/LedgerStore.ts, docs/performance.md "Credit
 * leases"): one call's draw from a lease, as a batch of one request of `ledger_finish_batch`
 * (migration 0028_credit_leases.ts), the function the gateway's commits run, so its rules are
 * written once.
 */
import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import { type Draw, type DrawResult, drawShapeProblem, scopeKey } from "@model-platform/core/ledger"
import { grantHoldArrays } from "./PgBudgets.ts"
import { settlementShapeProblem } from "./PgSettlementShape.ts"

export const makeDraw = (sql: SqlClient.SqlClient) => (draw: Draw): Effect.Effect<DrawResult> => {
  const { settlement } = draw
  const drawn = { allocations: draw.allocations, grants: draw.grants ?? [] }
  // The lease's machine is checked by the function; here, that at most one machine is drawn.
  const machine = drawn.allocations.find((a) => a.machine_id !== null)?.machine_id ?? null
  const problem = drawShapeProblem(drawn, machine) ?? settlementShapeProblem(settlement)
  if (problem !== undefined) return Effect.die(new Error(`LedgerStore.draw: ${problem}`))
  const entries = settlement.entries
  const charges = grantHoldArrays(settlement.grants)
  const holds = grantHoldArrays(draw.grants)
  return sql<{ readonly finished: boolean; readonly status: string }>`
    SELECT finished, status FROM ledger_finish_batch(ARRAY[ROW(
      ${settlement.ref}, 'drawn', ${settlement.at}::timestamptz, ${settlement.charged}::bigint,
      ${settlement.excess}::bigint, ${entries.map((e) => e.id)}::text[], ${entries.map((e) => e.account_id)}::text[],
      ${entries.map((e) => scopeKey(e.machine_id))}::text[], ${entries.map((e) => e.amount)}::bigint[],
      ${entries.map((e) => e.ref)}::text[], ${entries.map((e) => e.created_at)}::timestamptz[],
      ${charges.grants}::text[], ${charges.periods}::text[], ${charges.amounts}::bigint[], ${draw.lease},
      ${drawn.allocations.map((a) => scopeKey(a.machine_id))}::text[], ${drawn.allocations.map((a) => a.amount)}::bigint[],
      ${holds.grants}::text[], ${holds.periods}::text[], ${holds.amounts}::bigint[]
    )::ledger_finish_request])`.pipe(
    Effect.map(([row]): DrawResult => !row!.finished ? "duplicate" : row!.status === "drawn" ? "drawn" : "charged"),
    Effect.orDie,
    Effect.withSpan("LedgerStore.draw")
  )
}
