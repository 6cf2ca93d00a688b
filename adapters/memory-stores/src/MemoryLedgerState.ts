/**
 * The memory ledger store's state (MemoryLedgerStore.ts) and the steps its operations share:
 * each operation is one pure step from one State to the next, run in a single `Ref.modify`.
 */
import { Effect, Ref } from "effect"
import {
  type GrantHold,
  type LedgerEntry,
  type Reservation,
  reservedAmount,
  type ScopeBalance,
  scopeKey,
  type Settlement
} from "@model-platform/core/ledger"
import type { Timestamp } from "@model-platform/core/kernel"

export interface AccountLedger {
  /** In insertion order. */
  readonly entries: ReadonlyArray<LedgerEntry>
  readonly refs: ReadonlySet<string>
  /** By scopeKey. */
  readonly scopes: ReadonlyMap<string, ScopeBalance>
}

export interface State {
  readonly accounts: ReadonlyMap<string, AccountLedger>
  readonly reservations: ReadonlyMap<string, Reservation>
  /** Every entry id (unique across accounts, like a primary key). */
  readonly ids: ReadonlySet<string>
  /** Budget limits set, by limitKey. */
  readonly limits: ReadonlyMap<string, bigint>
  /** Per budget and month, by monthKey. */
  readonly months: ReadonlyMap<string, BudgetMonth>
  /** Per grant and period, by monthKey (the period in the month's place). */
  readonly grants: ReadonlyMap<string, BudgetMonth>
}

export interface BudgetMonth {
  readonly spent: bigint
  readonly held: bigint
}

export const limitKey = (accountId: string, budget: string) => `${accountId}\u0000${budget}`
export const monthKey = (accountId: string, month: string, budget: string) => `${accountId}\u0000${month}\u0000${budget}`

/** Adds to the held and spent of a reservation's budgets (all in one month each). */
export const adjustBudgets = (
  state: State,
  reservation: Pick<Reservation, "account_id" | "budgets">,
  delta: BudgetMonth
): ReadonlyMap<string, BudgetMonth> => {
  if (reservation.budgets === undefined) return state.months
  const months = new Map(state.months)
  for (const { budget, month } of reservation.budgets) {
    const key = monthKey(reservation.account_id, month, budget)
    const current = months.get(key) ?? { spent: 0n, held: 0n }
    months.set(key, { spent: current.spent + delta.spent, held: current.held + delta.held })
  }
  return months
}

/** Adds `delta(amount)` to the spent and held of each item's grant and period. */
export const adjustGrants = (
  grants: ReadonlyMap<string, BudgetMonth>,
  accountId: string,
  items: ReadonlyArray<GrantHold>,
  delta: (amount: bigint) => BudgetMonth
): ReadonlyMap<string, BudgetMonth> => {
  if (items.length === 0) return grants
  const next = new Map(grants)
  for (const item of items) {
    const key = monthKey(accountId, item.period, item.grant)
    const current = next.get(key) ?? { spent: 0n, held: 0n }
    const { held, spent } = delta(item.amount)
    next.set(key, { spent: current.spent + spent, held: current.held + held })
  }
  return next
}

export const emptyAccount: AccountLedger = { entries: [], refs: new Set(), scopes: new Map() }

/** Either [result, next state] or a reason to die (leaving the state unchanged). */
export type Step<A> = readonly [A, State] | { readonly defect: string }

export const modifyOrDie = <A>(ref: Ref.Ref<State>, f: (state: State) => Step<A>): Effect.Effect<A> =>
  Ref.modify(ref, (state): readonly [Step<A>, State] => {
    const step = f(state)
    return "defect" in step ? [step, state] : [step, step[1]]
  }).pipe(Effect.flatMap((step) => "defect" in step ? Effect.die(new Error(step.defect)) : Effect.succeed(step[0])))

export const copyReservation = (r: Reservation): Reservation => {
  const { budgets, grants, ...rest } = r
  // Only the budget and month of each claim are kept, and the grant holds without their sizes;
  // none: no `budgets` (`grants`) at all.
  return {
    ...rest,
    allocations: r.allocations.map((a) => ({ ...a })),
    ...(budgets === undefined || budgets.length === 0 ? {} : { budgets: budgets.map(({ budget, month }) => ({ budget, month })) }),
    ...(grants === undefined || grants.length === 0
      ? {}
      : { grants: grants.map(({ amount, grant, period }) => ({ grant, period, amount })) })
  }
}

