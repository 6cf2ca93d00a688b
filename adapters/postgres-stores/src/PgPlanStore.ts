/**
 * The plan store port (core/src/plans/PlanStore.ts) on Postgres (a real server or embedded
 * PGlite). The tables are created by the `0018_plans` migration (./migrations/0018_plans.ts);
 * `0019_plan_renewals` adds the plan's card_reference and renewal_error, the `plan_renewals`
 * table (one row per renewal order) and the partial index of `dueRenewals`.
 *
 * The rules that must hold under concurrency, each in one statement (renew: one transaction):
 * - insertSubscription / insertRental: `INSERT ... ON CONFLICT DO NOTHING RETURNING`, then, when
 *   nothing was inserted, a read of the order's record. No conflict target on purpose: every
 *   unique index (order_id and the id) is then an arbiter, so a concurrent insert of the same order
 *   (even the same record twice) waits for the first and does nothing, instead of failing on the
 *   id's index. A conflict that leaves the order without a record is the id of another order's
 *   record: a defect, as the port says (and the memory store: the order's record first, then the id).
 * - setRenewal: a conditional `UPDATE ... WHERE id AND account_id RETURNING`.
 * - renew: one transaction that first locks the plan's row (`SELECT ... FOR UPDATE`): none is
 *   "not_found". Renewals of one plan then run one after another, and each later statement reads
 *   what the one before committed (READ COMMITTED takes a snapshot per statement): a row of the
 *   order in `plan_renewals` is "already_renewed"; a current_period_end (as locked, the newest)
 *   other than `after_period_end` is "stale"; else it inserts the order's row and sets the period
 *   (and renewal_error NULL) in one statement. The insert is `ON CONFLICT DO NOTHING` for the one
 *   race the plan's lock does not cover, one order renewing two plans at once: the second waits
 *   for the first and then changes nothing ("already_renewed"). A single statement would not do:
 *   its snapshot is taken before it waits for the lock, so it could not see the order that
 *   renewed the plan meanwhile (a replayed order would answer "stale").
 * - failRenewal: a conditional `UPDATE ... WHERE id AND current_period_end = $after`; a renewal
 *   committed meanwhile makes it match nothing (the row is re-checked after its lock).
 * - dueRenewals: a read, in the order of the partial index `subscriptions_due` (WHERE auto_renews).
 * Input that breaks subscriptionProblem / rentalProblem / renewalProblem is refused before any
 * SQL (the CHECKs of the migrations hold it too).
 *
 * Timestamps are timestamptz (read back as ISO with milliseconds; parameters are cast to
 * timestamptz, so comparisons are of instants, never of text); resource counts int8, read
 * back as numbers (every count the rules accept is a safe integer). Listings are newest first,
 * then by id under the "C" collation: byte order, which for the ids' characters is core's
 * `newestFirst` (JS string order).
 */
import {
  type PlanRenewal,
  PlanStore,
  renewalProblem,
  type RenewOutcome,
  type RentalRecord,
  rentalProblem,
  type SubscriptionRecord,
  subscriptionProblem
} from "@model-platform/core/plans"
import type { PaymentMethod } from "@model-platform/core/catalogue"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { batchedById } from "./PgReadBatch.ts"

const iso = (date: Date): string => date.toISOString()

/** int8 comes back as bigint or decimal text, depending on the driver. */
const count = (value: bigint | string | number): number => {
  const n = Number(value)
  if (!Number.isSafeInteger(n)) throw new Error(`PlanStore: a stored count is not a safe integer: ${String(value)}`)
  return n
}

interface SubscriptionRow {
  readonly id: string
  readonly account_id: string
  readonly order_id: string
  readonly machine_id: string
  readonly plan_id: string
  readonly paid_with: PaymentMethod
  readonly auto_renews: boolean
  readonly cancel_at_period_end: boolean
  readonly current_period_start: Date
  readonly current_period_end: Date
  readonly created_at: Date
  readonly card_reference: string | null
  readonly renewal_error: string | null
}

