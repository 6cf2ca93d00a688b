/**
 * The ledger store port in memory, for tests and property tests. Every rule the port documents is
 * kept: unique refs per account, all-or-none reserves, exactly-once settle/void/expire, cached
 * balances that equal their entries. State lives in one Ref and each operation is a single
 * `Ref.modify` (reads are a single `Ref.get`), which is what makes it atomic between fibers.
 * Input that breaks the port's rules (a usage entry posted as a credit, an allocation pinned to
 * another machine, a non-positive amount...) is a defect, as a violated constraint is in SQL.
 * Budgets (docs/billing.md "Monthly limits") live in the same state: a reservation's claims are
 * checked and held in the same `Ref.modify` as its balance, and so are its grants (the allowance,
 * the trial: docs/billing.md "Allowances and the trial").
 */
import { Effect, Layer, Ref } from "effect"
import {
  type BudgetClaim,
  budgetLimitProblem,
  type BudgetState,
  byScope,
  creditProblem,
  creditTotalsOf,
  firstOverBudget,
  type GrantHold,
  type GrantState,
  type LedgerEntry,
  LedgerStore,
  type NewReservation,
  type Reservation,
  reservationProblem,
  reservedAmount,
  type ScopeBalance,
  scopeKey,
  type Settlement,
  settlementProblem
} from "@model-platform/core/ledger"
import type { Timestamp } from "@model-platform/core/kernel"

interface AccountLedger {
  /** In insertion order. */
  readonly entries: ReadonlyArray<LedgerEntry>
  readonly refs: ReadonlySet<string>
  /** By scopeKey. */
  readonly scopes: ReadonlyMap<string, ScopeBalance>
}

