/**
 * The ledger store port (`LedgerStore` of @model-platform/core/ledger) on SQLite, with Node's
 * own `node:sqlite`. How a store keeps the port's rules is docs/implementing-a-store.md in the
 * platform's repository; the rules themselves are the port's comments and `LedgerStoreRules`.
 *
 * Atomicity and unavailability: SqliteDatabase.ts (every write one `BEGIN IMMEDIATE`
 * transaction; SQLITE_BUSY is core's `StoreUnavailable`). A broken rule (the `...Problem` checks, a
 * unique constraint) throws inside the transaction: it is rolled back and the effect dies.
 *
 * The writes are also plain functions (`sqliteLedger`), so that the gateway store
 * (SqliteGatewayStore.ts) runs a reservation and a settlement inside its own transaction.
 *
 * The tables and how their rows read: SqliteLedgerTables.ts.
 */
import { Effect, Layer } from "effect"
import {
  allocate,
  type BudgetClaim,
  budgetLimitProblem,
  type BudgetState,
  byScope,
  creditProblem,
  creditTotalsOf,
  firstOverBudget,
  grantAvailable,
  type GrantState,
  type LedgerEntry,
  LedgerStore,
  type NewReservation,
  type OrderedReservation,
  orderedReservationProblem,
  type Reservation,
  reservationProblem,
  reservedAmount,
  type ReservationStatus,
  type ReserveInOrderResult,
  type ScopeBalance,
  scopeKey,
  type Settlement,
  settlementProblem,
  takeGrants
} from "@model-platform/core/ledger"
import { markUnavailable, type Timestamp } from "@model-platform/core/kernel"
import { big, isBusy, openDatabase, type SqliteDatabase, type SqliteOptions, text } from "./SqliteDatabase.ts"
import { allocationsJson, budgetsJson, entryOf, holdsJson, LEDGER_SCHEMA, reservationOf } from "./SqliteLedgerTables.ts"

export { LEDGER_SCHEMA }

export type SqliteLedgerOptions = SqliteOptions

/**
 * The ledger on `db`, as plain functions: each write is one transaction, or part of the caller's
 * (`db.transaction`). The port's `reserveInOrder` is here too: read, allocate and reserve in one
 * transaction, the answers of core's `reserveOrdered` over the same store.
 */
