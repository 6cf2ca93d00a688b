/**
 * The plan store port (core/src/ports/PlanStore.ts) on Postgres (a real server or embedded
 * PGlite). The tables are created by the `0018_plans` migration (./migrations/0018_plans.ts).
 *
 * The rules that must hold under concurrency, each in one statement:
 * - insertSubscription / insertRental: `INSERT ... ON CONFLICT DO NOTHING RETURNING`, then, when
 *   nothing was inserted, a read of the order's record. No conflict target on purpose: every
 *   unique index (order_id and the id) is then an arbiter, so a concurrent insert of the same order
 *   (even the same record twice) waits for the first and does nothing, instead of failing on the
 *   id's index. A conflict that leaves the order without a record is the id of another order's
 *   record: a defect, as the port says (and the memory store: the order's record first, then the id).
 * - setRenewal: a conditional `UPDATE ... WHERE id AND account_id RETURNING`.
 * Input that breaks subscriptionProblem / rentalProblem is refused before any SQL (the CHECKs of
 * the migration hold it too).
 *
 * Timestamps are timestamptz (read back as ISO with milliseconds); resource counts int8, read
 * back as numbers (every count the rules accept is a safe integer). Listings are newest first,
 * then by id under the "C" collation: byte order, which for the ids' characters is core's
 * `newestFirst` (JS string order).
 */
import {
  PlanStore,
  type RentalRecord,
  rentalProblem,
  type SubscriptionRecord,
  subscriptionProblem
} from "@model-platform/core/ports/PlanStore"
import type { PaymentMethod } from "@model-platform/core/Orders"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"

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
  created_at: iso(row.created_at)
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
        "current_period_start, current_period_end, created_at"
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
                ${r.current_period_end}::timestamptz, ${r.created_at}::timestamptz)
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

    const subscription = (id: string) =>
      sql<SubscriptionRow>`SELECT ${subscriptionColumns} FROM subscriptions WHERE id = ${id}`.pipe(
        Effect.orDie,
        Effect.flatMap(oneSubscription)
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

    const rental = (id: string) =>
      sql<RentalRow>`SELECT ${rentalColumns} FROM rentals WHERE id = ${id}`.pipe(
        Effect.orDie,
        Effect.flatMap(oneRental)
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
      insertRental,
      rental,
      rentals
    })
  })
)
