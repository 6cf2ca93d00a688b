/**
 * The order store port on Postgres (a real server or embedded PGlite). The tables are created by
 * the `0003_orders` migration (./migrations.ts).
 *
 * Every rule that must hold under concurrency is ONE statement, so it holds across processes:
 * - startPayment, markPaid, redeemTicket: a conditional `UPDATE ... WHERE <condition> RETURNING`;
 *   the row lock serialises concurrent calls and Postgres re-checks the condition (and recomputes
 *   the COALESCEs) on the row as the previous transaction left it, so exactly one call moves a
 *   pending order to paid, or an unredeemed ticket to redeemed, and concurrent card starts agree
 *   on one session;
 * - issueTicket, insertReceipt, recordDeposit: `INSERT ... ON CONFLICT (<the unique key>) DO
 *   NOTHING`; a concurrent insert of the same key waits on the unique index and then does nothing;
 * - uniqueness the port calls a defect (an order id, a card session or deposit address of another
 *   order, a ticket code of another order, a receipt id) is a constraint violation: a defect here.
 *
 * Cents and micro-credits are int8 (bigint both ways). Token base units are numeric(78,0), sent as
 * decimal text and read back as text, so no amount ever passes through a float.
 *
 * An order's details (what a rental or subscription buys; `0018_plans`) are a jsonb object, written
 * as the Schema `OrderDetailsJson` reads them and read back through it, so a row whose JSON has
 * another shape (or a count that is not an integer) is a defect, never an OrderRecord. Details that
 * do not fit the Schema are refused when inserted (a defect), as a violated constraint is.
 */
import { Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { OrderStatus, OrderType } from "@model-platform/core/payments"
import type { PaymentMethod } from "@model-platform/core/catalogue"
import { type DepositOutcome, type DepositRecord, type OrderRecord, OrderStore, type PaymentStart, type ReceiptRecord, type RedeemOutcome, type TicketRecord } from "@model-platform/core/payments"
import { type OrderDetails } from "@model-platform/core/plans"
import type { Timestamp } from "@model-platform/core/kernel"

const iso = (date: Date): string => date.toISOString()
const isoOrNull = (date: Date | null): string | null => date === null ? null : date.toISOString()

// ---------------------------------------------------------------------------------------------
// details

/** OrderDetails as stored: the port's two shapes, every count an integer (JSON numbers stay exact). */
export const OrderDetailsJson = Schema.Union([
  Schema.Struct({
    kind: Schema.Literal("rental"),
    cpu_cores: Schema.Int,
    memory_gb: Schema.Int,
    gpu: Schema.Int,
    storage_gb: Schema.Int,
    hours: Schema.Int
  }),
  Schema.Struct({
    kind: Schema.Literal("subscription"),
    plan_id: Schema.String,
    period_days: Schema.Int,
    renew_subscription_id: Schema.NullOr(Schema.String)
  })
])

// The compiler checks that the Schema reads exactly the port's type.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false
const schemaIsThePortsType: Same<OrderDetails, typeof OrderDetailsJson.Type> = true
void schemaIsThePortsType

const decodeDetails = Schema.decodeUnknownExit(OrderDetailsJson)

/** jsonb comes back parsed from the pg driver and PGlite; as text from anything else. */
const parsedJson = (value: unknown): unknown => typeof value === "string" ? JSON.parse(value) : value

/** The row's details, or a thrown Error (the callers turn it into a defect). */
const detailsOf = (id: string, value: unknown): OrderDetails | null => {
  if (value === null || value === undefined) return null
  const decoded = decodeDetails(parsedJson(value))
  if (decoded._tag === "Failure") throw new Error(`OrderStore: the details of order ${id} do not decode: ${String(decoded.cause)}`)
  return decoded.value
}

/** The details as written: checked against the Schema and encoded as JSON text, or why not. */
const detailsJson = (details: OrderDetails | null): { readonly json: string | null } | { readonly problem: string } => {
  if (details === null) return { json: null }
  const decoded = decodeDetails(details)
  return decoded._tag === "Failure"
    ? { problem: `details do not fit OrderDetails: ${String(decoded.cause)}` }
    : { json: JSON.stringify(decoded.value) }
}

// ---------------------------------------------------------------------------------------------
// rows

interface OrderRow {
  readonly id: string
  readonly account_id: string
  readonly type: OrderType
  readonly title: string
  readonly amount_cents: bigint
  readonly currency: string
  readonly credits: bigint
  readonly machine_id: string | null
  readonly package_id: string | null
  readonly gift: boolean
  readonly details: unknown
  readonly status: OrderStatus
  readonly payment_method: PaymentMethod | null
  readonly card_session_id: string | null
  readonly checkout_url: string | null
  readonly deposit_address: string | null
  readonly deposit_memo: string | null
  readonly deposit_chain: string | null
  readonly deposit_token: string | null
  readonly deposit_decimals: number | null
  readonly deposit_amount: string | null
  readonly created_at: Date
  readonly expires_at: Date
  readonly paid_at: Date | null
  readonly paid_with: PaymentMethod | null
}

const toOrder = (row: OrderRow): OrderRecord => ({
  id: row.id,
  account_id: row.account_id,
  type: row.type,
  title: row.title,
  amount_cents: BigInt(row.amount_cents),
  currency: row.currency,
  credits: BigInt(row.credits),
  machine_id: row.machine_id,
  package_id: row.package_id,
  gift: row.gift,
  details: detailsOf(row.id, row.details),
  status: row.status,
  payment_method: row.payment_method,
  card_session_id: row.card_session_id,
  checkout_url: row.checkout_url,
  deposit: row.deposit_address === null
    ? null
    : {
      address: row.deposit_address,
      memo: row.deposit_memo,
      chain: row.deposit_chain!,
      token: row.deposit_token!,
      decimals: Number(row.deposit_decimals),
      amount: BigInt(row.deposit_amount!)
    },
  created_at: iso(row.created_at),
  expires_at: iso(row.expires_at),
  paid_at: isoOrNull(row.paid_at),
  paid_with: row.paid_with
})

interface TicketRow {
  readonly code: string
  readonly order_id: string
  readonly account_id: string
  readonly credits: bigint
  readonly machine_id: string | null
  readonly created_at: Date
  readonly redeemed_by: string | null
  readonly redeemed_at: Date | null
}

const toTicket = (row: TicketRow): TicketRecord => ({
  code: row.code,
  order_id: row.order_id,
  account_id: row.account_id,
  credits: BigInt(row.credits),
  machine_id: row.machine_id,
  created_at: iso(row.created_at),
  redeemed_by: row.redeemed_by,
  redeemed_at: isoOrNull(row.redeemed_at)
})

interface ReceiptRow {
  readonly id: string
  readonly account_id: string
  readonly order_id: string
  readonly kind: OrderType
  readonly title: string
  readonly paid_at: Date
  readonly amount_cents: bigint
  readonly currency: string
  readonly credits: bigint
  readonly paid_with: PaymentMethod
  readonly auto_reload: boolean
  readonly counts_toward_tier: boolean
}

const toReceipt = (row: ReceiptRow): ReceiptRecord => ({
  id: row.id,
  account_id: row.account_id,
  order_id: row.order_id,
  kind: row.kind,
  title: row.title,
  paid_at: iso(row.paid_at),
  amount_cents: BigInt(row.amount_cents),
  currency: row.currency,
  credits: BigInt(row.credits),
  paid_with: row.paid_with,
  auto_reload: row.auto_reload,
  counts_toward_tier: row.counts_toward_tier
})

interface DepositRow {
  readonly chain: string
  readonly tx: string
  readonly token: string
  readonly address: string
  readonly amount: string
  readonly order_id: string | null
  readonly outcome: DepositOutcome
  readonly at: Date
  readonly recorded_at: Date
}

const toDeposit = (row: DepositRow): DepositRecord => ({
  tx: row.tx,
  chain: row.chain,
  token: row.token,
  address: row.address,
  amount: BigInt(row.amount),
  order_id: row.order_id,
  outcome: row.outcome,
  at: iso(row.at),
  recorded_at: iso(row.recorded_at)
})

// ---------------------------------------------------------------------------------------------

export const OrderStorePg: Layer.Layer<OrderStore, never, SqlClient.SqlClient> = Layer.effect(
  OrderStore,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const orderColumns = sql.literal(
      "id, account_id, type, title, amount_cents, currency, credits, machine_id, package_id, gift, details, status, " +
        "payment_method, card_session_id, checkout_url, deposit_address, deposit_memo, deposit_chain, deposit_token, " +
        "deposit_decimals, deposit_amount::text AS deposit_amount, created_at, expires_at, paid_at, paid_with"
    )
    const ticketColumns = sql.literal(
      "code, order_id, account_id, credits, machine_id, created_at, redeemed_by, redeemed_at"
    )
    const receiptColumns = sql.literal(
      "id, account_id, order_id, kind, title, paid_at, amount_cents, currency, credits, paid_with, auto_reload, " +
        "counts_toward_tier"
    )
    const depositColumns = sql.literal(
      "chain, tx, token, address, amount::text AS amount, order_id, outcome, at, recorded_at"
    )
    // toOrder throws when a row's details do not decode: a defect.
    const oneOrder = (rows: ReadonlyArray<OrderRow>) =>
      Effect.try({ try: () => rows[0] === undefined ? undefined : toOrder(rows[0]), catch: (e) => e }).pipe(Effect.orDie)
    const manyOrders = (rows: ReadonlyArray<OrderRow>) =>
      Effect.try({ try: () => rows.map(toOrder), catch: (e) => e }).pipe(Effect.orDie)
    const oneTicket = (rows: ReadonlyArray<TicketRow>) => rows[0] === undefined ? undefined : toTicket(rows[0])

    // ---- orders ----

    const insertOrder = (order: OrderRecord) => {
      const d = order.deposit
      const details = detailsJson(order.details)
      if ("problem" in details) return Effect.die(new Error(`OrderStore.insertOrder: ${details.problem}`))
      return sql`
        INSERT INTO orders (
          id, account_id, type, title, amount_cents, currency, credits, machine_id, package_id, gift, details, status,
          payment_method, card_session_id, checkout_url, deposit_address, deposit_memo, deposit_chain,
          deposit_token, deposit_decimals, deposit_amount, created_at, expires_at, paid_at, paid_with)
        VALUES (
          ${order.id}, ${order.account_id}, ${order.type}, ${order.title}, ${order.amount_cents}, ${order.currency},
          ${order.credits}, ${order.machine_id}, ${order.package_id}, ${order.gift}, ${details.json}::jsonb, ${order.status},
          ${order.payment_method}, ${order.card_session_id}, ${order.checkout_url}, ${d?.address ?? null},
          ${d?.memo ?? null}, ${d?.chain ?? null}, ${d?.token ?? null}, ${d?.decimals ?? null},
          ${d === null ? null : d.amount.toString()}::numeric, ${order.created_at}, ${order.expires_at},
          ${order.paid_at}, ${order.paid_with})`.pipe(Effect.asVoid, Effect.orDie, Effect.withSpan("OrderStore.insertOrder"))
    }

    const getOrder = (accountId: string, orderId: string) =>
      sql<OrderRow>`SELECT ${orderColumns} FROM orders WHERE id = ${orderId} AND account_id = ${accountId}`.pipe(
        Effect.flatMap(oneOrder),
        Effect.orDie
      )

    const findOrder = (orderId: string) =>
      sql<OrderRow>`SELECT ${orderColumns} FROM orders WHERE id = ${orderId}`.pipe(Effect.flatMap(oneOrder), Effect.orDie)

    const listOrders = (accountId: string, limit: number) =>
      sql<OrderRow>`SELECT ${orderColumns} FROM orders WHERE account_id = ${accountId}
                    ORDER BY created_at DESC, seq DESC LIMIT ${limit}`.pipe(
        Effect.flatMap(manyOrders),
        Effect.orDie
      )

    const findByCardSession = (sessionId: string) =>
      sql<OrderRow>`SELECT ${orderColumns} FROM orders WHERE card_session_id = ${sessionId}`.pipe(
        Effect.flatMap(oneOrder),
        Effect.orDie
      )

    const findByDepositAddress = (address: string) =>
      sql<OrderRow>`SELECT ${orderColumns} FROM orders WHERE deposit_address = ${address}`.pipe(
        Effect.flatMap(oneOrder),
        Effect.orDie
      )

    // In SET, column names are the row's values before the update, so the CASEs and COALESCEs keep
    // a session or deposit the order already has.
    const startPayment = (orderId: string, start: PaymentStart, expiresAt: Timestamp, now: Timestamp) => {
      const update = start.method === "card"
        ? sql<OrderRow>`
            UPDATE orders SET
              payment_method = 'card',
              expires_at = ${expiresAt},
              card_session_id = COALESCE(card_session_id, ${start.session_id}),
              checkout_url = CASE WHEN card_session_id IS NULL THEN ${start.checkout_url} ELSE checkout_url END
            WHERE id = ${orderId} AND status = 'pending' AND expires_at > ${now}::timestamptz
            RETURNING ${orderColumns}`
        : sql<OrderRow>`
            UPDATE orders SET
              payment_method = 'stablecoin',
              expires_at = ${expiresAt},
              deposit_address = COALESCE(deposit_address, ${start.deposit.address}),
              deposit_memo = CASE WHEN deposit_address IS NULL THEN ${start.deposit.memo} ELSE deposit_memo END,
              deposit_chain = COALESCE(deposit_chain, ${start.deposit.chain}),
              deposit_token = COALESCE(deposit_token, ${start.deposit.token}),
              deposit_decimals = COALESCE(deposit_decimals, ${start.deposit.decimals}),
              deposit_amount = COALESCE(deposit_amount, ${start.deposit.amount.toString()}::numeric)
            WHERE id = ${orderId} AND status = 'pending' AND expires_at > ${now}::timestamptz
              AND (deposit_address IS NULL
                   OR (deposit_chain = ${start.deposit.chain} AND deposit_token = ${start.deposit.token}))
            RETURNING ${orderColumns}`
      return update.pipe(Effect.flatMap(oneOrder), Effect.orDie, Effect.withSpan("OrderStore.startPayment"))
    }

    const markPaid = (orderId: string, paidWith: PaymentMethod, paidAt: Timestamp) =>
      sql`UPDATE orders SET status = 'paid', paid_at = ${paidAt}, paid_with = ${paidWith}
          WHERE id = ${orderId} AND status = 'pending' AND expires_at > ${paidAt}::timestamptz
          RETURNING id`.pipe(
        Effect.map((rows) => rows.length === 1),
        Effect.orDie,
        Effect.withSpan("OrderStore.markPaid")
      )

    const unfulfilled = (limit: number) =>
      sql<OrderRow>`SELECT ${orderColumns} FROM orders o
                    WHERE status = 'paid' AND NOT EXISTS (SELECT 1 FROM receipts r WHERE r.order_id = o.id)
                    ORDER BY paid_at, seq LIMIT ${limit}`.pipe(
        Effect.flatMap(manyOrders),
        Effect.orDie
      )

    // ---- tickets ----

    const ticketForOrder = (orderId: string) =>
      sql<TicketRow>`SELECT ${ticketColumns} FROM tickets WHERE order_id = ${orderId}`.pipe(
        Effect.map(oneTicket),
        Effect.orDie
      )

    const issueTicket = (ticket: TicketRecord) =>
      Effect.gen(function*() {
        const inserted = yield* sql<TicketRow>`
          INSERT INTO tickets (code, order_id, account_id, credits, machine_id, created_at, redeemed_by, redeemed_at)
          VALUES (${ticket.code}, ${ticket.order_id}, ${ticket.account_id}, ${ticket.credits}, ${ticket.machine_id},
                  ${ticket.created_at}, ${ticket.redeemed_by}, ${ticket.redeemed_at})
          ON CONFLICT (order_id) DO NOTHING
          RETURNING ${ticketColumns}`
        if (inserted[0] !== undefined) return toTicket(inserted[0])
        const existing = yield* ticketForOrder(ticket.order_id)
        if (existing === undefined) return yield* Effect.die(new Error("OrderStore.issueTicket: the order's ticket vanished"))
        return existing
      }).pipe(Effect.orDie, Effect.withSpan("OrderStore.issueTicket"))

    const getTicket = (code: string) =>
      sql<TicketRow>`SELECT ${ticketColumns} FROM tickets WHERE code = ${code}`.pipe(Effect.map(oneTicket), Effect.orDie)

    const ticketsBoughtBy = (accountId: string) =>
      sql<TicketRow>`SELECT ${ticketColumns} FROM tickets WHERE account_id = ${accountId}
                     ORDER BY created_at DESC, seq DESC`.pipe(
        Effect.map((rows) => rows.map(toTicket)),
        Effect.orDie
      )

    const redeemTicket = (code: string, accountId: string, at: Timestamp) =>
      Effect.gen(function*() {
        const updated = yield* sql<TicketRow>`
          UPDATE tickets SET redeemed_by = ${accountId}, redeemed_at = ${at}
          WHERE code = ${code} AND redeemed_by IS NULL
          RETURNING ${ticketColumns}`
        if (updated[0] !== undefined) return { _tag: "Redeemed", ticket: toTicket(updated[0]) } satisfies RedeemOutcome
        const current = yield* getTicket(code)
        return current === undefined
          ? { _tag: "NotFound" } satisfies RedeemOutcome
          : { _tag: "AlreadyRedeemed", ticket: current } satisfies RedeemOutcome
      }).pipe(Effect.orDie, Effect.withSpan("OrderStore.redeemTicket"))

    // ---- receipts ----

    const insertReceipt = (receipt: ReceiptRecord) =>
      sql`INSERT INTO receipts (id, account_id, order_id, kind, title, paid_at, amount_cents, currency, credits,
                                paid_with, auto_reload, counts_toward_tier)
          VALUES (${receipt.id}, ${receipt.account_id}, ${receipt.order_id}, ${receipt.kind}, ${receipt.title},
                  ${receipt.paid_at}, ${receipt.amount_cents}, ${receipt.currency}, ${receipt.credits},
                  ${receipt.paid_with}, ${receipt.auto_reload}, ${receipt.counts_toward_tier})
          ON CONFLICT (order_id) DO NOTHING
          RETURNING id`.pipe(
        Effect.map((rows) => rows.length === 1 ? "inserted" as const : "exists" as const),
        Effect.orDie,
        Effect.withSpan("OrderStore.insertReceipt")
      )

    const listReceipts = (accountId: string) =>
      sql<ReceiptRow>`SELECT ${receiptColumns} FROM receipts WHERE account_id = ${accountId}
                      ORDER BY paid_at DESC, seq DESC`.pipe(
        Effect.map((rows) => rows.map(toReceipt)),
        Effect.orDie
      )

    const getReceipt = (accountId: string, receiptId: string) =>
      sql<ReceiptRow>`SELECT ${receiptColumns} FROM receipts WHERE id = ${receiptId} AND account_id = ${accountId}`.pipe(
        Effect.map((rows) => rows[0] === undefined ? undefined : toReceipt(rows[0])),
        Effect.orDie
      )

    const purchasedCredits = (accountId: string) =>
      sql<{ readonly total: string }>`
        SELECT COALESCE(SUM(credits), 0)::text AS total FROM receipts
        WHERE account_id = ${accountId} AND counts_toward_tier`.pipe(
        Effect.map((rows) => BigInt(rows[0]?.total ?? "0")),
        Effect.orDie
      )

    // ---- deposits ----

    const recordDeposit = (deposit: DepositRecord) =>
      sql`INSERT INTO stablecoin_deposits (chain, tx, token, address, amount, order_id, outcome, at, recorded_at)
          VALUES (${deposit.chain}, ${deposit.tx}, ${deposit.token}, ${deposit.address},
                  ${deposit.amount.toString()}::numeric, ${deposit.order_id}, ${deposit.outcome}, ${deposit.at},
                  ${deposit.recorded_at})
          ON CONFLICT (chain, tx) DO NOTHING
          RETURNING tx`.pipe(
        Effect.map((rows) => rows.length === 1 ? "recorded" as const : "duplicate" as const),
        Effect.orDie,
        Effect.withSpan("OrderStore.recordDeposit")
      )

    const getDeposit = (chain: string, tx: string) =>
      sql<DepositRow>`SELECT ${depositColumns} FROM stablecoin_deposits WHERE chain = ${chain} AND tx = ${tx}`.pipe(
        Effect.map((rows) => rows[0] === undefined ? undefined : toDeposit(rows[0])),
        Effect.orDie
      )

    const depositsTo = (address: string) =>
      sql<DepositRow>`SELECT ${depositColumns} FROM stablecoin_deposits WHERE address = ${address} ORDER BY seq`.pipe(
        Effect.map((rows) => rows.map(toDeposit)),
        Effect.orDie
      )

    return OrderStore.of({
      insertOrder,
      getOrder,
      findOrder,
      listOrders,
      findByCardSession,
      findByDepositAddress,
      startPayment,
      markPaid,
      unfulfilled,
      issueTicket,
      getTicket,
      ticketForOrder,
      ticketsBoughtBy,
      redeemTicket,
      insertReceipt,
      listReceipts,
      getReceipt,
      purchasedCredits,
      recordDeposit,
      getDeposit,
      depositsTo
    })
  })
)