export const sqliteLedger = (db: SqliteDatabase) => {
  const { all, one, run } = db
  const refuse = (operation: string, problem: string | undefined) => {
    if (problem !== undefined) throw new Error(`LedgerStore.${operation}: ${problem}`)
  }

  const adjustScope = (accountId: string, machineId: string | null, posted: bigint, held: bigint) =>
    run(
      `INSERT INTO ledger_scopes (account_id, scope, posted, held) VALUES (?, ?, ?, ?)
       ON CONFLICT (account_id, scope) DO UPDATE SET posted = posted + excluded.posted, held = held + excluded.held`,
      accountId,
      scopeKey(machineId),
      posted,
      held
    )

  const adjustCounter = (accountId: string, kind: "budget" | "grant", name: string, period: string, spent: bigint, held: bigint) =>
    run(
      `INSERT INTO ledger_counters (account_id, kind, name, period, spent, held) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (account_id, kind, name, period) DO UPDATE SET spent = spent + excluded.spent, held = held + excluded.held`,
      accountId,
      kind,
      name,
      period,
      spent,
      held
    )

  const counter = (accountId: string, kind: "budget" | "grant", name: string, period: string) => {
    const row = one(
      "SELECT spent, held FROM ledger_counters WHERE account_id = ? AND kind = ? AND name = ? AND period = ?",
      accountId,
      kind,
      name,
      period
    )
    return row === undefined ? { spent: 0n, held: 0n } : { spent: big(row, "spent"), held: big(row, "held") }
  }

  const insertEntry = (entry: LedgerEntry) =>
    run(
      `INSERT INTO ledger_entries (id, account_id, machine_id, amount, type, ref, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?)`,
      entry.id,
      entry.account_id,
      entry.machine_id,
      entry.amount,
      entry.type,
      entry.ref,
      entry.created_at
    )

  const pendingRow = (ref: string) => {
    const row = one("SELECT * FROM ledger_reservations WHERE ref = ?", ref)
    return row === undefined || text(row, "status") !== "pending" ? undefined : reservationOf(row)
  }

  /** Releases what a pending reservation holds and marks it finished (`charged` and the grant charges: a settlement). */
  const finish = (
    found: Reservation,
    status: Exclude<ReservationStatus, "pending">,
    at: Timestamp,
    settlement?: Settlement
  ) => {
    for (const a of found.allocations) adjustScope(found.account_id, a.machine_id, 0n, -a.amount)
    const held = reservedAmount(found.allocations)
    for (const { budget, month } of found.budgets ?? []) {
      adjustCounter(found.account_id, "budget", budget, month, settlement?.charged ?? 0n, -held)
    }
    for (const hold of found.grants ?? []) {
      const charge = settlement?.grants?.find((c) => c.grant === hold.grant && c.period === hold.period)?.amount ?? 0n
      adjustCounter(found.account_id, "grant", hold.grant, hold.period, charge, -hold.amount)
    }
    run(
      `UPDATE ledger_reservations SET status = ?, finished_at = ?, charged = ?, excess = ?
       WHERE ref = ? AND status = 'pending'`,
      status,
      at,
      settlement?.charged ?? null,
      settlement?.excess ?? null,
      found.ref
    )
  }

  const ops = {
    post: (entry: LedgerEntry) =>
      db.transaction(() => {
        refuse("post", creditProblem(entry))
        if (one("SELECT 1 FROM ledger_entries WHERE account_id = ? AND ref = ?", entry.account_id, entry.ref)) {
          return "duplicate" as const
        }
        insertEntry(entry) // a duplicate id violates the unique constraint: a defect
        adjustScope(entry.account_id, entry.machine_id, entry.amount, 0n)
        return "posted" as const
      }),

    balances: (accountId: string): Array<ScopeBalance> =>
      all("SELECT scope, posted, held FROM ledger_scopes WHERE account_id = ?", accountId)
        .map((row): ScopeBalance => ({
          machine_id: text(row, "scope") === "" ? null : text(row, "scope"),
          posted: big(row, "posted"),
          held: big(row, "held")
        }))
        .sort(byScope),

    entries: (accountId: string, limit?: number): Array<LedgerEntry> =>
      all(
        "SELECT * FROM ledger_entries WHERE account_id = ? ORDER BY created_at DESC, seq DESC LIMIT ?",
        accountId,
        BigInt(limit ?? -1)
      ).map(entryOf),

    creditTotals: (accountId: string) =>
      creditTotalsOf(all("SELECT * FROM ledger_entries WHERE account_id = ? AND type <> 'usage'", accountId).map(entryOf)),

    reserve: (reservation: NewReservation) =>
      db.transaction(() => {
        refuse("reserve", reservationProblem(reservation))
        const account = reservation.account_id
        if (one("SELECT 1 FROM ledger_reservations WHERE ref = ?", reservation.ref)) return "duplicate" as const
        const amount = reservedAmount(reservation.allocations)
        const stateOf = (claim: BudgetClaim) => {
          const limit = one("SELECT amount FROM ledger_budget_limits WHERE account_id = ? AND budget = ?", account, claim.budget)
          return { limit: limit === undefined ? null : big(limit, "amount"), ...counter(account, "budget", claim.budget, claim.month) }
        }
        if (firstOverBudget(reservation.budgets ?? [], stateOf, amount) !== undefined) return "over_budget" as const
        for (const hold of reservation.grants ?? []) {
          const g = counter(account, "grant", hold.grant, hold.period)
          if (g.spent + g.held + hold.amount > hold.size) return "insufficient" as const
        }
        for (const a of reservation.allocations) {
          const scope = one("SELECT posted, held FROM ledger_scopes WHERE account_id = ? AND scope = ?", account, scopeKey(a.machine_id))
          if (scope === undefined || big(scope, "posted") - big(scope, "held") < a.amount) return "insufficient" as const
        }
        for (const a of reservation.allocations) adjustScope(account, a.machine_id, 0n, a.amount)
        for (const { budget, month } of reservation.budgets ?? []) adjustCounter(account, "budget", budget, month, 0n, amount)
        for (const hold of reservation.grants ?? []) adjustCounter(account, "grant", hold.grant, hold.period, 0n, hold.amount)
        run(
          `INSERT INTO ledger_reservations (ref, account_id, machine_id, allocations, budgets, grants, status, created_at, expires_at)
           VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?)`,
          reservation.ref,
          account,
          reservation.machine_id,
          allocationsJson(reservation.allocations),
          budgetsJson(reservation.budgets),
          holdsJson(reservation.grants),
          reservation.created_at,
          reservation.expires_at
        )
        return "reserved" as const
      }),

    reservation: (ref: string): Reservation | undefined => {
      const row = one("SELECT * FROM ledger_reservations WHERE ref = ?", ref)
      return row === undefined ? undefined : reservationOf(row)
    },

    pending: (accountId: string): Array<Reservation> =>
      all("SELECT * FROM ledger_reservations WHERE account_id = ? AND status = 'pending' ORDER BY seq", accountId)
        .map(reservationOf),

    settle: (settlement: Settlement) =>
      db.transaction(() => {
        const found = pendingRow(settlement.ref)
        if (found === undefined) return "not_pending" as const
        refuse("settle", settlementProblem(found, settlement))
        finish(found, "settled", settlement.at, settlement)
        for (const entry of settlement.entries) {
          insertEntry(entry) // a ref or id that exists violates a unique constraint: a defect
          adjustScope(entry.account_id, entry.machine_id, entry.amount, 0n)
        }
        return "settled" as const
      }),

    void: (ref: string, at: Timestamp) =>
      db.transaction(() => {
        const found = pendingRow(ref)
        if (found === undefined) return "not_pending" as const
        finish(found, "voided", at)
        return "voided" as const
      }),

    expire: (now: Timestamp): Array<string> =>
      db.transaction(() => {
        const due = all("SELECT * FROM ledger_reservations WHERE status = 'pending' AND expires_at <= ? ORDER BY seq", now)
          .map(reservationOf)
        for (const r of due) finish(r, "expired", now)
        return due.map((r) => r.ref)
      }),

    setBudgetLimit: (accountId: string, budget: string, limit: bigint | null): void =>
      db.transaction(() => {
        refuse("setBudgetLimit", budgetLimitProblem(budget, limit))
        if (limit === null) run("DELETE FROM ledger_budget_limits WHERE account_id = ? AND budget = ?", accountId, budget)
        else {
          run(
            `INSERT INTO ledger_budget_limits (account_id, budget, amount) VALUES (?, ?, ?)
             ON CONFLICT (account_id, budget) DO UPDATE SET amount = excluded.amount`,
            accountId,
            budget,
            limit
          )
        }
      }),

    budgets: (accountId: string, month: string): Array<BudgetState> => {
      const found = new Map<string, BudgetState>()
      for (const row of all("SELECT budget, amount FROM ledger_budget_limits WHERE account_id = ?", accountId)) {
        found.set(text(row, "budget"), { budget: text(row, "budget"), limit: big(row, "amount"), spent: 0n, held: 0n })
      }
      const used = all(
        `SELECT name, spent, held FROM ledger_counters
         WHERE account_id = ? AND kind = 'budget' AND period = ? AND (spent <> 0 OR held <> 0)`,
        accountId,
        month
      )
      for (const row of used) {
        const budget = text(row, "name")
        found.set(budget, { budget, limit: found.get(budget)?.limit ?? null, spent: big(row, "spent"), held: big(row, "held") })
      }
      return [...found.values()].sort((a, b) => a.budget < b.budget ? -1 : a.budget > b.budget ? 1 : 0)
    },

    grants: (accountId: string): Array<GrantState> =>
      (
        all(
          `SELECT name, period, spent, held FROM ledger_counters
           WHERE account_id = ? AND kind = 'grant' AND (spent <> 0 OR held <> 0)`,
          accountId
        )
          .map((row): GrantState => ({
            grant: text(row, "name"),
            period: text(row, "period"),
            spent: big(row, "spent"),
            held: big(row, "held")
          }))
          .sort((a, b) =>
            a.grant < b.grant ? -1 : a.grant > b.grant ? 1 : a.period < b.period ? -1 : a.period > b.period ? 1 : 0
          )
      )
  }

  const reserveInOrder = (request: OrderedReservation): ReserveInOrderResult =>
    db.transaction(() => {
      refuse("reserveInOrder", orderedReservationProblem(request))
      if (one("SELECT 1 FROM ledger_reservations WHERE ref = ?", request.ref)) return { _tag: "duplicate" }
      const account = request.account_id
      const grantStates = ops.grants(account)
      const grants = (request.grants ?? []).map((claim) => ({
        grant: claim.grant,
        period: claim.period,
        size: claim.size,
        available: grantAvailable(claim, grantStates.find((g) => g.grant === claim.grant && g.period === claim.period))
      }))
      const { holds, rest } = takeGrants(grants, request.amount)
      const balances = ops.balances(account)
      const allocation = allocate(
        request.scopes.map((scope) => {
          const balance = balances.find((b) => b.machine_id === scope)
          return { machine_id: scope, available: balance === undefined ? 0n : balance.posted - balance.held }
        }),
        rest
      )
      const overBudget = () => {
        const stateOf = (claim: BudgetClaim) => {
          const limit = one("SELECT amount FROM ledger_budget_limits WHERE account_id = ? AND budget = ?", account, claim.budget)
          return { limit: limit === undefined ? null : big(limit, "amount"), ...counter(account, "budget", claim.budget, claim.month) }
        }
        return firstOverBudget(request.budgets ?? [], stateOf, rest)
      }
      if (allocation._tag === "Insufficient") {
        const left = grants.reduce((sum, g) => sum + g.available, 0n)
        return overBudget() ?? { _tag: "insufficient", available: allocation.available + left }
      }
      const { scopes: _, amount: __, grants: ___, ...reservation } = request
      const sized = holds.map((h) => ({ ...h, size: grants.find((g) => g.grant === h.grant && g.period === h.period)!.size }))
      const result = ops.reserve({ ...reservation, allocations: allocation.allocations, ...(sized.length === 0 ? {} : { grants: sized }) })
      switch (result) {
        case "reserved":
          return { _tag: "reserved", allocations: allocation.allocations, ...(holds.length === 0 ? {} : { grants: holds }) }
        case "duplicate":
          return { _tag: "duplicate" }
        case "over_budget":
          return overBudget()!
        case "insufficient":
          // Not possible: the allocation and the grants' holds were read in this transaction.
          throw new Error(`LedgerStore.reserveInOrder: ${request.ref} refused after its allocation`)
      }
    })

  return { ...ops, reserveInOrder }
}

