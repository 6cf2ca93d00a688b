/**
 * Constant-time in-memory stores for the benchmark's `--stores memory` (not a product component):
 * the test harness's memory stores copy their maps on every write (O(n) per call: they are built
 * for atomicity in property tests, not speed), so after a few thousand calls they, not the
 * gateway, are what a run measures. These keep the ledger, usage and rate-limit state in mutable
 * maps (one event loop, no await inside an operation: each operation is atomic), follow the
 * ports' rules that the benchmark's calls exercise, and leave the rest to the harness's stores.
 */
import { GatewayStoreComposed } from "@model-platform/core/gateway"
import type { PlatformStores } from "@model-platform/core/http"
import {
  type BudgetClaim,
  type BudgetState,
  byScope,
  creditProblem,
  creditTotalsOf,
  firstOverBudget,
  type GrantHold,
  type GrantState,
  type LedgerEntry,
  LedgerStore,
  type Reservation,
  reservedAmount,
  type ScopeBalance,
  scopeKey,
  settlementProblem
} from "@model-platform/core/ledger"
import { RateLimitStore } from "@model-platform/core/kernel"
import { byTimeThenRef, matchesUsageQuery, reportOf, type UsageRecord, UsageStore } from "@model-platform/core/billing"
import { OrderStoreMemory } from "@model-platform/memory-stores/MemoryOrderStore"
import { DepositWatchStoreMemory } from "@model-platform/memory-stores/MemoryDepositWatchStore"
import { AlertStoreMemory } from "@model-platform/memory-stores/MemoryAlertStore"
import { BillingSettingsStoreMemory } from "@model-platform/memory-stores/MemoryBillingSettingsStore"
import { PeopleStoreMemory } from "@model-platform/memory-stores/MemoryPeopleStore"
import { PlanStoreMemory } from "@model-platform/memory-stores/MemoryPlanStore"
import { AgentStoreMemory } from "@model-platform/memory-stores/MemoryAgentStore"
import { ApprovalStoreMemory, DocumentStoresMemory } from "@model-platform/memory-stores/MemoryDocuments"
import { MemoryStores } from "@model-platform/memory-stores/MemoryStores"
import { Effect, Layer, Stream } from "effect"

