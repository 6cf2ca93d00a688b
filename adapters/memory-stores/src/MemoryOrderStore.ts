/**
 * The order store port in memory, for tests and property tests. Every rule the port documents is
 * kept: unique order ids, card sessions and deposit addresses; markPaid and redeemTicket are
 * conditional and happen once; one ticket and one receipt per order; one deposit per (chain, tx).
 * State lives in one Ref and each operation is a single `Ref.modify` (reads a single `Ref.get`),
 * which is what makes it atomic between fibers. Broken input (a duplicate id, an address used by
 * another order) is a defect, as a violated constraint is in SQL.
 */
import { Effect, Layer, Ref } from "effect"
import type { PaymentMethod } from "@model-platform/core/catalogue"
import {
  type DepositRecord,
  type OrderRecord,
  OrderStore,
  type PaymentStart,
  type ReceiptRecord,
  type RedeemOutcome,
  type TicketRecord
} from "@model-platform/core/payments"
import type { Timestamp } from "@model-platform/core/kernel"

interface Stored<T> {
  readonly record: T
  /** Insertion order, to break ties between equal timestamps. */
  readonly seq: number
}

interface State {
  readonly orders: ReadonlyMap<string, Stored<OrderRecord>>
  readonly orderBySession: ReadonlyMap<string, string>
  readonly orderByAddress: ReadonlyMap<string, string>
  readonly tickets: ReadonlyMap<string, Stored<TicketRecord>>
  readonly ticketByOrder: ReadonlyMap<string, string>
  readonly receipts: ReadonlyMap<string, Stored<ReceiptRecord>>
  readonly receiptByOrder: ReadonlyMap<string, string>
  /** By JSON [chain, tx]. */
  readonly deposits: ReadonlyMap<string, Stored<DepositRecord>>
  readonly seq: number
}

type Step<A> = readonly [A, State] | { readonly defect: string }

const modifyOrDie = <A>(ref: Ref.Ref<State>, f: (state: State) => Step<A>): Effect.Effect<A> =>
  Ref.modify(ref, (state): readonly [Step<A>, State] => {
    const step = f(state)
    return "defect" in step ? [step, state] : [step, step[1]]
  }).pipe(Effect.flatMap((step) => "defect" in step ? Effect.die(new Error(step.defect)) : Effect.succeed(step[0])))

/** Newest first by a timestamp field; equal timestamps: last inserted first. */
const newestFirst = <T>(items: Iterable<Stored<T>>, at: (t: T) => string): Array<T> =>
  [...items]
    .sort((a, b) => {
      const x = at(a.record)
      const y = at(b.record)
      return x > y ? -1 : x < y ? 1 : b.seq - a.seq
    })
    .map((s) => s.record)

const copyOrder = (o: OrderRecord): OrderRecord => ({ ...o, deposit: o.deposit === null ? null : { ...o.deposit } })

const depositKey = (chain: string, tx: string) => JSON.stringify([chain, tx])