/** The LedgerStore port over `db`. */
export const ledgerStoreOn = (db: SqliteDatabase): LedgerStore["Service"] => {
  const ledger = sqliteLedger(db)
  const write = <A extends ReadonlyArray<unknown>, B>(name: string, f: (...args: A) => B) => (...args: A) =>
    db.atomically(`LedgerStore.${name}`, () => f(...args))
  const read = <A extends ReadonlyArray<unknown>, B>(f: (...args: A) => B) => (...args: A) => db.read(() => f(...args))
  return LedgerStore.of(markUnavailable("LedgerStore", {
    post: write("post", ledger.post),
    balances: read(ledger.balances),
    entries: read(ledger.entries),
    creditTotals: read(ledger.creditTotals),
    reserve: write("reserve", ledger.reserve),
    reserveInOrder: write("reserveInOrder", ledger.reserveInOrder),
    reservation: read(ledger.reservation),
    pending: read(ledger.pending),
    settle: write("settle", ledger.settle),
    void: write("void", ledger.void),
    expire: write("expire", ledger.expire),
    setBudgetLimit: write("setBudgetLimit", ledger.setBudgetLimit),
    budgets: read(ledger.budgets),
    grants: read(ledger.grants)
  }, isBusy))
}

/** A ledger store alone on the SQLite database at `path` (":memory:" for one that lives as long as the layer). */
export const sqliteLedgerStore = (path: string, options: SqliteOptions = {}): Layer.Layer<LedgerStore> =>
  Layer.effect(LedgerStore, Effect.map(openDatabase(path, [LEDGER_SCHEMA], options), ledgerStoreOn))
