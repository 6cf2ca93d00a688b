/**
 * The ledger store port (core/src/ledger/LedgerStore.ts) on the one DynamoDB table of
 * DynamoTable.ts. docs/lambda-ledger.md describes every item, the access pattern it serves, and
 * how each atomic rule is enforced; in short:
 *
 * - Every write is ONE TransactWriteItems, so it happens whole or not at all, across processes:
 *   post = the entry's ref item, id item and entry item (conditional puts) + an update adding to
 *   the scope's balance; reserve = the reservation and its two index items + per allocation an
 *   update conditioned on `available >= :amount`; settle / void / expire = an update of the
 *   reservation conditioned on `status = pending`, the deletion of its index items, the balance
 *   updates and (settle) the usage entries.
 * - A balance item keeps `posted`, `held` and `available` = posted - held, all three changed by
 *   every write (a condition cannot compute posted - held, so the difference is stored).
 * - Budgets (DynamoBudgets.ts): reserve reads the account's limits, then its transaction also
 *   holds, per claim, a check that the limit is still as read and the month item's update
 *   conditioned on `used <= limit - amount`; finishing a reservation releases (settle: charges)
 *   its claims in the same transaction. The budgets hold the allocations' sum only.
 * - Grants (DynamoGrants.ts: the allowance, the trial): reserve's transaction also holds, per
 *   grant hold, the grant period item's update conditioned on `used <= size - amount`; finishing
 *   a reservation releases its holds (settle: spends each grant's charge) in the same transaction.
 * - A cancelled transaction is read through its CancellationReasons: ConditionalCheckFailed on a
 *   given item means "duplicate", "insufficient" or "not_pending" as the port defines them (or a
 *   defect: a duplicate entry id, a usage ref that exists); TransactionConflict means another
 *   transaction held an item, and the whole transaction is tried again after a jittered backoff.
 *
 * Money never passes through a JS number. This store speaks the low-level DynamoDB API (through
 * the DynamoConfig client, whose middleware stack is the plain DynamoDBClient's), writing amounts
 * as `{ N: bigint.toString() }` and decoding `N` strings with Schema.BigIntFromString. The
 * document client could do the same with `unmarshallOptions.wrapNumbers`, but its translate
 * options live on the client's config, shared with the other stores, whose items hold plain
 * numbers; the low-level API changes nothing for them.
 */
import type { TransactWriteItem } from "@aws-sdk/client-dynamodb"
import {
  type Allocation,
  byCreditTotal,
  byScope,
  creditProblem,
  type CreditTotal,
  type GrantHold,
  type LedgerEntry,
  LedgerStore,
  type NewReservation,
  type Reservation,
  reservationProblem,
  reservedAmount,
  type ScopeBalance,
  scopeKey,
  type Settlement,
  settlementProblem
} from "@model-platform/core/ledger"
import type { Timestamp } from "@model-platform/core/kernel"
import { Effect, Layer, Schema } from "effect"
import {
  BigIntAttr,
  decode,
  type Item,
  keyOf,
  literalAttr,
  makeWriteStamp,
  num,
  optionalStr,
  str,
  StringAttr,
  TimestampAttr
} from "./DynamoAttributes.ts"
import { budgetsAttribute, BudgetsAttr, budgetsOf, makeBudgets } from "./DynamoBudgets.ts"
import { makeItemTable } from "./DynamoErrors.ts"
import { grantsAttribute, GrantsAttr, grantsOf, makeGrants } from "./DynamoGrants.ts"
import { DynamoConfig, type ItemKey } from "./DynamoTable.ts"

// ---------------------------------------------------------------------------------------------
// keys

/** How many times a reserve reads the limits again when one changed before its transaction. */
const LIMIT_CHANGED_RETRIES = 20

/** Pending reservations are spread over this many expiry partitions (fixed: changing it strands items). */
export const EXPIRY_SHARDS = 8

