/**
 * The ledger store port's shared rules (ledger/LedgerStore.ts): the input every store refuses as a
 * defect (credits, reservations, grants, budgets, settlements), the keys and orders stores list
 * in, and the sums they must answer. Pure, shared by the stores and the property tests.
 */
import { budgetScopeOf } from "./BudgetScope.ts"
import type {
  Allocation,
  BudgetClaim,
  CreditTotal,
  GrantClaim,
  GrantHold,
  LedgerEntry,
  NewReservation,
  OrderedReservation,
  Reservation,
  ReserveInOrderResult,
  Settlement
} from "./LedgerStore.ts"

/** The key of a scope in maps and in stores that cannot key on null: "" is account-wide. */
export const scopeKey = (machineId: string | null): string => machineId ?? ""

/** Account-wide first, then pinned scopes by machine id: the order `balances` answers in. */
export const byScope = (a: { readonly machine_id: string | null }, b: { readonly machine_id: string | null }): number => {
  const x = scopeKey(a.machine_id)
  const y = scopeKey(b.machine_id)
  return x < y ? -1 : x > y ? 1 : 0
}

const badMachineId = (machineId: string | null) => machineId !== null && machineId.length === 0

/** Why `post` must refuse this entry, or undefined. */
export const creditProblem = (entry: LedgerEntry): string | undefined => {
  if (entry.type === "usage") return "usage entries are written by settle only"
  if (entry.type === "credit_reversed") {
    if (entry.amount >= 0n) return `a reversal must be negative, got ${entry.amount}`
  } else if (entry.amount <= 0n) return `a credit must be positive, got ${entry.amount}`
  if (badMachineId(entry.machine_id)) return "machine ids must be non-empty"
  return undefined
}

/** Why `reserve` must refuse these allocations, or undefined. */
export const reservationProblem = (reservation: NewReservation): string | undefined => {
  if (badMachineId(reservation.machine_id)) return "machine ids must be non-empty"
  const seen = new Set<string>()
  for (const allocation of reservation.allocations) {
    if (allocation.amount <= 0n) return `allocation amounts must be positive, got ${allocation.amount}`
    if (badMachineId(allocation.machine_id)) return "machine ids must be non-empty"
    if (allocation.machine_id !== null && allocation.machine_id !== reservation.machine_id) {
      return `credits pinned to ${allocation.machine_id} allocated to a call on ${reservation.machine_id ?? "no machine"}`
    }
    const key = scopeKey(allocation.machine_id)
    if (seen.has(key)) return `two allocations in one scope (${key || "account-wide"})`
    seen.add(key)
  }
  return budgetClaimsProblem(reservation.budgets ?? []) ?? grantHoldsProblem(reservation.grants ?? [])
}

/** Why `reserveInOrder` must refuse this request (a defect), or undefined. */
export const orderedReservationProblem = (request: OrderedReservation): string | undefined =>
  request.amount < 0n
    ? `negative amount ${request.amount}`
    : reservationProblem({ ...request, allocations: [], grants: [] }) ??
      grantClaimsProblem(request.grants ?? []) ??
      (request.scopes.some((s) => s !== null && s !== request.machine_id)
        ? `credits pinned to another machine than ${request.machine_id ?? "no machine"} in the spending order`
        : new Set(request.scopes.map(scopeKey)).size !== request.scopes.length
        ? "a scope twice in the spending order"
        : undefined)

const GRANT = /^(allowance|trial):[^\s]+$/
/** A month, "once" (the trial), or the start of a plan's period (a plan's allowance). */
const PERIOD = /^(\d{4}-(0[1-9]|1[0-2])|once|\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z)$/

/** Why a grant and period are not ones a store keeps, or undefined. */
export const grantProblem = (grant: string, period: string): string | undefined =>
  !GRANT.test(grant)
    ? `a grant is "allowance:<service>" or "trial:<service>", got ${JSON.stringify(grant)}`
    : !PERIOD.test(period)
    ? `a grant period is YYYY-MM, "once" or a period's start (an ISO timestamp), got ${JSON.stringify(period)}`
    : undefined

/** Why grant claims (OrderedReservation.grants) must be refused, or undefined. */
export const grantClaimsProblem = (claims: ReadonlyArray<GrantClaim>): string | undefined => {
  const seen = new Set<string>()
  for (const claim of claims) {
    const problem = grantProblem(claim.grant, claim.period)
    if (problem !== undefined) return problem
    if (claim.size < 0n) return `negative grant size ${claim.size}`
    const key = `${claim.grant} ${claim.period}`
    if (seen.has(key)) return `grant ${key} claimed twice`
    seen.add(key)
  }
  return undefined
}

/** Why a reservation's grant holds (NewReservation.grants) must be refused, or undefined. */
export const grantHoldsProblem = (
  holds: ReadonlyArray<GrantHold & { readonly size: bigint }>
): string | undefined => {
  for (const hold of holds) {
    if (hold.amount <= 0n) return `grant holds must be positive, got ${hold.amount}`
    if (hold.amount > hold.size) return `a hold of ${hold.amount} in a grant of ${hold.size}`
  }
  return grantClaimsProblem(holds)
}

/** What a reservation holds of grants in all. */
export const grantsAmount = (holds: ReadonlyArray<Pick<GrantHold, "amount">> | undefined): bigint =>
  (holds ?? []).reduce((sum, h) => sum + h.amount, 0n)

/** A budget name some scope has (BudgetScope.ts): "account", "key:<id>", "agent:<id>:day|total". */
export const budgetProblem = (budget: string): string | undefined =>
  budgetScopeOf(budget) !== undefined
    ? undefined
    : `a budget is "account", "key:<id>" or "agent:<id>:day|total", got ${JSON.stringify(budget)}`

