/**
 * The ledger store port on Postgres (a real server or embedded PGlite). The tables are created by
 * the `0002_ledger` migration (./migrations.ts).
 *
 * Each write is ONE transaction, so it happens whole or not at all, across processes too:
 * - post: INSERT ... ON CONFLICT (account_id, ref) DO NOTHING (a concurrent post of the same ref
 *   waits on the unique index, then does nothing), then an upsert adding to `posted`.
 * - reserve: INSERT the reservation (ON CONFLICT (ref) DO NOTHING), then per allocation a
 *   conditional `UPDATE ... SET held = held + amount WHERE posted - held >= amount`. The row lock
 *   serialises concurrent reserves of one scope and Postgres re-checks the condition on the row
 *   as the previous transaction left it, so available never goes below zero; when any allocation
 *   matches no row the whole transaction rolls back ("insufficient").
 * - settle / void / expire: a conditional `UPDATE ... WHERE status = 'pending'` moves the
 *   reservation exactly once; only the transaction whose update matched goes on to release the
 *   holds and (settle) insert the usage entries and add them to `posted`.
 * Deadlocks are avoided by one lock order: at most one reservation row first, then balance rows
 * in scope order. `expire` finishes each due reservation in its own transaction.
 *
 * Amounts are int8 columns; @effect/sql-pg sends and returns them as bigint, so no amount ever
 * passes through a float. Scope '' in ledger_balances is account-wide.
 */
import { Data, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import {
  type Allocation,
  byScope,
  creditProblem,
  type EntryType,
  type LedgerEntry,
  LedgerStore,
  type NewReservation,
  type Reservation,
  reservationProblem,
  type ReservationStatus,
  type ScopeBalance,
  scopeKey,
  type Settlement,
  settlementProblem
} from "@model-platform/core/ports/LedgerStore"
import type { Timestamp } from "@model-platform/core/Time"

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
  excess: row.excess === null ? null : BigInt(row.excess)
})

/** Ends a reserve transaction with a rollback when a scope lacks the amount. */
class Insufficient extends Data.TaggedError("Insufficient")<{}> {}

/** Per scope, in lock order: what to add to `posted` and to `held`. */
const deltasByScope = (
  holds: ReadonlyArray<Allocation>,
  postings: ReadonlyArray<Allocation>,
  sign: { readonly holds: 1n | -1n }
) => {
  const deltas = new Map<string, { posted: bigint; held: bigint }>()
  const at = (machineId: string | null) => {
    const key = scopeKey(machineId)
    let delta = deltas.get(key)
    if (delta === undefined) deltas.set(key, delta = { posted: 0n, held: 0n })
    return delta
  }
  for (const h of holds) at(h.machine_id).held += sign.holds * h.amount
  for (const p of postings) at(p.machine_id).posted += p.amount
  return [...deltas.entries()].sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0)
}