interface State {
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

interface BudgetMonth {
  readonly spent: bigint
  readonly held: bigint
}

const limitKey = (accountId: string, budget: string) => `${accountId}\u0000${budget}`
const monthKey = (accountId: string, month: string, budget: string) => `${accountId}\u0000${month}\u0000${budget}`

/** Adds to the held and spent of a reservation's budgets (all in one month each). */
const adjustBudgets = (
  state: State,
  reservation: Reservation,
  delta: { readonly held: bigint; readonly spent: bigint }
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

/** Adds to the held and spent of grants: `held` per hold (its sign given), `spent` from the charges. */
const adjustGrants = (
  state: State,
  accountId: string,
  holds: ReadonlyArray<GrantHold>,
  sign: 1n | -1n,
  charges: ReadonlyArray<GrantHold> = []
): ReadonlyMap<string, BudgetMonth> => {
  if (holds.length === 0) return state.grants
  const grants = new Map(state.grants)
  for (const hold of holds) {
    const key = monthKey(accountId, hold.period, hold.grant)
    const current = grants.get(key) ?? { spent: 0n, held: 0n }
    const charge = charges.find((c) => c.grant === hold.grant && c.period === hold.period)?.amount ?? 0n
    grants.set(key, { spent: current.spent + charge, held: current.held + sign * hold.amount })
  }
  return grants
}

const emptyAccount: AccountLedger = { entries: [], refs: new Set(), scopes: new Map() }

/** Either [result, next state] or a reason to die (leaving the state unchanged). */
type Step<A> = readonly [A, State] | { readonly defect: string }

const modifyOrDie = <A>(ref: Ref.Ref<State>, f: (state: State) => Step<A>): Effect.Effect<A> =>
  Ref.modify(ref, (state): readonly [Step<A>, State] => {
    const step = f(state)
    return "defect" in step ? [step, state] : [step, step[1]]
  }).pipe(Effect.flatMap((step) => "defect" in step ? Effect.die(new Error(step.defect)) : Effect.succeed(step[0])))

const copyReservation = (r: Reservation): Reservation => {
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
const newestFirst = (entries: ReadonlyArray<LedgerEntry>): Array<LedgerEntry> =>
  entries
    .map((entry, seq) => ({ entry, seq }))
    .sort((a, b) =>
      a.entry.created_at > b.entry.created_at ? -1 : a.entry.created_at < b.entry.created_at ? 1 : b.seq - a.seq
    )
    .map(({ entry }) => entry)

/** Adds `posted` and `held` deltas to a scope, creating it at zero. */
const adjust = (
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
const release = (
  state: State,
  reservation: Reservation,
  status: "voided" | "expired",
  at: Timestamp
): State => {
  const account = state.accounts.get(reservation.account_id) ?? emptyAccount
  const scopes = new Map(account.scopes)
  for (const allocation of reservation.allocations) adjust(scopes, allocation.machine_id, { held: -allocation.amount })
  return {
    ...state,
    months: adjustBudgets(state, reservation, { held: -reservedAmount(reservation.allocations), spent: 0n }),
    grants: adjustGrants(state, reservation.account_id, reservation.grants ?? [], -1n),
    accounts: new Map(state.accounts).set(reservation.account_id, { ...account, scopes }),
    reservations: new Map(state.reservations).set(reservation.ref, { ...reservation, status, finished_at: at })
  }
}

export const LedgerStoreMemory: Layer.Layer<LedgerStore> = Layer.effect(
  LedgerStore,
  Effect.gen(function*() {
    const state = yield* Ref.make<State>({
      accounts: new Map(),
      reservations: new Map(),
      ids: new Set(),
      limits: new Map(),
      months: new Map(),
      grants: new Map()
    })

    const post = (entry: LedgerEntry) =>
      modifyOrDie(state, (s): Step<"posted" | "duplicate"> => {
        const problem = creditProblem(entry)
        if (problem !== undefined) return { defect: `LedgerStore.post: ${problem}` }
        const account = s.accounts.get(entry.account_id) ?? emptyAccount
        if (account.refs.has(entry.ref)) return ["duplicate", s]
        if (s.ids.has(entry.id)) return { defect: `LedgerStore.post: duplicate entry id ${entry.id}` }
        const scopes = new Map(account.scopes)
        adjust(scopes, entry.machine_id, { posted: entry.amount })
        const next: AccountLedger = {
          entries: [...account.entries, { ...entry }],
          refs: new Set(account.refs).add(entry.ref),
          scopes
        }
        return ["posted", {
          ...s,
          accounts: new Map(s.accounts).set(entry.account_id, next),
          ids: new Set(s.ids).add(entry.id)
        }]
      }).pipe(Effect.withSpan("LedgerStore.post"))

    const balances = (accountId: string) =>
      Effect.map(Ref.get(state), (s) => [...(s.accounts.get(accountId)?.scopes.values() ?? [])].sort(byScope))

    const entries = (accountId: string, limit?: number) =>
      Effect.map(Ref.get(state), (s) => {
        const all = newestFirst(s.accounts.get(accountId)?.entries ?? [])
        return limit === undefined ? all : all.slice(0, limit)
      })

    const creditTotals = (accountId: string) =>
      Effect.map(Ref.get(state), (s) => creditTotalsOf(s.accounts.get(accountId)?.entries ?? []))

    const reserve = (reservation: NewReservation) =>
      modifyOrDie(state, (s): Step<"reserved" | "insufficient" | "duplicate" | "over_budget"> => {
        const problem = reservationProblem(reservation)
        if (problem !== undefined) return { defect: `LedgerStore.reserve: ${problem}` }
        if (s.reservations.has(reservation.ref)) return ["duplicate", s]
        const stateOf = (claim: BudgetClaim) => ({
          limit: s.limits.get(limitKey(reservation.account_id, claim.budget)) ?? null,
          ...(s.months.get(monthKey(reservation.account_id, claim.month, claim.budget)) ?? { spent: 0n, held: 0n })
        })
        const amount = reservedAmount(reservation.allocations)
        if (firstOverBudget(reservation.budgets ?? [], stateOf, amount) !== undefined) return ["over_budget", s]
        for (const hold of reservation.grants ?? []) {
          const g = s.grants.get(monthKey(reservation.account_id, hold.period, hold.grant)) ?? { spent: 0n, held: 0n }
          if (g.spent + g.held + hold.amount > hold.size) return ["insufficient", s]
        }
        const account = s.accounts.get(reservation.account_id) ?? emptyAccount
        for (const allocation of reservation.allocations) {
          const scope = account.scopes.get(scopeKey(allocation.machine_id))
          if (scope === undefined || scope.posted - scope.held < allocation.amount) return ["insufficient", s]
        }
        const scopes = new Map(account.scopes)
        for (const allocation of reservation.allocations) adjust(scopes, allocation.machine_id, { held: allocation.amount })
        const stored: Reservation = copyReservation({
          ...reservation,
          status: "pending",
          finished_at: null,
          charged: null,
          excess: null
        })
        return ["reserved", {
          ...s,
          months: adjustBudgets(s, stored, { held: amount, spent: 0n }),
          grants: adjustGrants(s, reservation.account_id, stored.grants ?? [], 1n),
          accounts: new Map(s.accounts).set(reservation.account_id, { ...account, scopes }),
          reservations: new Map(s.reservations).set(reservation.ref, stored)
        }]
      }).pipe(Effect.withSpan("LedgerStore.reserve"))

    const reservation = (ref: string) =>
      Effect.map(Ref.get(state), (s) => {
        const found = s.reservations.get(ref)
        return found === undefined ? undefined : copyReservation(found)
      })

    const pending = (accountId: string) =>
      Effect.map(Ref.get(state), (s) =>
        // Map iteration follows insertion, and reservations are inserted as they are created.
        [...s.reservations.values()]
          .filter((r) => r.account_id === accountId && r.status === "pending")
          .map(copyReservation))

    const settle = (settlement: Settlement) =>
      modifyOrDie(state, (s): Step<"settled" | "not_pending"> => {
        const found = s.reservations.get(settlement.ref)
        if (found === undefined || found.status !== "pending") return ["not_pending", s]
        const problem = settlementProblem(found, settlement)
        if (problem !== undefined) return { defect: `LedgerStore.settle: ${problem}` }
        const account = s.accounts.get(found.account_id) ?? emptyAccount
        const refs = new Set(account.refs)
        const ids = new Set(s.ids)
        for (const entry of settlement.entries) {
          if (refs.has(entry.ref)) return { defect: `LedgerStore.settle: entry ref ${entry.ref} exists` }
          refs.add(entry.ref)
          if (ids.has(entry.id)) return { defect: `LedgerStore.settle: duplicate entry id ${entry.id}` }
          ids.add(entry.id)
        }
        const scopes = new Map(account.scopes)
        for (const allocation of found.allocations) adjust(scopes, allocation.machine_id, { held: -allocation.amount })
        for (const entry of settlement.entries) adjust(scopes, entry.machine_id, { posted: entry.amount })
        const next: AccountLedger = {
          entries: [...account.entries, ...settlement.entries.map((e) => ({ ...e }))],
          refs,
          scopes
        }
        const settled: Reservation = {
          ...found,
          status: "settled",
          finished_at: settlement.at,
          charged: settlement.charged,
          excess: settlement.excess
        }
        return ["settled", {
          ...s,
          accounts: new Map(s.accounts).set(found.account_id, next),
          reservations: new Map(s.reservations).set(found.ref, settled),
          ids,
          months: adjustBudgets(s, found, { held: -reservedAmount(found.allocations), spent: settlement.charged }),
          grants: adjustGrants(s, found.account_id, found.grants ?? [], -1n, settlement.grants ?? [])
        }]
      }).pipe(Effect.withSpan("LedgerStore.settle"))

    const voidReservation = (ref: string, at: Timestamp) =>
      Ref.modify(state, (s): readonly ["voided" | "not_pending", State] => {
        const found = s.reservations.get(ref)
        if (found === undefined || found.status !== "pending") return ["not_pending", s]
        return ["voided", release(s, found, "voided", at)]
      }).pipe(Effect.withSpan("LedgerStore.void"))

    const expire = (now: Timestamp) =>
      Ref.modify(state, (s): readonly [ReadonlyArray<string>, State] => {
        const due = [...s.reservations.values()].filter((r) => r.status === "pending" && r.expires_at <= now)
        return [due.map((r) => r.ref), due.reduce((acc, r) => release(acc, r, "expired", now), s)]
      }).pipe(Effect.withSpan("LedgerStore.expire"))

    const setBudgetLimit = (accountId: string, budget: string, limit: bigint | null) =>
      modifyOrDie(state, (s): Step<void> => {
        const problem = budgetLimitProblem(budget, limit)
        if (problem !== undefined) return { defect: `LedgerStore.setBudgetLimit: ${problem}` }
        const limits = new Map(s.limits)
        if (limit === null) limits.delete(limitKey(accountId, budget))
        else limits.set(limitKey(accountId, budget), limit)
        return [undefined, { ...s, limits }]
      }).pipe(Effect.withSpan("LedgerStore.setBudgetLimit"))

    const budgets = (accountId: string, month: string) =>
      Effect.map(Ref.get(state), (s) => {
        const found = new Map<string, BudgetState>()
        const at = (budget: string) =>
          found.get(budget) ?? { budget, limit: null, spent: 0n, held: 0n }
        for (const [key, limit] of s.limits) {
          const [account, budget] = key.split("\u0000") as [string, string]
          if (account === accountId) found.set(budget, { ...at(budget), limit })
        }
        for (const [key, { spent, held }] of s.months) {
          const [account, m, budget] = key.split("\u0000") as [string, string, string]
          if (account === accountId && m === month && (spent !== 0n || held !== 0n)) {
            found.set(budget, { ...at(budget), spent, held })
          }
        }
        return [...found.values()].sort((a, b) => a.budget < b.budget ? -1 : a.budget > b.budget ? 1 : 0)
      })

    const grants = (accountId: string) =>
      Effect.map(Ref.get(state), (s): ReadonlyArray<GrantState> => {
        const found: Array<GrantState> = []
        for (const [key, { held, spent }] of s.grants) {
          const [account, period, grant] = key.split("\u0000") as [string, string, string]
          if (account === accountId && (spent !== 0n || held !== 0n)) found.push({ grant, period, spent, held })
        }
        return found.sort((a, b) =>
          a.grant < b.grant ? -1 : a.grant > b.grant ? 1 : a.period < b.period ? -1 : a.period > b.period ? 1 : 0
        )
      })

    return LedgerStore.of({
      post,
      balances,
      entries,
      creditTotals,
      reserve,
      reservation,
      pending,
      settle,
      void: voidReservation,
      expire,
      setBudgetLimit,
      budgets,
      grants
    })
  })
)