const LedgerStoreFast = Layer.sync(LedgerStore, () => {
  const entries = new Map<string, Array<LedgerEntry>>()
  const refs = new Set<string>()
  const scopes = new Map<string, Map<string, ScopeBalance>>()
  const reservations = new Map<string, Reservation>()
  // Budgets (docs/billing.md "Monthly limits"): limits by `account\0budget`, counters by `account\0month\0budget`.
  const limits = new Map<string, bigint>()
  const months = new Map<string, { spent: bigint; held: bigint }>()
  const budgetMonth = (accountId: string, month: string, budget: string) => {
    const key = `${accountId}\u0000${month}\u0000${budget}`
    let m = months.get(key)
    if (m === undefined) months.set(key, (m = { spent: 0n, held: 0n }))
    return m
  }
  const adjustBudgets = (r: Reservation, held: bigint, spent: bigint) => {
    for (const { budget, month } of r.budgets ?? []) {
      const m = budgetMonth(r.account_id, month, budget)
      m.held += held
      m.spent += spent
    }
  }
  // Grants (docs/billing.md "Allowances and the trial"): spent and held by `account\0grant\0period`.
  const grantStates = new Map<string, { spent: bigint; held: bigint }>()
  const grantState = (accountId: string, grant: string, period: string) => {
    const key = `${accountId}\u0000${grant}\u0000${period}`
    let g = grantStates.get(key)
    if (g === undefined) grantStates.set(key, (g = { spent: 0n, held: 0n }))
    return g
  }
  /** Releases a reservation's grant holds, spending the charges (a settlement's) in them. */
  const releaseGrants = (r: Reservation, charges: ReadonlyArray<GrantHold> = []) => {
    for (const hold of r.grants ?? []) {
      const g = grantState(r.account_id, hold.grant, hold.period)
      g.held -= hold.amount
      g.spent += charges.find((c) => c.grant === hold.grant && c.period === hold.period)?.amount ?? 0n
    }
  }
  const scopesOf = (accountId: string) => {
    let s = scopes.get(accountId)
    if (s === undefined) scopes.set(accountId, (s = new Map()))
    return s
  }
  const adjust = (accountId: string, machineId: string | null, posted: bigint, held: bigint) => {
    const s = scopesOf(accountId)
    const key = scopeKey(machineId)
    const current = s.get(key) ?? { machine_id: machineId, posted: 0n, held: 0n }
    s.set(key, { machine_id: machineId, posted: current.posted + posted, held: current.held + held })
  }
  const append = (entry: LedgerEntry) => {
    refs.add(`${entry.account_id}\u0000${entry.ref}`)
    let list = entries.get(entry.account_id)
    if (list === undefined) entries.set(entry.account_id, (list = []))
    list.push(entry)
    adjust(entry.account_id, entry.machine_id, entry.amount, 0n)
  }
  const finish = (ref: string, status: "voided" | "expired", at: string) => {
    const r = reservations.get(ref)
    if (r === undefined || r.status !== "pending") return false
    for (const a of r.allocations) adjust(r.account_id, a.machine_id, 0n, -a.amount)
    adjustBudgets(r, -reservedAmount(r.allocations), 0n)
    releaseGrants(r)
    reservations.set(ref, { ...r, status, finished_at: at })
    return true
  }
  return LedgerStore.of({
    post: (entry) =>
      Effect.sync(() => {
        const problem = creditProblem(entry)
        if (problem !== undefined) throw new Error(problem)
        if (refs.has(`${entry.account_id}\u0000${entry.ref}`)) return "duplicate" as const
        append(entry)
        return "posted" as const
      }),
    balances: (accountId) => Effect.sync(() => [...scopesOf(accountId).values()].sort(byScope)),
    entries: (accountId, limit) =>
      Effect.sync(() => {
        const all = [...(entries.get(accountId) ?? [])].reverse()
        return limit === undefined ? all : all.slice(0, limit)
      }),
    creditTotals: (accountId) => Effect.sync(() => creditTotalsOf(entries.get(accountId) ?? [])),
    reserve: (reservation) =>
      Effect.sync(() => {
        if (reservations.has(reservation.ref)) return "duplicate" as const
        const claims = reservation.budgets ?? []
        const amount = reservedAmount(reservation.allocations)
        const stateOf = (claim: BudgetClaim) => ({
          limit: limits.get(`${reservation.account_id}\u0000${claim.budget}`) ?? null,
          ...budgetMonth(reservation.account_id, claim.month, claim.budget)
        })
        if (firstOverBudget(claims, stateOf, amount) !== undefined) return "over_budget" as const
        const holds = reservation.grants ?? []
        for (const h of holds) {
          const g = grantState(reservation.account_id, h.grant, h.period)
          if (g.spent + g.held + h.amount > h.size) return "insufficient" as const
        }
        const s = scopesOf(reservation.account_id)
        for (const a of reservation.allocations) {
          const scope = s.get(scopeKey(a.machine_id))
          if (scope === undefined || scope.posted - scope.held < a.amount) return "insufficient" as const
        }
        for (const a of reservation.allocations) adjust(reservation.account_id, a.machine_id, 0n, a.amount)
        const { budgets: _, grants: __, ...fields } = reservation
        for (const h of holds) grantState(reservation.account_id, h.grant, h.period).held += h.amount
        const stored: Reservation = {
          ...fields,
          ...(claims.length === 0 ? {} : { budgets: claims.map(({ budget, month }) => ({ budget, month })) }),
          ...(holds.length === 0 ? {} : { grants: holds.map(({ amount, grant, period }) => ({ grant, period, amount })) }),
          status: "pending",
          finished_at: null,
          charged: null,
          excess: null
        }
        reservations.set(reservation.ref, stored)
        adjustBudgets(stored, amount, 0n)
        return "reserved" as const
      }),
    reservation: (ref) => Effect.sync(() => reservations.get(ref)),
    pending: (accountId) =>
      Effect.sync(() => [...reservations.values()].filter((r) => r.account_id === accountId && r.status === "pending")),
    settle: (settlement) =>
      Effect.sync(() => {
        const r = reservations.get(settlement.ref)
        if (r === undefined || r.status !== "pending") return "not_pending" as const
        const problem = settlementProblem(r, settlement)
        if (problem !== undefined) throw new Error(problem)
        for (const a of r.allocations) adjust(r.account_id, a.machine_id, 0n, -a.amount)
        adjustBudgets(r, -reservedAmount(r.allocations), settlement.charged)
        releaseGrants(r, settlement.grants)
        for (const entry of settlement.entries) append(entry)
        reservations.set(r.ref, { ...r, status: "settled", finished_at: settlement.at, charged: settlement.charged, excess: settlement.excess })
        return "settled" as const
      }),
    void: (ref, at) => Effect.sync(() => (finish(ref, "voided", at) ? "voided" as const : "not_pending" as const)),
    expire: (now) =>
      Effect.sync(() => {
        const due = [...reservations.values()].filter((r) => r.status === "pending" && r.expires_at <= now)
        for (const r of due) finish(r.ref, "expired", now)
        return due.map((r) => r.ref)
      }),
    setBudgetLimit: (accountId, budget, limit) =>
      Effect.sync(() => {
        if (limit === null) limits.delete(`${accountId}\u0000${budget}`)
        else limits.set(`${accountId}\u0000${budget}`, limit)
      }),
    budgets: (accountId, month) =>
      Effect.sync(() => {
        const found = new Map<string, BudgetState>()
        for (const [key, limit] of limits) {
          const [account, budget] = key.split("\u0000") as [string, string]
          if (account === accountId) found.set(budget, { budget, limit, spent: 0n, held: 0n })
        }
        for (const [key, { held, spent }] of months) {
          const [account, m, budget] = key.split("\u0000") as [string, string, string]
          if (account !== accountId || m !== month || (spent === 0n && held === 0n)) continue
          found.set(budget, { budget, limit: found.get(budget)?.limit ?? null, spent, held })
        }
        return [...found.values()].sort((a, b) => (a.budget < b.budget ? -1 : a.budget > b.budget ? 1 : 0))
      }),
    grants: (accountId) =>
      Effect.sync(() => {
        const found: Array<GrantState> = []
        for (const [key, { held, spent }] of grantStates) {
          const [account, grant, period] = key.split("\u0000") as [string, string, string]
          if (account === accountId && (spent !== 0n || held !== 0n)) found.push({ grant, period, spent, held })
        }
        return found.sort((a, b) =>
          a.grant < b.grant ? -1 : a.grant > b.grant ? 1 : a.period < b.period ? -1 : a.period > b.period ? 1 : 0
        )
      })
  })
})