export const LedgerStorePg: Layer.Layer<LedgerStore, never, SqlClient.SqlClient> = Layer.effect(
  LedgerStore,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const entryColumns = sql.literal("id, account_id, machine_id, amount, type, ref, created_at")
    const reservationColumns = sql.literal(
      "ref, account_id, machine_id, scopes, amounts, status, created_at, expires_at, finished_at, charged, excess"
    )

    const die = (operation: string, problem: string) => Effect.die(new Error(`LedgerStore.${operation}: ${problem}`))

    const insertEntry = (entry: LedgerEntry) =>
      sql`INSERT INTO ledger_entries (id, account_id, machine_id, amount, type, ref, created_at)
          VALUES (${entry.id}, ${entry.account_id}, ${entry.machine_id}, ${entry.amount}, ${entry.type},
                  ${entry.ref}, ${entry.created_at})`

    const post = (entry: LedgerEntry) => {
      const problem = creditProblem(entry)
      if (problem !== undefined) return die("post", problem)
      return sql.withTransaction(Effect.gen(function*() {
        const inserted = yield* sql`
          INSERT INTO ledger_entries (id, account_id, machine_id, amount, type, ref, created_at)
          VALUES (${entry.id}, ${entry.account_id}, ${entry.machine_id}, ${entry.amount}, ${entry.type},
                  ${entry.ref}, ${entry.created_at})
          ON CONFLICT (account_id, ref) DO NOTHING
          RETURNING id`
        if (inserted.length === 0) return "duplicate" as const
        yield* sql`
          INSERT INTO ledger_balances (account_id, scope, posted, held)
          VALUES (${entry.account_id}, ${scopeKey(entry.machine_id)}, ${entry.amount}, 0)
          ON CONFLICT (account_id, scope) DO UPDATE SET posted = ledger_balances.posted + EXCLUDED.posted`
        return "posted" as const
      })).pipe(Effect.orDie, Effect.withSpan("LedgerStore.post"))
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

    const reserve = (reservation: NewReservation) => {
      const problem = reservationProblem(reservation)
      if (problem !== undefined) return die("reserve", problem)
      const scopes = reservation.allocations.map((a) => scopeKey(a.machine_id))
      const amounts = reservation.allocations.map((a) => a.amount)
      return sql.withTransaction(Effect.gen(function*() {
        const inserted = yield* sql`
          INSERT INTO ledger_reservations (ref, account_id, machine_id, scopes, amounts, status, created_at, expires_at)
          VALUES (${reservation.ref}, ${reservation.account_id}, ${reservation.machine_id}, ${scopes}::text[],
                  ${amounts}::bigint[], 'pending', ${reservation.created_at}, ${reservation.expires_at})
          ON CONFLICT (ref) DO NOTHING
          RETURNING ref`
        if (inserted.length === 0) return "duplicate" as const
        for (const allocation of [...reservation.allocations].sort(byScope)) {
          const held = yield* sql`
            UPDATE ledger_balances SET held = held + ${allocation.amount}
            WHERE account_id = ${reservation.account_id} AND scope = ${scopeKey(allocation.machine_id)}
              AND posted - held >= ${allocation.amount}
            RETURNING 1 AS held`
          if (held.length === 0) return yield* new Insufficient()
        }
        return "reserved" as const
      })).pipe(
        Effect.catchTag("Insufficient", () => Effect.succeed("insufficient" as const)),
        Effect.orDie,
        Effect.withSpan("LedgerStore.reserve")
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

    /** Applies per-scope deltas to the account's balances, in lock order (creating scopes at zero). */
    const applyDeltas = (accountId: string, deltas: ReadonlyArray<readonly [string, { posted: bigint; held: bigint }]>) =>
      Effect.forEach(deltas, ([scope, delta]) =>
        sql`INSERT INTO ledger_balances (account_id, scope, posted, held)
            VALUES (${accountId}, ${scope}, ${delta.posted}, 0)
            ON CONFLICT (account_id, scope) DO UPDATE
            SET posted = ledger_balances.posted + ${delta.posted}, held = ledger_balances.held + ${delta.held}`, {
        discard: true
      })

    const settle = (settlement: Settlement) =>
      sql.withTransaction(Effect.gen(function*() {
        const rows = yield* sql<ReservationRow>`
          UPDATE ledger_reservations
          SET status = 'settled', finished_at = ${settlement.at}, charged = ${settlement.charged},
              excess = ${settlement.excess}
          WHERE ref = ${settlement.ref} AND status = 'pending'
          RETURNING ${reservationColumns}`
        if (rows[0] === undefined) return "not_pending" as const
        const found = toReservation(rows[0])
        // A defect here rolls the whole transaction back: the reservation stays pending.
        const problem = settlementProblem(found, settlement)
        if (problem !== undefined) return yield* die("settle", problem)
        yield* applyDeltas(found.account_id, deltasByScope(found.allocations, settlement.entries, { holds: -1n }))
        yield* Effect.forEach(settlement.entries, insertEntry, { discard: true })
        return "settled" as const
      })).pipe(Effect.orDie, Effect.withSpan("LedgerStore.settle"))

    /** Moves one pending reservation to voided or expired and releases its holds; false if not pending. */
    const finish = (ref: string, status: "voided" | "expired", at: Timestamp) =>
      sql.withTransaction(Effect.gen(function*() {
        const rows = yield* sql<ReservationRow>`
          UPDATE ledger_reservations SET status = ${status}, finished_at = ${at}
          WHERE ref = ${ref} AND status = 'pending'
          RETURNING ${reservationColumns}`
        if (rows[0] === undefined) return false
        const found = toReservation(rows[0])
        yield* applyDeltas(found.account_id, deltasByScope(found.allocations, [], { holds: -1n }))
        return true
      }))

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
      reserve,
      reservation,
      pending,
      settle,
      void: voidReservation,
      expire
    })
  })
)
