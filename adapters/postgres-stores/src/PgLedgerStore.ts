/**
 * The ledger store port on Postgres (a real server or embedded PGlite). The tables are created by
 * the `0002_ledger` migration, the functions by `0005_ledger_functions` (./migrations.ts).
 *
 * Each write is ONE statement, so ONE round trip, and happens whole or not at all, across
 * processes too:
 * - post: a data-modifying CTE: INSERT ... ON CONFLICT (account_id, ref) DO NOTHING (a concurrent
 *   post of the same ref waits on the unique index, then does nothing), and an upsert adding to
 *   `posted` of the rows that INSERT returned (none for a duplicate).
 * - reserve: `ledger_reserve`: per allocation, in scope order, the balance row is locked
 *   (`SELECT ... FOR UPDATE`) only where `posted - held >= amount`. The row lock serialises
 *   concurrent reserves of one scope and Postgres re-checks the condition on the row as the
 *   previous transaction left it, so available never goes below zero; when any allocation finds
 *   no row nothing is written ("insufficient"). Then the reservation is inserted and the amounts
 *   added to `held`.
 * - settle / void / expire: `ledger_finish`: a conditional `UPDATE ... WHERE status = 'pending'`
 *   moves the reservation exactly once; only the call whose update matched goes on to release the
 *   holds and (settle) insert the usage entries and add them to `posted`. A settlement breaking a
 *   rule raises inside the function, which rolls all of it back (a defect here).
 * - reserveInOrder: `ledger_reserve_in_order`: locks the rows of the scopes the call may spend,
 *   then allocates as core's `allocate` does (the spending order is given) and reserves that, so
 *   `Ledger.reserve` is one round trip instead of two (balances, then reserve).
 * - budgets (PgBudgets.ts, migration 0012_ledger_budgets): reserve and reserveInOrder pass the
 *   claims; the functions lock the claims' month rows, check them in claim order ('over_budget'),
 *   then the balance, and hold both; ledger_finish releases them (settle: charges them).
 * - grants (PgBudgets.ts, migration 0017_ledger_grants): kept in the budgets' month rows and
 *   locked with them in one ordered call; reserve checks and holds the grant amounts given,
 *   reserveInOrder takes from the grants first (core's takeGrants) and the budgets count only what
 *   the scopes take; ledger_finish releases the holds (settle: spends the settlement's grant charges).
 * - Since migration 0024, reserveInOrder and settle / void / expire are batches of one of
 *   `ledger_reserve_batch` and `ledger_finish_batch`, the functions the gateway's batches use;
 *   since 0028, so is draw (PgLedgerDraw.ts).
 * Deadlocks are avoided by one lock order: at most one reservation row first, then budget and
 * grant month rows, then balance rows in scope order (collation "C"). `expire` finishes each due
 * reservation in its own call.
 * Statements are prepared once per connection by @effect/sql-pg (its default), and the
 * functions' plans are cached by the server.
 *
 * Amounts are int8 columns; @effect/sql-pg sends and returns them as bigint, so no amount ever
 * passes through a float. Scope '' in ledger_balances is account-wide.
 */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import {
  byCreditTotal,
  byScope,
  type CreditEntryType,
  creditProblem,
  type EntryType,
  type LedgerEntry,
  LedgerStore,
  type NewReservation,
  type OrderedReservation,
  orderedReservationProblem,
  type Reservation,
  reservationProblem,
  type ReservationStatus,
  type ReserveInOrderResult,
  type ScopeBalance,
  scopeKey,
  type Settlement
} from "@model-platform/core/ledger"
import type { Timestamp } from "@model-platform/core/kernel"
import {
  budgetsOf,
  claimArrays,
  grantClaimArrays,
  grantHoldArrays,
  grantHoldsOf,
  grantsOf,
  makeBudgets
} from "./PgBudgets.ts"
import { makeDraw } from "./PgLedgerDraw.ts"
import { settlementShapeProblem } from "./PgSettlementShape.ts"

const iso = (date: Date): string => date.toISOString()

const machineOf = (scope: string): string | null => scope === "" ? null : scope

