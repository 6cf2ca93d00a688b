/**
 * The ledger store port (`LedgerStore` of @model-platform/core/ledger) on SQLite, with Node's
 * own `node:sqlite`. How a store keeps the port's rules is docs/implementing-a-store.md in the
 * platform's repository; the rules themselves are the port's comments and `LedgerStoreRules`.
 *
 * Atomicity: every write is one `BEGIN IMMEDIATE` transaction (SQLite's write lock, so it is
 * atomic between processes too), and `DatabaseSync` runs it to the end without yielding, so no
 * other fiber of this process sees it half done. A broken rule (the `...Problem` checks, a unique
 * constraint) throws inside the transaction: it is rolled back and the effect dies, which is what
 * the port asks (store failures are defects).
 *
 * Unavailability: a write waits up to `busyTimeoutMs` for another connection's write lock; past
 * that SQLite answers SQLITE_BUSY, which `markUnavailable` turns into core's `StoreUnavailable`
 * (the platform answers 503 and retries metering later) rather than a bug.
 *
 * Amounts are SQLite INTEGERs (64-bit) read back as bigint; a reservation's allocations, budgets
 * and grant holds are JSON with their amounts as decimal strings.
 */
import { DatabaseSync } from "node:sqlite"
import { Effect, Layer } from "effect"
import {
  type Allocation,
  type BudgetClaim,
  budgetLimitProblem,
  type BudgetState,
  byScope,
  creditProblem,
  creditTotalsOf,
  type EntryType,
  firstOverBudget,
  type GrantHold,
  type GrantState,
  type LedgerEntry,
  LedgerStore,
  type NewReservation,
  type Reservation,
  reservationProblem,
  reservedAmount,
  type ReservationStatus,
  type ScopeBalance,
  scopeKey,
  type Settlement,
  settlementProblem
} from "@model-platform/core/ledger"
import { markUnavailable, type Timestamp } from "@model-platform/core/kernel"

const SCHEMA = `
CREATE TABLE IF NOT EXISTS ledger_entries (
  seq        INTEGER PRIMARY KEY AUTOINCREMENT,
  id         TEXT NOT NULL UNIQUE,
  account_id TEXT NOT NULL,
  machine_id TEXT,
  amount     INTEGER NOT NULL,
  type       TEXT NOT NULL,
  ref        TEXT NOT NULL,
  created_at TEXT NOT NULL,
  UNIQUE (account_id, ref)
);
CREATE TABLE IF NOT EXISTS ledger_scopes (
  account_id TEXT NOT NULL,
  scope      TEXT NOT NULL,   -- '' is account-wide (scopeKey)
  posted     INTEGER NOT NULL,
  held       INTEGER NOT NULL,
  PRIMARY KEY (account_id, scope)
);
CREATE TABLE IF NOT EXISTS ledger_reservations (
  seq         INTEGER PRIMARY KEY AUTOINCREMENT,
  ref         TEXT NOT NULL UNIQUE,
  account_id  TEXT NOT NULL,
  machine_id  TEXT,
  allocations TEXT NOT NULL,
  budgets     TEXT,
  grants      TEXT,
  status      TEXT NOT NULL,
  created_at  TEXT NOT NULL,
  expires_at  TEXT NOT NULL,
  finished_at TEXT,
  charged     INTEGER,
  excess      INTEGER
);
CREATE INDEX IF NOT EXISTS ledger_reservations_due ON ledger_reservations (status, expires_at);
CREATE TABLE IF NOT EXISTS ledger_budget_limits (
  account_id TEXT NOT NULL,
  budget     TEXT NOT NULL,
  amount     INTEGER NOT NULL,
  PRIMARY KEY (account_id, budget)
);
-- Budgets per period, and grants per period: what settlements spent and pending reservations hold.
CREATE TABLE IF NOT EXISTS ledger_counters (
  account_id TEXT NOT NULL,
  kind       TEXT NOT NULL,   -- 'budget' | 'grant'
  name       TEXT NOT NULL,
  period     TEXT NOT NULL,
  spent      INTEGER NOT NULL,
  held       INTEGER NOT NULL,
  PRIMARY KEY (account_id, kind, name, period)
);
`