/** FNV-1a over the ref's UTF-16 code units: which expiry partition a reservation is listed in. */
export const expiryShard = (ref: string): number => {
  let hash = 0x811c9dc5
  for (let i = 0; i < ref.length; i++) {
    hash ^= ref.charCodeAt(i)
    hash = Math.imul(hash, 0x01000193) >>> 0
  }
  return hash % EXPIRY_SHARDS
}

/** The partition of an account's ledger items. */
export const ledgerPk = (accountId: string) => `LEDGER#${accountId}`
const expiryPk = (shard: number) => `RESERVATIONS#PENDING#${shard}`

/** Sort key prefixes inside an account's ledger partition, for `begins_with`. */
export const LEDGER_PREFIX = {
  balance: "BALANCE#",
  entry: "ENTRY#",
  ref: "REF#",
  pending: "PENDING#",
  credits: "CREDITS#"
} as const

/**
 * The key of every ledger item (docs/lambda-ledger.md). Ids are whole key values, never parsed
 * back out of a key: each item also carries its fields as attributes.
 */
export const LedgerKeys = {
  /** One scope of an account: `posted`, `held`, `available`. "" after the prefix is account-wide. */
  balance: (accountId: string, machineId: string | null): ItemKey => ({
    pk: ledgerPk(accountId),
    sk: `${LEDGER_PREFIX.balance}${scopeKey(machineId)}`
  }),
  /** An entry, in the account's list: newest last in sort key order. */
  entry: (accountId: string, createdAt: string, stamp: string, seq: number, entryId: string): ItemKey => ({
    pk: ledgerPk(accountId),
    sk: `${LEDGER_PREFIX.entry}${createdAt}#${stamp}#${String(seq).padStart(3, "0")}#${entryId}`
  }),
  /** Holds an entry ref, so that a ref is posted once per account. */
  entryRef: (accountId: string, ref: string): ItemKey => ({ pk: ledgerPk(accountId), sk: `${LEDGER_PREFIX.ref}${ref}` }),
  /** Holds an entry id, so that ids stay unique across accounts (as a primary key). */
  entryId: (entryId: string): ItemKey => ({ pk: `LEDGERENTRY#${entryId}`, sk: "LEDGERENTRY" }),
  /**
   * The credits of one type posted in one UTC month, summed (`creditTotals`): added in each post's
   * transaction, so a statement never reads the usage entries. Its `revision` counts the writes
   * to it (each post, each backfill write: BackfillCreditTotals.ts conditions on it).
   */
  credits: (accountId: string, month: string, type: string): ItemKey => ({
    pk: ledgerPk(accountId),
    sk: `${LEDGER_PREFIX.credits}${month}#${type}`
  }),
  /** The reservation itself, whatever its status. */
  reservation: (ref: string): ItemKey => ({ pk: `RESERVATION#${ref}`, sk: "RESERVATION" }),
  /** A pending reservation in its account's list, oldest first; deleted when it finishes. */
  pending: (accountId: string, createdAt: string, stamp: string, ref: string): ItemKey => ({
    pk: ledgerPk(accountId),
    sk: `${LEDGER_PREFIX.pending}${createdAt}#${stamp}#${ref}`
  }),
  /** A pending reservation in its expiry partition, by expires_at; deleted when it finishes. */
  expiry: (ref: string, expiresAt: string): ItemKey => ({ pk: expiryPk(expiryShard(ref)), sk: `${expiresAt}#${ref}` })
} as const

// ---------------------------------------------------------------------------------------------
// attribute values: written by hand, read with schemas (amounts as decimal strings, never floats)

const AllocationsAttr = Schema.Struct({
  L: Schema.Array(Schema.Struct({ M: Schema.Struct({ machine_id: Schema.optionalKey(StringAttr), amount: BigIntAttr }) }))
})

const BalanceItem = Schema.Struct({
  machine_id: Schema.optionalKey(StringAttr),
  posted: BigIntAttr,
  held: BigIntAttr,
  available: BigIntAttr
})