interface EntryRow {
  readonly id: string
  readonly account_id: string
  readonly machine_id: string | null
  readonly amount: bigint
  readonly type: EntryType
  readonly ref: string
  readonly created_at: Date
}

const toEntry = (row: EntryRow): LedgerEntry => ({
  id: row.id,
  account_id: row.account_id,
  machine_id: row.machine_id,
  amount: BigInt(row.amount),
  type: row.type,
  ref: row.ref,
  created_at: iso(row.created_at)
})

interface BalanceRow {
  readonly scope: string
  readonly posted: bigint
  readonly held: bigint
}

interface ReservationRow {
  readonly ref: string
  readonly account_id: string
  readonly machine_id: string | null
  readonly scopes: ReadonlyArray<string>
  readonly amounts: ReadonlyArray<bigint>
  readonly status: ReservationStatus
  readonly created_at: Date
  readonly expires_at: Date
  readonly finished_at: Date | null
  readonly charged: bigint | null
  readonly excess: bigint | null
  readonly budgets: ReadonlyArray<string>
  readonly budget_months: ReadonlyArray<string>
  readonly grant_names: ReadonlyArray<string>
  readonly grant_periods: ReadonlyArray<string>
  readonly grant_amounts: ReadonlyArray<bigint>
}

const toReservation = (row: ReservationRow): Reservation => ({
  ref: row.ref,
  account_id: row.account_id,
  machine_id: row.machine_id,
  allocations: row.scopes.map((scope, i) => ({ machine_id: machineOf(scope), amount: BigInt(row.amounts[i]!) })),
  status: row.status,
  created_at: iso(row.created_at),
  expires_at: iso(row.expires_at),
  finished_at: row.finished_at === null ? null : iso(row.finished_at),
  charged: row.charged === null ? null : BigInt(row.charged),
  excess: row.excess === null ? null : BigInt(row.excess),
  ...budgetsOf(row),
  ...grantsOf(row)
})