/** Newest first: later created_at first, then later insertion first. */
export const newestFirst = (entries: ReadonlyArray<LedgerEntry>): Array<LedgerEntry> =>
  entries
    .map((entry, seq) => ({ entry, seq }))
    .sort((a, b) =>
      a.entry.created_at > b.entry.created_at ? -1 : a.entry.created_at < b.entry.created_at ? 1 : b.seq - a.seq
    )
    .map(({ entry }) => entry)

/** Adds `posted` and `held` deltas to a scope, creating it at zero. */
export const adjust = (
  scopes: Map<string, ScopeBalance>,
  machineId: string | null,
  delta: { readonly posted?: bigint; readonly held?: bigint }
) => {
  const key = scopeKey(machineId)
  const current = scopes.get(key) ?? { machine_id: machineId, posted: 0n, held: 0n }
  scopes.set(key, {
    machine_id: machineId,
    posted: current.posted + (delta.posted ?? 0n),
    held: current.held + (delta.held ?? 0n)
  })
}

/** Finishes a pending reservation without charging (void or expiry): releases its holds. */
export const release = (
  state: State,
  reservation: Reservation,
  status: "voided" | "expired",
  at: Timestamp
): State => ({
  ...unhold(state, reservation, heldBy(reservation)),
  reservations: new Map(state.reservations).set(reservation.ref, { ...reservation, status, finished_at: at })
})

/** What a settlement, a draw or a release takes off what was held: allocations, and grant holds. */
export interface Released {
  readonly allocations: ReadonlyArray<{ readonly machine_id: string | null; readonly amount: bigint }>
  readonly grants: ReadonlyArray<GrantHold>
}

/** What a pending reservation holds. */
export const heldBy = (reservation: Reservation): Released => ({
  allocations: reservation.allocations,
  grants: reservation.grants ?? []
})

/** Takes `released` off the `held` of its scopes, of reservation `record`'s budgets, and of its grants. */
export const unhold = (s: State, record: Pick<Reservation, "account_id" | "budgets">, released: Released): State => {
  const account = s.accounts.get(record.account_id) ?? emptyAccount
  const scopes = new Map(account.scopes)
  for (const allocation of released.allocations) adjust(scopes, allocation.machine_id, { held: -allocation.amount })
  return {
    ...s,
    accounts: new Map(s.accounts).set(record.account_id, { ...account, scopes }),
    months: adjustBudgets(s, record, { held: -reservedAmount(released.allocations), spent: 0n }),
    grants: adjustGrants(s.grants, record.account_id, released.grants, (amount) => ({ spent: 0n, held: -amount }))
  }
}

/**
 * Charges `settlement` for reservation `record` (its account, its budgets): its entries posted,
 * its grant charges and its charge spent; or a defect when an entry's ref or id exists.
 */
export const charge = (
  s: State,
  record: Pick<Reservation, "account_id" | "budgets">,
  settlement: Pick<Settlement, "charged" | "entries" | "grants">
): Step<void> => {
  const account = s.accounts.get(record.account_id) ?? emptyAccount
  const refs = new Set(account.refs)
  const ids = new Set(s.ids)
  for (const entry of settlement.entries) {
    if (refs.has(entry.ref)) return { defect: `entry ref ${entry.ref} exists` }
    refs.add(entry.ref)
    if (ids.has(entry.id)) return { defect: `duplicate entry id ${entry.id}` }
    ids.add(entry.id)
  }
  const scopes = new Map(account.scopes)
  for (const entry of settlement.entries) adjust(scopes, entry.machine_id, { posted: entry.amount })
  const next: AccountLedger = {
    entries: [...account.entries, ...settlement.entries.map((e) => ({ ...e }))],
    refs,
    scopes
  }
  return [undefined, {
    ...s,
    accounts: new Map(s.accounts).set(record.account_id, next),
    ids,
    months: adjustBudgets(s, record, { held: 0n, spent: settlement.charged }),
    grants: adjustGrants(s.grants, record.account_id, settlement.grants ?? [], (amount) => ({ spent: amount, held: 0n }))
  }]
}