const MONTH = /^\d{4}-(0[1-9]|1[0-2])$/
const DAY = /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$/

/** The period a budget's claims count in: a month; an agent's day budget a UTC day, its total budget "total". */
const periodProblem = (budget: string, period: string): string | undefined => {
  switch (budgetScopeOf(budget)?._tag) {
    case "AgentDay":
      return DAY.test(period) ? undefined : `an agent's day budget counts in a day (YYYY-MM-DD), got ${JSON.stringify(period)}`
    case "AgentTotal":
      return period === "total" ? undefined : `an agent's total budget counts in "total", got ${JSON.stringify(period)}`
    default:
      return MONTH.test(period) ? undefined : `a budget month is YYYY-MM, got ${JSON.stringify(period)}`
  }
}

/** Why a reservation's budget claims must be refused, or undefined. */
export const budgetClaimsProblem = (claims: ReadonlyArray<BudgetClaim>): string | undefined => {
  const seen = new Set<string>()
  for (const claim of claims) {
    const problem = budgetProblem(claim.budget)
    if (problem !== undefined) return problem
    const period = periodProblem(claim.budget, claim.month)
    if (period !== undefined) return period
    if (claim.default_limit !== null && claim.default_limit < 0n) return `negative default limit ${claim.default_limit}`
    if (seen.has(claim.budget)) return `budget ${claim.budget} claimed twice`
    seen.add(claim.budget)
  }
  return undefined
}

/** Why `setBudgetLimit` must refuse this, or undefined. */
export const budgetLimitProblem = (budget: string, limit: bigint | null): string | undefined =>
  budgetProblem(budget) ?? (limit !== null && limit < 0n ? `negative limit ${limit}` : undefined)

/** What a reservation holds in all: the sum of its allocations (what its budget claims hold). */
export const reservedAmount = (allocations: ReadonlyArray<Allocation>): bigint =>
  allocations.reduce((sum, a) => sum + a.amount, 0n)

export type OverBudget = Extract<ReserveInOrderResult, { readonly _tag: "over_budget" }>

/**
 * The first claim, in the order given, whose limit in force (the budget's own, else the claim's
 * default; null: none) `amount` would pass, from each budget's state in the claim's month.
 */
export const firstOverBudget = (
  claims: ReadonlyArray<BudgetClaim>,
  stateOf: (claim: BudgetClaim) => { readonly limit: bigint | null; readonly spent: bigint; readonly held: bigint },
  amount: bigint
): OverBudget | undefined => {
  for (const claim of claims) {
    const state = stateOf(claim)
    const limit = state.limit ?? claim.default_limit
    const used = state.spent + state.held
    if (limit !== null && used + amount > limit) return { _tag: "over_budget", budget: claim.budget, limit, used }
  }
  return undefined
}

/** Why `settle` must refuse this settlement of this (pending) reservation, or undefined. */
export const settlementProblem = (reservation: Reservation, settlement: Settlement): string | undefined => {
  if (settlement.charged < 0n || settlement.excess < 0n || settlement.excess > settlement.charged) {
    return `bad totals: charged ${settlement.charged}, excess ${settlement.excess}`
  }
  const scopes = new Set<string>()
  const refs = new Set<string>()
  for (const entry of settlement.entries) {
    if (entry.account_id !== reservation.account_id) return "an entry of another account"
    if (entry.type !== "usage" || entry.amount >= 0n) return "settlement entries are negative usage entries"
    if (entry.machine_id !== null && entry.machine_id !== reservation.machine_id) {
      return `charges credits pinned to ${entry.machine_id} for a call on ${reservation.machine_id ?? "no machine"}`
    }
    const key = scopeKey(entry.machine_id)
    if (scopes.has(key)) return "two entries in one scope"
    scopes.add(key)
    if (refs.has(entry.ref)) return `entry ref ${entry.ref} twice`
    refs.add(entry.ref)
  }
  const charged = settlement.entries.reduce((sum, e) => sum - e.amount, 0n)
  if (charged !== settlement.charged) return `entries charge ${charged} but the settlement says ${settlement.charged}`
  const charges = new Set<string>()
  for (const charge of settlement.grants ?? []) {
    const key = `${charge.grant} ${charge.period}`
    const hold = (reservation.grants ?? []).find((h) => h.grant === charge.grant && h.period === charge.period)
    if (hold === undefined) return `charges grant ${key}, which the reservation does not hold`
    if (charge.amount <= 0n || charge.amount > hold.amount) return `charges ${charge.amount} of a hold of ${hold.amount} in ${key}`
    if (charges.has(key)) return `charges grant ${key} twice`
    charges.add(key)
  }
  return undefined
}

/** What `creditTotals` must answer: the credit entries summed per UTC month and type, in its order. */
export const creditTotalsOf = (entries: Iterable<LedgerEntry>): Array<CreditTotal> => {
  const sums = new Map<string, CreditTotal>()
  for (const e of entries) {
    if (e.type === "usage") continue
    const month = e.created_at.slice(0, 7)
    const id = `${month} ${e.type}`
    sums.set(id, { month, type: e.type, amount: (sums.get(id)?.amount ?? 0n) + e.amount })
  }
  return [...sums.values()].filter((t) => t.amount !== 0n).sort(byCreditTotal)
}

/** By month, then by type. */
export const byCreditTotal = (a: CreditTotal, b: CreditTotal): number =>
  a.month < b.month ? -1 : a.month > b.month ? 1 : a.type < b.type ? -1 : a.type > b.type ? 1 : 0
