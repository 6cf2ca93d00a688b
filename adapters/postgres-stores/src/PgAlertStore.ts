/**
 * The alert store port (core/src/billing/AlertStore.ts) on Postgres; the tables come from the
 * `0014_alerts` migration (./migrations/0014_alerts.ts). A raise is one insert that does nothing
 * on the alert's identity constraint; the top-up state's compare-and-set is one insert (no state
 * expected) or one update conditioned on the version read, so both hold between processes.
 */
import {
  type AlertKind,
  alertProblem,
  type AlertRecord,
  AlertStore,
  topUpProblem,
  type TopUpState
} from "@model-platform/core/billing"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"

interface AlertRow {
  readonly id: string
  readonly account_id: string
  readonly kind: string
  readonly target: string
  readonly period: string
  readonly point: number
  readonly message: string
  readonly seen: boolean
  readonly created_at: Date
}

interface TopUpRow {
  readonly version: number
  readonly phase: TopUpState["phase"]
  readonly order_id: string | null
  readonly day: string
  readonly charges_on_day: number
  readonly last_error: string | null
  readonly updated_at: Date
}

const toAlert = (row: AlertRow): AlertRecord => ({
  id: row.id,
  account_id: row.account_id,
  kind: row.kind as AlertKind,
  target: row.target,
  period: row.period,
  point: Number(row.point),
  message: row.message,
  seen: row.seen,
  created_at: row.created_at.toISOString()
})

const toTopUp = (row: TopUpRow): TopUpState => ({
  version: Number(row.version),
  phase: row.phase,
  order_id: row.order_id,
  day: row.day,
  charges_on_day: Number(row.charges_on_day),
  last_error: row.last_error,
  updated_at: row.updated_at.toISOString()
})

export const AlertStorePg: Layer.Layer<AlertStore, never, SqlClient.SqlClient> = Layer.effect(
  AlertStore,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const raise = (alert: AlertRecord) => {
      const problem = alertProblem(alert)
      if (problem !== undefined) return Effect.die(new Error(`AlertStore.raise: ${problem}`))
      return sql<{ readonly id: string }>`
        INSERT INTO alerts (id, account_id, kind, target, period, point, message, seen, created_at)
        VALUES (${alert.id}, ${alert.account_id}, ${alert.kind}, ${alert.target}, ${alert.period}, ${alert.point},
                ${alert.message}, ${alert.seen}, ${alert.created_at}::timestamptz)
        ON CONFLICT (account_id, kind, target, period, point) DO NOTHING
        RETURNING id`.pipe(
        Effect.orDie,
        Effect.map((rows) => (rows.length === 1 ? "raised" as const : "exists" as const)),
        Effect.withSpan("AlertStore.raise")
      )
    }

    const list = (accountId: string, limit: number) =>
      sql<AlertRow>`
        SELECT id, account_id, kind, target, period, point, message, seen, created_at FROM alerts
        WHERE account_id = ${accountId} ORDER BY created_at DESC, id DESC LIMIT ${limit}`.pipe(
        Effect.orDie,
        Effect.map((rows) => rows.map(toAlert)),
        Effect.withSpan("AlertStore.list")
      )

    const markSeen = (accountId: string, ids: ReadonlyArray<string>) =>
      ids.length === 0
        ? Effect.succeed(0)
        : sql<{ readonly id: string }>`
            UPDATE alerts SET seen = true
            WHERE account_id = ${accountId} AND NOT seen AND id IN ${sql.in([...new Set(ids)])}
            RETURNING id`.pipe(
            Effect.orDie,
            Effect.map((rows) => rows.length),
            Effect.withSpan("AlertStore.markSeen")
          )

    const topUp = (accountId: string) =>
      sql<TopUpRow>`
        SELECT version, phase, order_id, day, charges_on_day, last_error, updated_at
        FROM top_up_states WHERE account_id = ${accountId}`.pipe(
        Effect.orDie,
        Effect.map((rows) => (rows[0] === undefined ? undefined : toTopUp(rows[0]))),
        Effect.withSpan("AlertStore.topUp")
      )

    const swapTopUp = (accountId: string, expected: number | undefined, next: TopUpState) => {
      const problem = topUpProblem(expected, next)
      if (problem !== undefined) return Effect.die(new Error(`AlertStore.swapTopUp: ${problem}`))
      const written = expected === undefined
        ? sql<{ readonly version: number }>`
            INSERT INTO top_up_states (account_id, version, phase, order_id, day, charges_on_day, last_error, updated_at)
            VALUES (${accountId}, ${next.version}, ${next.phase}, ${next.order_id}, ${next.day}, ${next.charges_on_day},
                    ${next.last_error}, ${next.updated_at}::timestamptz)
            ON CONFLICT (account_id) DO NOTHING
            RETURNING version`
        : sql<{ readonly version: number }>`
            UPDATE top_up_states
            SET version = ${next.version}, phase = ${next.phase}, order_id = ${next.order_id}, day = ${next.day},
                charges_on_day = ${next.charges_on_day}, last_error = ${next.last_error},
                updated_at = ${next.updated_at}::timestamptz
            WHERE account_id = ${accountId} AND version = ${expected}
            RETURNING version`
      return written.pipe(
        Effect.orDie,
        Effect.map((rows) => rows.length === 1),
        Effect.withSpan("AlertStore.swapTopUp")
      )
    }

    return AlertStore.of({ raise, list, markSeen, topUp, swapTopUp })
  })
)