const UsageStoreFast = Layer.sync(UsageStore, () => {
  const records = new Map<string, UsageRecord>()
  const matching = (query: Parameters<UsageStore["Service"]["list"]>[0]) =>
    [...records.values()].filter((r) => matchesUsageQuery(query, r))
  return UsageStore.of({
    record: (usage) =>
      Effect.sync(() => {
        if (records.has(usage.ref)) return "Duplicate" as const
        records.set(usage.ref, usage)
        return "Recorded" as const
      }),
    byRef: (ref) => Effect.sync(() => records.get(ref)),
    list: (query) => Effect.sync(() => matching(query)),
    spent: (query) => Effect.sync(() => matching(query).reduce((n, r) => n + r.credits, 0n)),
    // Off the calls' path: from the records, no rollups kept.
    report: (query, groupBy) => Effect.sync(() => reportOf(records.values(), query, groupBy)),
    stream: (query) => Stream.suspend(() => Stream.fromIterable(matching(query).sort(byTimeThenRef)))
  })
})

const RateLimitStoreFast = Layer.sync(RateLimitStore, () => {
  const counters = new Map<string, number>()
  return RateLimitStore.of({
    hit: (bucket, windowStart) =>
      Effect.sync(() => {
        const key = `${windowStart}:${bucket}`
        const count = (counters.get(key) ?? 0) + 1
        counters.set(key, count)
        return count
      })
  })
})

/** Every store the platform needs: accounts, keys, idempotency, orders and plans from the harness. */
export const FastMemoryStores: Layer.Layer<PlatformStores> = Layer.provideMerge(
  GatewayStoreComposed,
  Layer.mergeAll(MemoryStores, OrderStoreMemory, LedgerStoreFast, UsageStoreFast, RateLimitStoreFast, PeopleStoreMemory, BillingSettingsStoreMemory,
    AlertStoreMemory, PlanStoreMemory, AgentStoreMemory, ApprovalStoreMemory, DocumentStoresMemory, DepositWatchStoreMemory)
)