type Row = Record<string, unknown>

const text = (row: Row, column: string): string => row[column] as string
const textOrNull = (row: Row, column: string): string | null => (row[column] ?? null) as string | null
const big = (row: Row, column: string): bigint => row[column] as bigint
const bigOrNull = (row: Row, column: string): bigint | null => (row[column] ?? null) as bigint | null

const entryOf = (row: Row): LedgerEntry => ({
  id: text(row, "id"),
  account_id: text(row, "account_id"),
  machine_id: textOrNull(row, "machine_id"),
  amount: big(row, "amount"),
  type: text(row, "type") as EntryType,
  ref: text(row, "ref"),
  created_at: text(row, "created_at") as Timestamp
})

const allocationsJson = (allocations: ReadonlyArray<Allocation>) =>
  JSON.stringify(allocations.map((a) => ({ machine_id: a.machine_id, amount: String(a.amount) })))
const holdsJson = (holds: ReadonlyArray<GrantHold> | undefined) =>
  holds === undefined || holds.length === 0
    ? null
    : JSON.stringify(holds.map(({ grant, period, amount }) => ({ grant, period, amount: String(amount) })))
const budgetsJson = (claims: ReadonlyArray<Pick<BudgetClaim, "budget" | "month">> | undefined) =>
  claims === undefined || claims.length === 0 ? null : JSON.stringify(claims.map(({ budget, month }) => ({ budget, month })))

const reservationOf = (row: Row): Reservation => {
  const budgets = textOrNull(row, "budgets")
  const grants = textOrNull(row, "grants")
  return {
    ref: text(row, "ref"),
    account_id: text(row, "account_id"),
    machine_id: textOrNull(row, "machine_id"),
    allocations: (JSON.parse(text(row, "allocations")) as Array<{ machine_id: string | null; amount: string }>)
      .map((a) => ({ machine_id: a.machine_id, amount: BigInt(a.amount) })),
    status: text(row, "status") as ReservationStatus,
    created_at: text(row, "created_at") as Timestamp,
    expires_at: text(row, "expires_at") as Timestamp,
    finished_at: textOrNull(row, "finished_at") as Timestamp | null,
    charged: bigOrNull(row, "charged"),
    excess: bigOrNull(row, "excess"),
    ...(budgets === null ? {} : { budgets: JSON.parse(budgets) }),
    ...(grants === null
      ? {}
      : {
        grants: (JSON.parse(grants) as Array<{ grant: string; period: string; amount: string }>)
          .map((g) => ({ grant: g.grant, period: g.period, amount: BigInt(g.amount) }))
      })
  }
}

/** SQLITE_BUSY and SQLITE_LOCKED (node:sqlite's `errcode`, the primary code in the low byte). */
const isBusy = (defect: unknown): boolean => {
  const code = (defect as { errcode?: unknown } | null)?.errcode
  return typeof code === "number" && ((code & 0xff) === 5 || (code & 0xff) === 6)
}

export interface SqliteLedgerOptions {
  /** How long a write waits for another connection's lock before the store is unavailable. */
  readonly busyTimeoutMs?: number
}