/** An entry item's attributes (BackfillCreditTotals.ts reads them too). */
export const EntryItem = Schema.Struct({
  id: StringAttr,
  account_id: StringAttr,
  machine_id: Schema.optionalKey(StringAttr),
  amount: BigIntAttr,
  type: literalAttr(["credit_added", "plan_credit_granted", "credit_reversed", "usage"]),
  ref: StringAttr,
  created_at: TimestampAttr
})

const CreditTotalItem = Schema.Struct({
  month: StringAttr,
  type: literalAttr(["credit_added", "plan_credit_granted", "credit_reversed"]),
  amount: BigIntAttr
})

/** The reservation item, and its two index items (copies taken while it is pending). */
const ReservationItem = Schema.Struct({
  ref: StringAttr,
  account_id: StringAttr,
  machine_id: Schema.optionalKey(StringAttr),
  allocations: AllocationsAttr,
  status: literalAttr(["pending", "settled", "voided", "expired"]),
  created_at: TimestampAttr,
  expires_at: TimestampAttr,
  finished_at: Schema.optionalKey(TimestampAttr),
  charged: Schema.optionalKey(BigIntAttr),
  excess: Schema.optionalKey(BigIntAttr),
  /** While pending: the sort key of its item in the account's pending list. */
  pending_sk: Schema.optionalKey(StringAttr),
  budgets: Schema.optionalKey(BudgetsAttr),
  grants: Schema.optionalKey(GrantsAttr)
})

/** A reservation as read, with what finishing it needs to find its index items. */
interface StoredReservation {
  readonly reservation: Reservation
  readonly pendingSk: string | undefined
}

const toReservation = (item: typeof ReservationItem.Type): StoredReservation => ({
  reservation: {
    ref: item.ref,
    account_id: item.account_id,
    machine_id: item.machine_id ?? null,
    allocations: item.allocations.L.map(({ M }) => ({ machine_id: M.machine_id ?? null, amount: M.amount })),
    status: item.status,
    created_at: item.created_at,
    expires_at: item.expires_at,
    finished_at: item.finished_at ?? null,
    charged: item.charged ?? null,
    excess: item.excess ?? null,
    ...budgetsOf(item.budgets),
    ...grantsOf(item.grants)
  },
  pendingSk: item.pending_sk
})

export const toEntry = (item: typeof EntryItem.Type): LedgerEntry => ({
  id: item.id,
  account_id: item.account_id,
  machine_id: item.machine_id ?? null,
  amount: item.amount,
  type: item.type,
  ref: item.ref,
  created_at: item.created_at
})

const entryAttributes = (entry: LedgerEntry): Item => ({
  id: str(entry.id),
  account_id: str(entry.account_id),
  ...optionalStr("machine_id", entry.machine_id),
  amount: num(entry.amount),
  type: str(entry.type),
  ref: str(entry.ref),
  created_at: str(entry.created_at)
})

/** A pending reservation's attributes (the reservation item and its index items share them). */
const pendingAttributes = (reservation: NewReservation, pendingSk: string): Item => ({
  ref: str(reservation.ref),
  account_id: str(reservation.account_id),
  ...optionalStr("machine_id", reservation.machine_id),
  allocations: {
    L: reservation.allocations.map((a) => ({ M: { ...optionalStr("machine_id", a.machine_id), amount: num(a.amount) } }))
  },
  status: str("pending"),
  created_at: str(reservation.created_at),
  expires_at: str(reservation.expires_at),
  pending_sk: str(pendingSk),
  ...budgetsAttribute(reservation.budgets),
  // Without their sizes: only the holds are kept.
  ...grantsAttribute(reservation.grants?.map(({ amount, grant, period }) => ({ grant, period, amount })))
})

// ---------------------------------------------------------------------------------------------
// the store