const toSubscription = (row: SubscriptionRow): SubscriptionRecord => ({
  id: row.id,
  account_id: row.account_id,
  order_id: row.order_id,
  machine_id: row.machine_id,
  plan_id: row.plan_id,
  paid_with: row.paid_with,
  auto_renews: row.auto_renews,
  cancel_at_period_end: row.cancel_at_period_end,
  current_period_start: iso(row.current_period_start),
  current_period_end: iso(row.current_period_end),
  created_at: iso(row.created_at),
  card_reference: row.card_reference,
  renewal_error: row.renewal_error
})

interface RentalRow {
  readonly id: string
  readonly account_id: string
  readonly order_id: string
  readonly machine_id: string
  readonly cpu_cores: bigint | string
  readonly memory_gb: bigint | string
  readonly gpu: bigint | string
  readonly storage_gb: bigint | string
  readonly hours: bigint | string
  readonly starts_at: Date
  readonly ends_at: Date
  readonly created_at: Date
}

const toRental = (row: RentalRow): RentalRecord => ({
  id: row.id,
  account_id: row.account_id,
  order_id: row.order_id,
  machine_id: row.machine_id,
  cpu_cores: count(row.cpu_cores),
  memory_gb: count(row.memory_gb),
  gpu: count(row.gpu),
  storage_gb: count(row.storage_gb),
  hours: count(row.hours),
  starts_at: iso(row.starts_at),
  ends_at: iso(row.ends_at),
  created_at: iso(row.created_at)
})

/** Maps rows inside an Effect, so a row that does not read back (toRental throws) is a defect. */
const readAll = <Row, A>(to: (row: Row) => A) => (rows: ReadonlyArray<Row>) =>
  Effect.try({ try: () => rows.map(to), catch: (e) => e }).pipe(Effect.orDie)
const readOne = <Row, A>(to: (row: Row) => A) => (rows: ReadonlyArray<Row>) =>
  Effect.map(readAll(to)(rows.slice(0, 1)), (records): A | undefined => records[0])

