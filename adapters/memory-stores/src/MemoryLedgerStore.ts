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
  type Draw,
  firstOverBudget,
  type GrantState,
  type LedgerEntry,
  LedgerStore,
  type NewReservation,
  type Reservation,
  reservationProblem,
  reservedAmount,
  scopeKey,
  type Settlement,
  settlementProblem
} from "@model-platform/core/ledger"
import type { Timestamp } from "@model-platform/core/kernel"
import { drawStep } from "./MemoryLedgerDraw.ts"
import {
  adjust,
  adjustBudgets,
  adjustGrants,
  type AccountLedger,
  charge,
  copyReservation,
  emptyAccount,
  heldBy,
  limitKey,
  modifyOrDie,
  monthKey,
  newestFirst,
  release,
  type State,
  type Step,
  unhold
} from "./MemoryLedgerState.ts"

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
          grants: adjustGrants(s.grants, reservation.account_id, stored.grants ?? [], (amount) => ({ spent: 0n, held: amount })),
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
        const charged = charge(unhold(s, found, heldBy(found)), found, settlement)
        if ("defect" in charged) return { defect: `LedgerStore.settle: ${charged.defect}` }
        const settled: Reservation = {
          ...found,
          status: "settled",
          finished_at: settlement.at,
          charged: settlement.charged,
          excess: settlement.excess
        }
        return ["settled", { ...charged[1], reservations: new Map(charged[1].reservations).set(found.ref, settled) }]
      }).pipe(Effect.withSpan("LedgerStore.settle"))

    const draw = (d: Draw) => modifyOrDie(state, (s) => drawStep(s, d)).pipe(Effect.withSpan("LedgerStore.draw"))

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
      draw,
      void: voidReservation,
      expire,
      setBudgetLimit,
      budgets,
      grants
    })
  })
)