export const LedgerStorePg: Layer.Layer<LedgerStore, never, SqlClient.SqlClient> = Layer.effect(
  LedgerStore,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const entryColumns = sql.literal("id, account_id, machine_id, amount, type, ref, created_at")
    const reservationColumns = sql.literal(
      "ref, account_id, machine_id, scopes, amounts, status, created_at, expires_at, finished_at, charged, excess, " +
        "budgets, budget_months, grant_names, grant_periods, grant_amounts"
    )

    const die = (operation: string, problem: string) => Effect.die(new Error(`LedgerStore.${operation}: ${problem}`))

    const post = (entry: LedgerEntry) => {
      const problem = creditProblem(entry)
      if (problem !== undefined) return die("post", problem)
      // One statement: the balance upsert only sees a row when the entry was new.
      return sql`
        WITH inserted AS (
          INSERT INTO ledger_entries (id, account_id, machine_id, amount, type, ref, created_at)
          VALUES (${entry.id}, ${entry.account_id}, ${entry.machine_id}, ${entry.amount}, ${entry.type},
                  ${entry.ref}, ${entry.created_at})
          ON CONFLICT (account_id, ref) DO NOTHING
          RETURNING account_id, amount
        )
        INSERT INTO ledger_balances (account_id, scope, posted, held)
        SELECT account_id, ${scopeKey(entry.machine_id)}, amount, 0 FROM inserted
        ON CONFLICT (account_id, scope) DO UPDATE SET posted = ledger_balances.posted + EXCLUDED.posted
        RETURNING 1 AS posted`.pipe(
        Effect.map((rows) => rows.length === 0 ? "duplicate" as const : "posted" as const),
        Effect.orDie,
        Effect.withSpan("LedgerStore.post")
      )
    }

    const balances = (accountId: string) =>
      sql<BalanceRow>`SELECT scope, posted, held FROM ledger_balances WHERE account_id = ${accountId}`.pipe(
        Effect.map((rows) =>
          rows
            .map((row): ScopeBalance => ({
              machine_id: machineOf(row.scope),
              posted: BigInt(row.posted),
              held: BigInt(row.held)
            }))
            .sort(byScope)
        ),
        Effect.orDie
      )

    // LIMIT NULL is no limit.
    const entries = (accountId: string, limit?: number) =>
      sql<EntryRow>`SELECT ${entryColumns} FROM ledger_entries WHERE account_id = ${accountId}
                    ORDER BY created_at DESC, seq DESC LIMIT ${limit ?? null}`.pipe(
        Effect.map((rows) => rows.map(toEntry)),
        Effect.orDie
      )

    // `type <> 'usage'` is the predicate of the partial index ledger_credit_entries (migration 0016).
    const creditTotals = (accountId: string) =>
      sql<{ readonly month: string; readonly type: CreditEntryType; readonly amount: string }>`
        SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM') AS month, type, sum(amount)::text AS amount
        FROM ledger_entries WHERE account_id = ${accountId} AND type <> 'usage'
        GROUP BY 1, 2`.pipe(
        Effect.map((rows) =>
          rows.map((r) => ({ month: r.month, type: r.type, amount: BigInt(r.amount) }))
            .filter((t) => t.amount !== 0n)
            .sort(byCreditTotal)
        ),
        Effect.orDie
      )

    const reserve = (reservation: NewReservation) => {
      const problem = reservationProblem(reservation)
      if (problem !== undefined) return die("reserve", problem)
      const scopes = reservation.allocations.map((a) => scopeKey(a.machine_id))
      const amounts = reservation.allocations.map((a) => a.amount)
      const claims = claimArrays(reservation.budgets)
      const holds = grantHoldArrays(reservation.grants)
      const sizes = (reservation.grants ?? []).map((g) => g.size)
      return sql<{ readonly result: "reserved" | "insufficient" | "duplicate" | "over_budget" }>`
        SELECT ledger_reserve(${reservation.ref}, ${reservation.account_id}, ${reservation.machine_id},
                              ${scopes}::text[], ${amounts}::bigint[], ${reservation.created_at}::timestamptz,
                              ${reservation.expires_at}::timestamptz, ${claims.budgets}::text[],
                              ${claims.months}::text[],
                              ARRAY(SELECT NULLIF(d, '')::bigint FROM unnest(${claims.defaultsText}::text[])
                                    WITH ORDINALITY AS t(d, i) ORDER BY t.i),
                              ${holds.grants}::text[], ${holds.periods}::text[], ${holds.amounts}::bigint[],
                              ${sizes}::bigint[]) AS result`.pipe(
        Effect.map((rows) => rows[0]!.result),
        Effect.orDie,
        Effect.withSpan("LedgerStore.reserve")
      )
    }

    const reserveInOrder = (request: OrderedReservation) => {
      const problem = orderedReservationProblem(request)
      if (problem !== undefined) return die("reserveInOrder", problem)
      const claims = claimArrays(request.budgets)
      const grants = grantClaimArrays(request.grants)
      return sql<{
        readonly result: "reserved" | "insufficient" | "duplicate" | "over_budget"
        readonly scopes: ReadonlyArray<string> | null
        readonly amounts: ReadonlyArray<bigint> | null
        readonly available: bigint
        readonly budget: string | null
        readonly lim: bigint | null
        readonly used: bigint | null
        readonly grant_names: ReadonlyArray<string> | null
        readonly grant_periods: ReadonlyArray<string> | null
        readonly grant_amounts: ReadonlyArray<bigint> | null
      }>`
        SELECT result, scopes, amounts, available, budget, lim, used, grant_names, grant_periods, grant_amounts
        FROM ledger_reserve_in_order(
          ${request.ref}, ${request.account_id}, ${request.machine_id}, ${request.scopes.map(scopeKey)}::text[],
          ${request.amount}::bigint, ${request.created_at}::timestamptz, ${request.expires_at}::timestamptz,
          ${claims.budgets}::text[], ${claims.months}::text[],
          ARRAY(SELECT NULLIF(d, '')::bigint FROM unnest(${claims.defaultsText}::text[]) WITH ORDINALITY AS t(d, i)
                ORDER BY t.i),
          ${grants.grants}::text[], ${grants.periods}::text[], ${grants.sizes}::bigint[])`.pipe(
        Effect.map((rows): ReserveInOrderResult => {
          const row = rows[0]!
          if (row.result === "duplicate") return { _tag: "duplicate" }
          if (row.result === "insufficient") return { _tag: "insufficient", available: BigInt(row.available) }
          if (row.result === "over_budget") {
            return { _tag: "over_budget", budget: row.budget!, limit: BigInt(row.lim!), used: BigInt(row.used!) }
          }
          const amounts = row.amounts ?? []
          const holds = grantHoldsOf(row.grant_names, row.grant_periods, row.grant_amounts)
          return {
            _tag: "reserved",
            allocations: (row.scopes ?? []).map((scope, i) => ({ machine_id: machineOf(scope), amount: BigInt(amounts[i]!) })),
            ...(holds.length === 0 ? {} : { grants: holds })
          }
        }),
        Effect.orDie,
        Effect.withSpan("LedgerStore.reserveInOrder")
      )
    }

    const reservation = (ref: string) =>
      sql<ReservationRow>`SELECT ${reservationColumns} FROM ledger_reservations WHERE ref = ${ref}`.pipe(
        Effect.map((rows) => rows[0] === undefined ? undefined : toReservation(rows[0])),
        Effect.orDie
      )

    const pending = (accountId: string) =>
      sql<ReservationRow>`SELECT ${reservationColumns} FROM ledger_reservations
                          WHERE account_id = ${accountId} AND status = 'pending'
                          ORDER BY created_at, seq`.pipe(
        Effect.map((rows) => rows.map(toReservation)),
        Effect.orDie
      )

    /**
     * Moves one pending reservation to `status` in one call of `ledger_finish` (migrations.ts):
     * false when it was not pending. A settlement's entries go with it.
     */
    const finish = (
      ref: string,
      status: "settled" | "voided" | "expired",
      at: Timestamp,
      settlement?: Settlement
    ) => {
      const entries = settlement?.entries ?? []
      const charges = grantHoldArrays(settlement?.grants)
      return sql<{ readonly done: boolean }>`
        SELECT ledger_finish(${ref}, ${status}, ${at}::timestamptz, ${settlement?.charged ?? null}::bigint,
                             ${settlement?.excess ?? null}::bigint, ${entries.map((e) => e.id)}::text[],
                             ${entries.map((e) => e.account_id)}::text[],
                             ${entries.map((e) => scopeKey(e.machine_id))}::text[],
                             ${entries.map((e) => e.amount)}::bigint[], ${entries.map((e) => e.ref)}::text[],
                             ${entries.map((e) => e.created_at)}::timestamptz[], ${charges.grants}::text[],
                             ${charges.periods}::text[], ${charges.amounts}::bigint[]) AS done`.pipe(
        Effect.map((rows) => rows[0]!.done)
      )
    }

    const settle = (settlement: Settlement) => {
      const problem = settlementShapeProblem(settlement)
      if (problem !== undefined) return die("settle", problem)
      return finish(settlement.ref, "settled", settlement.at, settlement).pipe(
        Effect.map((done) => done ? "settled" as const : "not_pending" as const),
        Effect.orDie,
        Effect.withSpan("LedgerStore.settle")
      )
    }

    const voidReservation = (ref: string, at: Timestamp) =>
      finish(ref, "voided", at).pipe(
        Effect.map((done) => done ? "voided" as const : "not_pending" as const),
        Effect.orDie,
        Effect.withSpan("LedgerStore.void")
      )

    const expire = (now: Timestamp) =>
      Effect.gen(function*() {
        const due = yield* sql<{ readonly ref: string }>`
          SELECT ref FROM ledger_reservations
          WHERE status = 'pending' AND expires_at <= ${now}::timestamptz
          ORDER BY expires_at, seq`
        const expired: Array<string> = []
        for (const { ref } of due) {
          if (yield* finish(ref, "expired", now)) expired.push(ref)
        }
        return expired
      }).pipe(Effect.orDie, Effect.withSpan("LedgerStore.expire"))

    return LedgerStore.of({
      post,
      balances,
      entries,
      creditTotals,
      reserve,
      reserveInOrder,
      reservation,
      pending,
      settle,
      draw: makeDraw(sql),
      void: voidReservation,
      expire,
      ...makeBudgets(sql)
    })
  })
)