export const LedgerStoreDynamo: Layer.Layer<LedgerStore, never, DynamoConfig> = Layer.effect(
  LedgerStore,
  Effect.gen(function*() {
    const { client, tableName } = yield* DynamoConfig
    const table = makeItemTable(client, tableName, "LedgerStore")
    const { createItem, deleteItem, getItem, queryItems, transact } = table
    const budgetItems = makeBudgets(tableName, table)
    const grantItems = makeGrants(tableName, table)
    const decodeBalance = decode(BalanceItem)
    const decodeEntry = decode(EntryItem)
    const decodeCreditTotal = decode(CreditTotalItem)
    const decodeReservation = decode(ReservationItem)

    const die = (operation: string, problem: string) => Effect.die(new Error(`LedgerStore.${operation}: ${problem}`))

    /** Orders the entries (and pending reservations) of one created_at by insertion. */
    const writeStamp = makeWriteStamp()

    // --- items of a transaction


    /** Adds deltas to a scope's posted and held (available follows), creating the scope at zero. */
    const addToBalance = (
      accountId: string,
      machineId: string | null,
      delta: { readonly posted: bigint; readonly held: bigint }
    ): TransactWriteItem => ({
      Update: {
        TableName: tableName,
        Key: keyOf(LedgerKeys.balance(accountId, machineId)),
        UpdateExpression: `SET #account = :account${machineId === null ? "" : ", #machine = :machine"} ` +
          "ADD #posted :posted, #held :held, #available :available",
        ExpressionAttributeNames: {
          "#account": "account_id",
          ...(machineId === null ? {} : { "#machine": "machine_id" }),
          "#posted": "posted",
          "#held": "held",
          "#available": "available"
        },
        ExpressionAttributeValues: {
          ":account": str(accountId),
          ...(machineId === null ? {} : { ":machine": str(machineId) }),
          ":posted": num(delta.posted),
          ":held": num(delta.held),
          ":available": num(delta.posted - delta.held)
        }
      }
    })

    /** Holds an allocation: only while the scope exists and has available >= the amount. */
    const holdInBalance = (accountId: string, allocation: Allocation): TransactWriteItem => ({
      Update: {
        TableName: tableName,
        Key: keyOf(LedgerKeys.balance(accountId, allocation.machine_id)),
        UpdateExpression: "ADD #held :amount, #available :negative",
        ConditionExpression: "#available >= :amount",
        ExpressionAttributeNames: { "#held": "held", "#available": "available" },
        ExpressionAttributeValues: { ":amount": num(allocation.amount), ":negative": num(-allocation.amount) }
      }
    })

    /** The three items of a new entry: its ref (unique per account), its id (unique), itself. */
    const entryItems = (entry: LedgerEntry, stamp: string, seq: number): ReadonlyArray<TransactWriteItem> => [
      createItem(LedgerKeys.entryRef(entry.account_id, entry.ref), { entry_id: str(entry.id) }),
      createItem(LedgerKeys.entryId(entry.id), { account_id: str(entry.account_id), ref: str(entry.ref) }),
      createItem(LedgerKeys.entry(entry.account_id, entry.created_at, stamp, seq, entry.id), entryAttributes(entry))
    ]

    /**
     * Finishes a pending reservation: the conditional status update (item 0), the deletion of its
     * index items, and per scope the release of its holds plus (settle) the usage posted.
     */
    const finishItems = (
      stored: StoredReservation,
      finish: {
        readonly status: "settled" | "voided" | "expired"
        readonly at: Timestamp
        readonly totals?: { readonly charged: bigint; readonly excess: bigint }
        readonly postings?: ReadonlyArray<Allocation>
        /** Settle: what each grant held is charged (absent: 0). */
        readonly grantCharges?: ReadonlyArray<GrantHold>
      }
    ): Array<TransactWriteItem> => {
      const { reservation, pendingSk } = stored
      const deltas = new Map<string, { machine_id: string | null; posted: bigint; held: bigint }>()
      const at = (machineId: string | null) => {
        const key = scopeKey(machineId)
        let delta = deltas.get(key)
        if (delta === undefined) deltas.set(key, delta = { machine_id: machineId, posted: 0n, held: 0n })
        return delta
      }
      for (const allocation of reservation.allocations) at(allocation.machine_id).held -= allocation.amount
      for (const posting of finish.postings ?? []) at(posting.machine_id).posted += posting.amount
      const totals = finish.totals
      return [
        {
          Update: {
            TableName: tableName,
            Key: keyOf(LedgerKeys.reservation(reservation.ref)),
            UpdateExpression: `SET #status = :status, #finished = :at${
              totals === undefined ? "" : ", #charged = :charged, #excess = :excess"
            } REMOVE #pending_sk`,
            ConditionExpression: "#status = :pending",
            ExpressionAttributeNames: {
              "#status": "status",
              "#finished": "finished_at",
              "#pending_sk": "pending_sk",
              ...(totals === undefined ? {} : { "#charged": "charged", "#excess": "excess" })
            },
            ExpressionAttributeValues: {
              ":status": str(finish.status),
              ":at": str(finish.at),
              ":pending": str("pending"),
              ...(totals === undefined ? {} : { ":charged": num(totals.charged), ":excess": num(totals.excess) })
            }
          }
        },
        ...(pendingSk === undefined ? [] : [deleteItem({ pk: ledgerPk(reservation.account_id), sk: pendingSk })]),
        deleteItem(LedgerKeys.expiry(reservation.ref, reservation.expires_at)),
        ...[...deltas.values()]
          .sort(byScope)
          .map((delta) => addToBalance(reservation.account_id, delta.machine_id, delta)),
        ...budgetItems.releaseItems(
          reservation.account_id,
          reservation.budgets ?? [],
          reservedAmount(reservation.allocations),
          totals?.charged ?? 0n
        ),
        ...grantItems.releaseItems(reservation.account_id, reservation.grants ?? [], finish.grantCharges ?? [])
      ]
    }

    // --- reads (all strongly consistent)


    const accountItems = (
      accountId: string,
      prefix: string,
      options: { readonly newestFirst?: boolean; readonly limit?: number } = {}
    ) =>
      queryItems({
        KeyConditionExpression: "pk = :pk AND begins_with(sk, :prefix)",
        ExpressionAttributeValues: { ":pk": str(ledgerPk(accountId)), ":prefix": str(prefix) },
        ScanIndexForward: options.newestFirst !== true
      }, options.limit)

    const readReservation = (ref: string) =>
      Effect.flatMap(
        getItem(LedgerKeys.reservation(ref)),
        (item) => item === undefined ? Effect.undefined : Effect.map(decodeReservation(item), toReservation)
      )

    // --- the port

    const post = Effect.fn("LedgerStore.post")(function*(entry: LedgerEntry) {
      const problem = creditProblem(entry)
      if (problem !== undefined) return yield* die("post", problem)
      const stamp = yield* writeStamp
      const month = entry.created_at.slice(0, 7)
      const result = yield* transact("post", [
        ...entryItems(entry, stamp, 0),
        addToBalance(entry.account_id, entry.machine_id, { posted: entry.amount, held: 0n }),
        // Last, so that the indexes of the conditional items above stay as they were.
        {
          Update: {
            TableName: tableName,
            Key: keyOf(LedgerKeys.credits(entry.account_id, month, entry.type)),
            // `revision` counts the item's writes, so that the backfill (BackfillCreditTotals.ts)
            // can tell that a post landed between its reads and its write.
            UpdateExpression: "SET #month = :month, #type = :type ADD #amount :amount, #revision :one",
            ExpressionAttributeNames: { "#month": "month", "#type": "type", "#amount": "amount", "#revision": "revision" },
            ExpressionAttributeValues: {
              ":month": str(month),
              ":type": str(entry.type),
              ":amount": num(entry.amount),
              ":one": num(1)
            }
          }
        }
      ])
      if (result.committed) return "posted" as const
      if (result.failed.includes(0)) return "duplicate" as const
      if (result.failed.includes(1)) return yield* die("post", `duplicate entry id ${entry.id}`)
      return yield* die("post", `entry ${entry.id} exists`)
    })

    const balances = Effect.fn("LedgerStore.balances")(function*(accountId: string) {
      const items = yield* accountItems(accountId, LEDGER_PREFIX.balance)
      const scopes: Array<ScopeBalance> = []
      for (const item of items) {
        const balance = yield* decodeBalance(item)
        if (balance.available !== balance.posted - balance.held) {
          return yield* die("balances", `scope ${balance.machine_id ?? "account-wide"}: available is not posted - held`)
        }
        scopes.push({ machine_id: balance.machine_id ?? null, posted: balance.posted, held: balance.held })
      }
      // Sort keys order scopes by UTF-8 bytes; the port orders them as JS strings.
      return scopes.sort(byScope)
    })

    const entries = Effect.fn("LedgerStore.entries")(function*(accountId: string, limit?: number) {
      if (limit !== undefined && limit <= 0) return []
      const items = yield* accountItems(accountId, LEDGER_PREFIX.entry, {
        newestFirst: true,
        ...(limit === undefined ? {} : { limit })
      })
      const found: Array<LedgerEntry> = []
      for (const item of items) found.push(toEntry(yield* decodeEntry(item)))
      return found
    })

    const creditTotals = Effect.fn("LedgerStore.creditTotals")(function*(accountId: string) {
      const totals: Array<CreditTotal> = []
      for (const item of yield* accountItems(accountId, LEDGER_PREFIX.credits)) {
        const total = yield* decodeCreditTotal(item)
        if (total.amount !== 0n) totals.push(total)
      }
      return totals.sort(byCreditTotal)
    })

    const reserve = Effect.fn("LedgerStore.reserve")(function*(reservation: NewReservation) {
      const problem = reservationProblem(reservation)
      if (problem !== undefined) return yield* die("reserve", problem)
      const stamp = yield* writeStamp
      const pendingKey = LedgerKeys.pending(reservation.account_id, reservation.created_at, stamp, reservation.ref)
      const attributes = pendingAttributes(reservation, pendingKey.sk)
      const claims = reservation.budgets ?? []
      // The budgets count what the credits pay: the allocations, not the grants.
      const amount = reservedAmount(reservation.allocations)
      const base = 3 + reservation.allocations.length
      // From `grantBase` on, one item per grant hold.
      const grantBase = base + 2 * claims.length
      const inClaims = (i: number) => i >= base && i < grantBase
      const grantHolds = grantItems.holdItems(reservation.account_id, reservation.grants ?? [])
      for (let attempt = 1;; attempt++) {
        const limits = claims.length === 0 ? new Map<string, bigint>() : yield* budgetItems.limits(reservation.account_id)
        const result = yield* transact("reserve", [
          createItem(LedgerKeys.reservation(reservation.ref), attributes),
          createItem(pendingKey, attributes),
          createItem(LedgerKeys.expiry(reservation.ref, reservation.expires_at), attributes),
          ...reservation.allocations.map((allocation) => holdInBalance(reservation.account_id, allocation)),
          ...budgetItems.claimItems(reservation.account_id, claims, amount, limits),
          ...grantHolds
        ])
        if (result.committed) return "reserved" as const
        if (result.failed.includes(0)) return "duplicate" as const
        // From `base` on, per claim: the limit check (even), the month's hold (odd).
        if (result.failed.some((i) => inClaims(i) && (i - base) % 2 === 0)) {
          if (attempt < LIMIT_CHANGED_RETRIES) continue // a limit changed since it was read
          return yield* die("reserve", `the limits changed ${attempt} times while ${reservation.ref} was reserved`)
        }
        if (result.failed.some(inClaims)) return "over_budget" as const
        // A scope without the amount, or a grant without room for its hold.
        if (result.failed.every((i) => i >= 3)) return "insufficient" as const
        return yield* die("reserve", `index items of ${reservation.ref} exist`)
      }
    })

    const reservation = (ref: string) =>
      readReservation(ref).pipe(
        Effect.map((stored) => stored?.reservation),
        Effect.withSpan("LedgerStore.reservation")
      )

    const pending = Effect.fn("LedgerStore.pending")(function*(accountId: string) {
      const items = yield* accountItems(accountId, LEDGER_PREFIX.pending)
      const found: Array<Reservation> = []
      for (const item of items) found.push(toReservation(yield* decodeReservation(item)).reservation)
      return found
    })

    const settle = Effect.fn("LedgerStore.settle")(function*(settlement: Settlement) {
      const stored = yield* readReservation(settlement.ref)
      if (stored === undefined || stored.reservation.status !== "pending") return "not_pending" as const
      const problem = settlementProblem(stored.reservation, settlement)
      if (problem !== undefined) return yield* die("settle", problem)
      const stamp = yield* writeStamp
      const result = yield* transact("settle", [
        ...finishItems(stored, {
          status: "settled",
          at: settlement.at,
          totals: { charged: settlement.charged, excess: settlement.excess },
          postings: settlement.entries,
          grantCharges: settlement.grants ?? []
        }),
        ...settlement.entries.flatMap((entry, seq) => entryItems(entry, stamp, seq))
      ])
      if (result.committed) return "settled" as const
      // Item 0 is the reservation: settled, voided or expired since it was read.
      if (result.failed.includes(0)) return "not_pending" as const
      return yield* die("settle", `a usage entry of ${settlement.ref} exists (its ref or id)`)
    })

    /** Voids or expires one pending reservation (as read); false when it is no longer pending. */
    const release = (stored: StoredReservation, status: "voided" | "expired", at: Timestamp) => {
      const operation = status === "voided" ? "void" : "expire"
      return Effect.flatMap(transact(operation, finishItems(stored, { status, at })), (result) =>
        result.committed
          ? Effect.succeed(true)
          : result.failed.includes(0)
          ? Effect.succeed(false)
          : die(operation, `unexpected condition failure finishing ${stored.reservation.ref}`))
    }

    const voidReservation = Effect.fn("LedgerStore.void")(function*(ref: string, at: Timestamp) {
      const stored = yield* readReservation(ref)
      if (stored === undefined || stored.reservation.status !== "pending") return "not_pending" as const
      return (yield* release(stored, "voided", at)) ? "voided" as const : "not_pending" as const
    })

    // Each expiry partition lists pending reservations by `<expires_at>#<ref>`: those due sort
    // below `<now>$` ("$" follows "#"). Each one is then expired by its own conditional
    // transaction, so a settle or void racing with it wins or loses as a whole.
    const expire = Effect.fn("LedgerStore.expire")(function*(now: Timestamp) {
      const shards = Array.from({ length: EXPIRY_SHARDS }, (_, shard) => shard)
      const pages = yield* Effect.forEach(shards, (shard) =>
        queryItems({
          KeyConditionExpression: "pk = :pk AND sk < :bound",
          ExpressionAttributeValues: { ":pk": str(expiryPk(shard)), ":bound": str(`${now}$`) }
        }), { concurrency: "unbounded" })
      const due: Array<StoredReservation> = []
      for (const item of pages.flat()) {
        const stored = toReservation(yield* decodeReservation(item))
        if (stored.reservation.expires_at <= now) due.push(stored)
      }
      const expired = yield* Effect.forEach(due, (stored) => release(stored, "expired", now), { concurrency: 8 })
      return due.flatMap((stored, i) => expired[i] ? [stored.reservation.ref] : [])
    })

    return LedgerStore.of({
      post,
      balances,
      entries,
      creditTotals,
      reserve,
      reservation,
      pending,
      settle,
      void: voidReservation,
      expire,
      setBudgetLimit: budgetItems.setBudgetLimit,
      budgets: budgetItems.budgets,
      grants: grantItems.grants
    })
  })
)
