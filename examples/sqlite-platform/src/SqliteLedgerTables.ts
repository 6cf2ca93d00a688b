/**
 * The ledger's tables on SQLite (SqliteLedgerStore.ts) and their rows as the port's records.
 * Amounts are SQLite INTEGERs (64-bit) read back as bigint; a reservation's allocations, budgets
 * and grant holds are JSON with their amounts as decimal strings.
 */
import type {
  Allocation,
  BudgetClaim,
  EntryType,
  GrantHold,
  LedgerEntry,
  Reservation,
  ReservationStatus
} from "@model-platform/core/ledger"
import type { Timestamp } from "@model-platform/core/kernel"
import { big, bigOrNull, type Row, text, textOrNull } from "./SqliteDatabase.ts"

export const LEDGER_SCHEMA = `
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

export const entryOf = (row: Row): LedgerEntry => ({
  id: text(row, "id"),
  account_id: text(row, "account_id"),
  machine_id: textOrNull(row, "machine_id"),
  amount: big(row, "amount"),
  type: text(row, "type") as EntryType,
  ref: text(row, "ref"),
  created_at: text(row, "created_at") as Timestamp
})

export const allocationsJson = (allocations: ReadonlyArray<Allocation>) =>
  JSON.stringify(allocations.map((a) => ({ machine_id: a.machine_id, amount: String(a.amount) })))
export const holdsJson = (holds: ReadonlyArray<GrantHold> | undefined) =>
  holds === undefined || holds.length === 0
    ? null
    : JSON.stringify(holds.map(({ grant, period, amount }) => ({ grant, period, amount: String(amount) })))
export const budgetsJson = (claims: ReadonlyArray<Pick<BudgetClaim, "budget" | "month">> | undefined) =>
  claims === undefined || claims.length === 0 ? null : JSON.stringify(claims.map(({ budget, month }) => ({ budget, month })))

export const reservationOf = (row: Row): Reservation => {
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
