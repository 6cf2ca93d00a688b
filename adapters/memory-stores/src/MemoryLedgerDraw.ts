/**
 * `LedgerStore.draw` in memory (core/src/ledger/LedgerStore.ts, docs/performance.md "Credit
 * leases"): one call that drew from a lease, charged in one pure step of the store's state.
 */
import {
  chargedOf,
  type Draw,
  type DrawResult,
  drawShapeProblem,
  leaseHolds,
  type Reservation,
  settlementProblem,
  takeDrawn
} from "@model-platform/core/ledger"
import { charge, copyReservation, type State, type Step, unhold } from "./MemoryLedgerState.ts"

export const drawStep = (s: State, draw: Draw): Step<DrawResult> => {
  const { settlement } = draw
  if (s.reservations.has(settlement.ref)) return ["duplicate", s]
  const lease = s.reservations.get(draw.lease)
  if (lease === undefined) return { defect: `LedgerStore.draw: unknown lease ${draw.lease}` }
  const drawn = { allocations: draw.allocations, grants: draw.grants ?? [] }
  // The call is recorded as a settled reservation of what it drew (its ref makes a replay a duplicate).
  const record: Reservation = copyReservation({
    ref: settlement.ref,
    account_id: lease.account_id,
    machine_id: lease.machine_id,
    allocations: drawn.allocations,
    ...(lease.budgets === undefined ? {} : { budgets: lease.budgets }),
    ...(drawn.grants.length === 0 ? {} : { grants: drawn.grants }),
    status: "settled",
    created_at: settlement.at,
    expires_at: lease.expires_at,
    finished_at: settlement.at,
    charged: settlement.charged,
    excess: settlement.excess
  })
  const problem = drawShapeProblem(drawn, lease.machine_id) ?? settlementProblem(record, settlement)
  if (problem !== undefined) return { defect: `LedgerStore.draw: ${problem}` }
  let from = s
  let result: DrawResult = "charged"
  if (lease.status === "pending") {
    const fits = takeDrawn(leaseHolds(lease), drawn)
    if ("problem" in fits) return { defect: `LedgerStore.draw: ${fits.problem}` }
    // What the call was charged comes off the lease; the rest of its draw stays with it.
    const charged = chargedOf(drawn, settlement)
    const left = takeDrawn(leaseHolds(lease), charged)
    if ("problem" in left) return { defect: `LedgerStore.draw: ${left.problem}` }
    const { grants: _, ...rest } = lease
    const drained: Reservation = { ...rest, allocations: left.allocations, ...(left.grants.length === 0 ? {} : { grants: left.grants }) }
    from = { ...unhold(s, lease, charged), reservations: new Map(s.reservations).set(lease.ref, drained) }
    result = "drawn"
  }
  const charged = charge(from, lease, settlement)
  if ("defect" in charged) return { defect: `LedgerStore.draw: ${charged.defect}` }
  return [result, { ...charged[1], reservations: new Map(charged[1].reservations).set(record.ref, record) }]
}
