/** What the Postgres stores check of a settlement before sending it (PgLedgerStore, PgGatewayStore, PgLedgerDraw). */
import { type Settlement, settlementProblem } from "@model-platform/core/ledger"

/**
 * The rules of `settlementProblem` that do not need the reservation, checked before the call:
 * against a reservation of the entries' own account and pinned machine, so what is left for
 * `ledger_finish` to check (it raises) is that they are the reservation's, and that each grant
 * charge is one of its grant holds, at most the hold (here checked against holds of exactly the
 * charges: positive, each grant and period once).
 */
export const settlementShapeProblem = (settlement: Settlement): string | undefined => {
  const first = settlement.entries[0]
  const pinned = settlement.entries.find((e) => e.machine_id !== null)?.machine_id ?? null
  const grants = settlement.grants ?? []
  return settlementProblem({
    ref: settlement.ref,
    account_id: first?.account_id ?? "",
    machine_id: pinned,
    allocations: [],
    status: "pending",
    created_at: settlement.at,
    expires_at: settlement.at,
    finished_at: null,
    charged: null,
    excess: null,
    ...(grants.length === 0 ? {} : { grants })
  }, settlement)
}