/** A store on the SQLite database at `path` (":memory:" for one that lives as long as the layer). */
export const sqliteLedgerStore = (path: string, options: SqliteLedgerOptions = {}): Layer.Layer<LedgerStore> =>
  Layer.effect(
    LedgerStore,
    Effect.gen(function*() {
      const db = yield* Effect.acquireRelease(
        Effect.sync(() => new DatabaseSync(path)),
        (db) => Effect.sync(() => db.close())
      )
      db.exec(`PRAGMA busy_timeout = ${options.busyTimeoutMs ?? 5000}`)
      if (path !== ":memory:") db.exec("PRAGMA journal_mode = WAL")
      db.exec(SCHEMA)

      const statements = new Map<string, ReturnType<DatabaseSync["prepare"]>>()
      const sql = (query: string) => {
        let statement = statements.get(query)
        if (statement === undefined) {
          statement = db.prepare(query)
          statement.setReadBigInts(true)
          statements.set(query, statement)
        }
        return statement
      }
      const all = (query: string, ...params: Array<string | bigint | null>) => sql(query).all(...params) as Array<Row>
      const one = (query: string, ...params: Array<string | bigint | null>) =>
        sql(query).get(...params) as Row | undefined
      const run = (query: string, ...params: Array<string | bigint | null>) => sql(query).run(...params)

      /** `f` in one write transaction; a throw rolls it back and becomes a defect. */
      const atomically = <A>(name: string, f: () => A): Effect.Effect<A> =>
        Effect.sync(() => {
          db.exec("BEGIN IMMEDIATE")
          try {
            const result = f()
            db.exec("COMMIT")
            return result
          } catch (error) {
            if (db.isTransaction) db.exec("ROLLBACK")
            throw error
          }
        }).pipe(Effect.withSpan(`LedgerStore.${name}`))

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

      return LedgerStore.of(markUnavailable("LedgerStore", {
        post: (entry) =>
          atomically("post", () => {
            refuse("post", creditProblem(entry))
            if (one("SELECT 1 FROM ledger_entries WHERE account_id = ? AND ref = ?", entry.account_id, entry.ref)) {
              return "duplicate" as const
            }
            insertEntry(entry) // a duplicate id violates the unique constraint: a defect
            adjustScope(entry.account_id, entry.machine_id, entry.amount, 0n)
            return "posted" as const
          }),

        balances: (accountId) =>
          Effect.sync(() =>
            all("SELECT scope, posted, held FROM ledger_scopes WHERE account_id = ?", accountId)
              .map((row): ScopeBalance => ({
                machine_id: text(row, "scope") === "" ? null : text(row, "scope"),
                posted: big(row, "posted"),
                held: big(row, "held")
              }))
              .sort(byScope)
          ),

        entries: (accountId, limit) =>
          Effect.sync(() =>
            all(
              "SELECT * FROM ledger_entries WHERE account_id = ? ORDER BY created_at DESC, seq DESC LIMIT ?",
              accountId,
              BigInt(limit ?? -1)
            ).map(entryOf)
          ),

        creditTotals: (accountId) =>
          Effect.sync(() =>
            creditTotalsOf(all("SELECT * FROM ledger_entries WHERE account_id = ? AND type <> 'usage'", accountId).map(entryOf))
          ),

        reserve: (reservation: NewReservation) =>
          atomically("reserve", () => {
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

        reservation: (ref) =>
          Effect.sync(() => {
            const row = one("SELECT * FROM ledger_reservations WHERE ref = ?", ref)
            return row === undefined ? undefined : reservationOf(row)
          }),

        pending: (accountId) =>
          Effect.sync(() =>
            all("SELECT * FROM ledger_reservations WHERE account_id = ? AND status = 'pending' ORDER BY seq", accountId)
              .map(reservationOf)
          ),

        settle: (settlement) =>
          atomically("settle", () => {
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

        void: (ref, at) =>
          atomically("void", () => {
            const found = pendingRow(ref)
            if (found === undefined) return "not_pending" as const
            finish(found, "voided", at)
            return "voided" as const
          }),

        expire: (now) =>
          atomically("expire", () => {
            const due = all("SELECT * FROM ledger_reservations WHERE status = 'pending' AND expires_at <= ? ORDER BY seq", now)
              .map(reservationOf)
            for (const r of due) finish(r, "expired", now)
            return due.map((r) => r.ref)
          }),

        setBudgetLimit: (accountId, budget, limit) =>
          atomically("setBudgetLimit", () => {
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

        budgets: (accountId, month) =>
          Effect.sync(() => {
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
          }),

        grants: (accountId) =>
          Effect.sync(() =>
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
      }, isBusy))
    })
  )