export const PlanStorePg: Layer.Layer<PlanStore, never, SqlClient.SqlClient> = Layer.effect(
  PlanStore,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const subscriptionColumns = sql.literal(
      "id, account_id, order_id, machine_id, plan_id, paid_with, auto_renews, cancel_at_period_end, " +
        "current_period_start, current_period_end, created_at, card_reference, renewal_error"
    )
    const rentalColumns = sql.literal(
      "id, account_id, order_id, machine_id, cpu_cores, memory_gb, gpu, storage_gb, hours, starts_at, ends_at, created_at"
    )
    const oneSubscription = readOne(toSubscription)
    const manySubscriptions = readAll(toSubscription)
    const oneRental = readOne(toRental)
    const manyRentals = readAll(toRental)

    /** The inserted record, else the order's (a conflict leaving the order without one: a defect). */
    const insertedOrExisting = <A>(
      operation: string,
      id: string,
      inserted: A | undefined,
      ofOrder: Effect.Effect<A | undefined>
    ): Effect.Effect<A> =>
      inserted !== undefined
        ? Effect.succeed(inserted)
        : Effect.flatMap(ofOrder, (existing) =>
          existing === undefined
            ? Effect.die(new Error(`PlanStore.${operation}: duplicate id ${id} (a record of another order)`))
            : Effect.succeed(existing))

    // ---- plans ----

    const subscriptionOfOrder = (orderId: string) =>
      sql<SubscriptionRow>`SELECT ${subscriptionColumns} FROM subscriptions WHERE order_id = ${orderId}`.pipe(
        Effect.orDie,
        Effect.flatMap(oneSubscription)
      )

    const insertSubscription = (r: SubscriptionRecord) => {
      const problem = subscriptionProblem(r)
      if (problem !== undefined) return Effect.die(new Error(`PlanStore.insertSubscription: ${problem}`))
      return sql<SubscriptionRow>`
        INSERT INTO subscriptions (${subscriptionColumns})
        VALUES (${r.id}, ${r.account_id}, ${r.order_id}, ${r.machine_id}, ${r.plan_id}, ${r.paid_with},
                ${r.auto_renews}, ${r.cancel_at_period_end}, ${r.current_period_start}::timestamptz,
                ${r.current_period_end}::timestamptz, ${r.created_at}::timestamptz, ${r.card_reference},
                ${r.renewal_error})
        ON CONFLICT DO NOTHING
        RETURNING ${subscriptionColumns}`.pipe(
        Effect.orDie,
        Effect.flatMap(oneSubscription),
        Effect.flatMap((inserted) =>
          insertedOrExisting("insertSubscription", r.id, inserted, subscriptionOfOrder(r.order_id))
        ),
        Effect.withSpan("PlanStore.insertSubscription")
      )
    }

    // Concurrent reads in one statement (PgReadBatch.ts): a plan key's plan is read at every call.
    const subscription = batchedById(
      (ids) =>
        sql<SubscriptionRow>`SELECT ${subscriptionColumns} FROM subscriptions WHERE id IN ${sql.in(ids)}`.pipe(
          Effect.orDie,
          Effect.flatMap(manySubscriptions)
        )
    )

    const subscriptions = (accountId: string) =>
      sql<SubscriptionRow>`SELECT ${subscriptionColumns} FROM subscriptions WHERE account_id = ${accountId}
                           ORDER BY created_at DESC, id COLLATE "C"`.pipe(
        Effect.orDie,
        Effect.flatMap(manySubscriptions)
      )

    const setRenewal = (
      accountId: string,
      id: string,
      renewal: Pick<SubscriptionRecord, "auto_renews" | "cancel_at_period_end">
    ) =>
      sql<SubscriptionRow>`
        UPDATE subscriptions
        SET auto_renews = ${renewal.auto_renews}, cancel_at_period_end = ${renewal.cancel_at_period_end}
        WHERE id = ${id} AND account_id = ${accountId}
        RETURNING ${subscriptionColumns}`.pipe(
        Effect.orDie,
        Effect.flatMap(oneSubscription),
        Effect.withSpan("PlanStore.setRenewal")
      )

    const renew = (r: PlanRenewal) => {
      const problem = renewalProblem(r)
      if (problem !== undefined) return Effect.die(new Error(`PlanStore.renew: ${problem}`))
      return Effect.gen(function*() {
        // The lock first: a concurrent renewal of this plan waits here until the other commits.
        const locked = yield* sql<{ readonly current: boolean }>`
          SELECT current_period_end = ${r.after_period_end}::timestamptz AS current
          FROM subscriptions WHERE id = ${r.subscription_id} FOR UPDATE`
        if (locked.length === 0) return "not_found"
        // A statement of its own, after the lock: it sees the renewal that held the lock before.
        const done = yield* sql`SELECT 1 FROM plan_renewals WHERE order_id = ${r.order_id}`
        if (done.length > 0) return "already_renewed"
        if (!locked[0]!.current) return "stale"
        // The period moves only if the order's row is new (ON CONFLICT: the order renewing another
        // plan at this moment, waited for): both or neither, in one statement.
        const moved = yield* sql`
          WITH remembered AS (
            INSERT INTO plan_renewals (order_id, subscription_id, after_period_end, current_period_start, current_period_end)
            VALUES (${r.order_id}, ${r.subscription_id}, ${r.after_period_end}::timestamptz,
                    ${r.current_period_start}::timestamptz, ${r.current_period_end}::timestamptz)
            ON CONFLICT (order_id) DO NOTHING
            RETURNING subscription_id
          )
          UPDATE subscriptions
          SET current_period_start = ${r.current_period_start}::timestamptz,
              current_period_end = ${r.current_period_end}::timestamptz, renewal_error = NULL
          WHERE id IN (SELECT subscription_id FROM remembered)
          RETURNING id`
        return moved.length > 0 ? "renewed" : "already_renewed"
      }).pipe(
        sql.withTransaction,
        Effect.map((outcome): RenewOutcome => outcome),
        Effect.orDie,
        Effect.withSpan("PlanStore.renew")
      )
    }

    const failRenewal = (id: string, afterPeriodEnd: string, error: string) =>
      sql`
        UPDATE subscriptions SET auto_renews = false, renewal_error = ${error}
        WHERE id = ${id} AND current_period_end = ${afterPeriodEnd}::timestamptz
        RETURNING id`.pipe(
        Effect.map((rows) => rows.length > 0),
        Effect.orDie,
        Effect.withSpan("PlanStore.failRenewal")
      )

    const dueRenewals = (before: string, limit: number) => {
      // As the memory store's slice: a fraction counts down, nothing (or NaN) below 1 is no rows.
      const n = Math.floor(Math.min(limit, Number.MAX_SAFE_INTEGER))
      if (!(n >= 1)) return Effect.succeed([])
      return sql<SubscriptionRow>`
        SELECT ${subscriptionColumns} FROM subscriptions
        WHERE auto_renews AND current_period_end <= ${before}::timestamptz
        ORDER BY current_period_end, id COLLATE "C"
        LIMIT ${BigInt(n)}`.pipe(
        Effect.orDie,
        Effect.flatMap(manySubscriptions),
        Effect.withSpan("PlanStore.dueRenewals")
      )
    }

    // ---- rentals ----

    const rentalOfOrder = (orderId: string) =>
      sql<RentalRow>`SELECT ${rentalColumns} FROM rentals WHERE order_id = ${orderId}`.pipe(
        Effect.orDie,
        Effect.flatMap(oneRental)
      )

    const insertRental = (r: RentalRecord) => {
      const problem = rentalProblem(r)
      if (problem !== undefined) return Effect.die(new Error(`PlanStore.insertRental: ${problem}`))
      return sql<RentalRow>`
        INSERT INTO rentals (${rentalColumns})
        VALUES (${r.id}, ${r.account_id}, ${r.order_id}, ${r.machine_id}, ${BigInt(r.cpu_cores)}, ${BigInt(r.memory_gb)},
                ${BigInt(r.gpu)}, ${BigInt(r.storage_gb)}, ${BigInt(r.hours)}, ${r.starts_at}::timestamptz,
                ${r.ends_at}::timestamptz, ${r.created_at}::timestamptz)
        ON CONFLICT DO NOTHING
        RETURNING ${rentalColumns}`.pipe(
        Effect.orDie,
        Effect.flatMap(oneRental),
        Effect.flatMap((inserted) => insertedOrExisting("insertRental", r.id, inserted, rentalOfOrder(r.order_id))),
        Effect.withSpan("PlanStore.insertRental")
      )
    }

    // As `subscription`: a rental key's rental is read at every call.
    const rental = batchedById(
      (ids) =>
        sql<RentalRow>`SELECT ${rentalColumns} FROM rentals WHERE id IN ${sql.in(ids)}`.pipe(
          Effect.orDie,
          Effect.flatMap(manyRentals)
        )
    )

    const rentals = (accountId: string) =>
      sql<RentalRow>`SELECT ${rentalColumns} FROM rentals WHERE account_id = ${accountId}
                     ORDER BY created_at DESC, id COLLATE "C"`.pipe(
        Effect.orDie,
        Effect.flatMap(manyRentals)
      )

    return PlanStore.of({
      insertSubscription,
      subscription,
      subscriptions,
      setRenewal,
      renew,
      failRenewal,
      dueRenewals,
      insertRental,
      rental,
      rentals
    })
  })
)