export const OrderStoreMemory: Layer.Layer<OrderStore> = Layer.effect(
  OrderStore,
  Effect.gen(function*() {
    const state = yield* Ref.make<State>({
      orders: new Map(),
      orderBySession: new Map(),
      orderByAddress: new Map(),
      tickets: new Map(),
      ticketByOrder: new Map(),
      receipts: new Map(),
      receiptByOrder: new Map(),
      deposits: new Map(),
      seq: 0
    })
    const read = <A>(f: (s: State) => A) => Effect.map(Ref.get(state), f)
    const orderOf = (s: State, id: string | undefined) =>
      id === undefined ? undefined : s.orders.get(id)?.record
    const setOrder = (s: State, order: OrderRecord): State => {
      const stored = s.orders.get(order.id)!
      return { ...s, orders: new Map(s.orders).set(order.id, { record: order, seq: stored.seq }) }
    }

    // ---- orders ----

    const insertOrder = (order: OrderRecord) =>
      modifyOrDie(state, (s): Step<void> => {
        if (s.orders.has(order.id)) return { defect: `OrderStore.insertOrder: duplicate order id ${order.id}` }
        if (order.card_session_id !== null && s.orderBySession.has(order.card_session_id)) {
          return { defect: `OrderStore.insertOrder: duplicate card session ${order.card_session_id}` }
        }
        if (order.deposit !== null && s.orderByAddress.has(order.deposit.address)) {
          return { defect: `OrderStore.insertOrder: duplicate deposit address ${order.deposit.address}` }
        }
        return [undefined, {
          ...s,
          orders: new Map(s.orders).set(order.id, { record: copyOrder(order), seq: s.seq }),
          orderBySession: order.card_session_id === null
            ? s.orderBySession
            : new Map(s.orderBySession).set(order.card_session_id, order.id),
          orderByAddress: order.deposit === null
            ? s.orderByAddress
            : new Map(s.orderByAddress).set(order.deposit.address, order.id),
          seq: s.seq + 1
        }]
      })

    const getOrder = (accountId: string, orderId: string) =>
      read((s) => {
        const order = orderOf(s, orderId)
        return order !== undefined && order.account_id === accountId ? copyOrder(order) : undefined
      })

    const findOrder = (orderId: string) =>
      read((s) => {
        const order = orderOf(s, orderId)
        return order === undefined ? undefined : copyOrder(order)
      })

    const listOrders = (accountId: string, limit: number) =>
      read((s) =>
        newestFirst([...s.orders.values()].filter((o) => o.record.account_id === accountId), (o) => o.created_at)
          .slice(0, limit)
          .map(copyOrder)
      )

    const findByCardSession = (sessionId: string) =>
      read((s) => {
        const order = orderOf(s, s.orderBySession.get(sessionId))
        return order === undefined ? undefined : copyOrder(order)
      })

    const findByDepositAddress = (address: string) =>
      read((s) => {
        const order = orderOf(s, s.orderByAddress.get(address))
        return order === undefined ? undefined : copyOrder(order)
      })

    const startPayment = (orderId: string, start: PaymentStart, expiresAt: Timestamp, now: Timestamp) =>
      modifyOrDie(state, (s): Step<OrderRecord | undefined> => {
        const order = orderOf(s, orderId)
        if (order === undefined || order.status !== "pending" || !(Date.parse(order.expires_at) > Date.parse(now))) {
          return [undefined, s]
        }
        if (start.method === "card") {
          if (order.card_session_id === null && s.orderBySession.has(start.session_id)) {
            return { defect: `OrderStore.startPayment: card session ${start.session_id} belongs to another order` }
          }
          const next: OrderRecord = {
            ...order,
            payment_method: "card",
            expires_at: expiresAt,
            card_session_id: order.card_session_id ?? start.session_id,
            checkout_url: order.card_session_id === null ? start.checkout_url : order.checkout_url
          }
          const sessions = order.card_session_id === null
            ? new Map(s.orderBySession).set(start.session_id, order.id)
            : s.orderBySession
          return [copyOrder(next), { ...setOrder(s, next), orderBySession: sessions }]
        }
        if (order.deposit !== null) {
          if (order.deposit.chain !== start.deposit.chain || order.deposit.token !== start.deposit.token) return [undefined, s]
          const next: OrderRecord = { ...order, payment_method: "stablecoin", expires_at: expiresAt }
          return [copyOrder(next), setOrder(s, next)]
        }
        if (s.orderByAddress.has(start.deposit.address)) {
          return { defect: `OrderStore.startPayment: deposit address ${start.deposit.address} belongs to another order` }
        }
        const next: OrderRecord = {
          ...order,
          payment_method: "stablecoin",
          expires_at: expiresAt,
          deposit: { ...start.deposit }
        }
        return [copyOrder(next), {
          ...setOrder(s, next),
          orderByAddress: new Map(s.orderByAddress).set(start.deposit.address, order.id)
        }]
      })

    const markPaid = (orderId: string, paidWith: PaymentMethod, paidAt: Timestamp) =>
      Ref.modify(state, (s): readonly [boolean, State] => {
        const order = orderOf(s, orderId)
        if (order === undefined || order.status !== "pending" || !(Date.parse(order.expires_at) > Date.parse(paidAt))) {
          return [false, s]
        }
        return [true, setOrder(s, { ...order, status: "paid", paid_at: paidAt, paid_with: paidWith })]
      })

    const unfulfilled = (limit: number) =>
      read((s) =>
        [...s.orders.values()]
          .filter((o) => o.record.status === "paid" && !s.receiptByOrder.has(o.record.id))
          .sort((a, b) => {
            const x = a.record.paid_at ?? ""
            const y = b.record.paid_at ?? ""
            return x < y ? -1 : x > y ? 1 : a.seq - b.seq
          })
          .slice(0, limit)
          .map((o) => copyOrder(o.record))
      )

    // ---- tickets ----

    const issueTicket = (ticket: TicketRecord) =>
      modifyOrDie(state, (s): Step<TicketRecord> => {
        const existing = s.ticketByOrder.get(ticket.order_id)
        if (existing !== undefined) return [{ ...s.tickets.get(existing)!.record }, s]
        if (s.tickets.has(ticket.code)) return { defect: `OrderStore.issueTicket: duplicate ticket code` }
        return [{ ...ticket }, {
          ...s,
          tickets: new Map(s.tickets).set(ticket.code, { record: { ...ticket }, seq: s.seq }),
          ticketByOrder: new Map(s.ticketByOrder).set(ticket.order_id, ticket.code),
          seq: s.seq + 1
        }]
      })

    const getTicket = (code: string) =>
      read((s) => {
        const t = s.tickets.get(code)
        return t === undefined ? undefined : { ...t.record }
      })

    const ticketForOrder = (orderId: string) =>
      read((s) => {
        const code = s.ticketByOrder.get(orderId)
        const t = code === undefined ? undefined : s.tickets.get(code)
        return t === undefined ? undefined : { ...t.record }
      })

    const ticketsBoughtBy = (accountId: string) =>
      read((s) =>
        newestFirst([...s.tickets.values()].filter((t) => t.record.account_id === accountId), (t) => t.created_at)
          .map((t) => ({ ...t }))
      )

    const redeemTicket = (code: string, accountId: string, at: Timestamp) =>
      Ref.modify(state, (s): readonly [RedeemOutcome, State] => {
        const stored = s.tickets.get(code)
        if (stored === undefined) return [{ _tag: "NotFound" }, s]
        if (stored.record.redeemed_by !== null) return [{ _tag: "AlreadyRedeemed", ticket: { ...stored.record } }, s]
        const redeemed: TicketRecord = { ...stored.record, redeemed_by: accountId, redeemed_at: at }
        return [{ _tag: "Redeemed", ticket: { ...redeemed } }, {
          ...s,
          tickets: new Map(s.tickets).set(code, { record: redeemed, seq: stored.seq })
        }]
      })

    // ---- receipts ----

    const insertReceipt = (receipt: ReceiptRecord) =>
      modifyOrDie(state, (s): Step<"inserted" | "exists"> => {
        if (s.receiptByOrder.has(receipt.order_id)) return ["exists", s]
        if (s.receipts.has(receipt.id)) return { defect: `OrderStore.insertReceipt: duplicate receipt id ${receipt.id}` }
        return ["inserted", {
          ...s,
          receipts: new Map(s.receipts).set(receipt.id, { record: { ...receipt }, seq: s.seq }),
          receiptByOrder: new Map(s.receiptByOrder).set(receipt.order_id, receipt.id),
          seq: s.seq + 1
        }]
      })

    const listReceipts = (accountId: string) =>
      read((s) =>
        newestFirst([...s.receipts.values()].filter((r) => r.record.account_id === accountId), (r) => r.paid_at)
          .map((r) => ({ ...r }))
      )

    const getReceipt = (accountId: string, receiptId: string) =>
      read((s) => {
        const r = s.receipts.get(receiptId)?.record
        return r !== undefined && r.account_id === accountId ? { ...r } : undefined
      })

    const purchasedCredits = (accountId: string) =>
      read((s) => {
        let sum = 0n
        for (const { record } of s.receipts.values()) {
          if (record.account_id === accountId && record.counts_toward_tier) {
            sum += record.credits
          }
        }
        return sum
      })

    // ---- deposits ----

    const recordDeposit = (deposit: DepositRecord) =>
      modifyOrDie(state, (s): Step<"recorded" | "duplicate"> => {
        const key = depositKey(deposit.chain, deposit.tx)
        if (s.deposits.has(key)) return ["duplicate", s]
        if (deposit.amount <= 0n) return { defect: `OrderStore.recordDeposit: amount must be positive` }
        return ["recorded", {
          ...s,
          deposits: new Map(s.deposits).set(key, { record: { ...deposit }, seq: s.seq }),
          seq: s.seq + 1
        }]
      })

    const getDeposit = (chain: string, tx: string) =>
      read((s) => {
        const d = s.deposits.get(depositKey(chain, tx))
        return d === undefined ? undefined : { ...d.record }
      })

    const depositsTo = (address: string) =>
      read((s) =>
        [...s.deposits.values()]
          .filter((d) => d.record.address === address)
          .sort((a, b) => a.seq - b.seq)
          .map((d) => ({ ...d.record }))
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
