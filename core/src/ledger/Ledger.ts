/**
 * The credit ledger: the rules of docs/architecture.md "Money", as pure functions, and the `Ledger`
 * use-case service that applies them through the LedgerStore port.
 *
 * - Amounts are bigint micro-credits (Money.ts); floats appear only at the JSON boundary
 *   (`balance`, `activity`), converted once from exact sums.
 * - A balance has scopes: account-wide (machine_id null) or pinned to one machine. Per scope the
 *   store keeps `posted` (the sum of immutable entries) and `held` (pending reservations);
 *   available = posted - held, and that is what the account sees as its credits.
 * - Every change is an immutable entry with a ref unique per account; posting a ref twice changes
 *   nothing ("Duplicate"), whatever the second attempt carries.
 * - Usage is two-phase. `reserve` holds an upper bound of the call's cost, split across the
 *   scopes the call may spend, in spending order; `settle` charges the real cost and releases the
 *   rest, `void` releases everything; each exactly once. A reservation whose call never comes back
 *   expires (`expireDue`) and is released. Pending reservations count against available.
 * - Spending order for a call on machine M: the month's allowance of the call's service, then its
 *   one-time trial (grants, billing/Allowances.ts), then credits pinned to M, then account-wide
 *   credits. Pinned credits are only ever spent by calls on their machine. Grants are not ledger
 *   scopes: what they cover is never a ledger entry (the store keeps per grant and period what was
 *   spent and held); `takeGrants` takes from them first and `allocate` takes the rest from scopes.
 * - Atomicity lives in the store, rules here: the service reads available per scope, computes the
 *   allocations with `allocate`, and asks the store to apply them all or none; when a concurrent
 *   call got there first the store answers "insufficient" and the service re-reads and tries
 *   again, at most RESERVE_ATTEMPTS times, before answering Insufficient. A store with
 *   `reserveInOrder` (Postgres: one round trip instead of two) does the read and the allocation
 *   itself, by the same rules over the grants, then the scopes of `spendingSources`, in order.
 * - Settlement charges the real cost against the reservation's grant holds, then its allocations,
 *   in their order (`settlementCharges`). Only a
 *   machine reporting more usage than was reserved can exceed it: that excess is charged
 *   account-wide, may take the account-wide balance below zero, and is recorded on the
 *   reservation (and returned) so it can be reported.
 * - Free usage is not written: a settlement posts no zero entries.
 */
import { Context, Effect, Layer } from "effect"
import type { ActivityList, CreditBalance } from "./Credits.ts"
import { ledgerError, type LedgerErrorOf } from "./LedgerErrors.ts"
import { type AccountId, generateId } from "../kernel/Ids.ts"
import {
  type Allocation,
  type BudgetClaim,
  type BudgetState,
  type CreditEntryType,
  type GrantClaim,
  type GrantHold,
  type LedgerEntry,
  LedgerStore,
  type OrderedReservation,
  type Reservation,
  type ReservationStatus,
  type ReserveInOrderResult,
  type Settlement
} from "./LedgerStore.ts"
import { firstOverBudget } from "./LedgerStoreRules.ts"
import * as Time from "../kernel/Time.ts"
import {
  type GrantSource,
  type Source,
  allocate,
  auditAccount,
  available,
  grantAvailable,
  settlementCharges,
  spendingOrder,
  takeGrants,
  toActivityEntry,
  toCreditBalance,
  usageEntries
} from "./LedgerRules.ts"

/**
 * Reserves `request.amount` from its scopes in the order given, as `allocate` takes it: the
 * store's one-step `reserveInOrder` where it has one, else read the balances, allocate and write
 * the reservation (which refuses when a concurrent call took the credits meanwhile), up to
 * RESERVE_ATTEMPTS times. Budgets are checked before the balance, by the store and atomically;
 * on a refusal this path reads the budgets only to say which one (`over_budget`), as they are then.
 */
export const reserveOrdered = (store: LedgerStore["Service"]) => {
  /**
   * The first claim that `amount` (what credits pay: the grants' part counts in no budget) would
   * take over its limit as the budgets are now (undefined: none, or no claims).
   */
  const overBudgetNow = Effect.fnUntraced(function*(request: OrderedReservation, amount: bigint) {
    const claims = request.budgets ?? []
    if (claims.length === 0) return undefined
    const states = new Map<string, BudgetState>()
    for (const month of new Set(claims.map((c) => c.month))) {
      for (const state of yield* store.budgets(request.account_id, month)) states.set(`${month}/${state.budget}`, state)
    }
    const stateOf = (claim: BudgetClaim) =>
      states.get(`${claim.month}/${claim.budget}`) ?? { limit: null, spent: 0n, held: 0n }
    return firstOverBudget(claims, stateOf, amount)
  })
  // Made once per store, not per reservation (docs/gateway.md "Code on the call path").
  const reserving = Effect.fnUntraced(function*(request: OrderedReservation) {
    const sourcesNow = Effect.map(store.balances(request.account_id), (balances): ReadonlyArray<Source> =>
      request.scopes.map((scope) => {
        const balance = balances.find((b) => b.machine_id === scope)
        return { machine_id: scope, available: balance === undefined ? 0n : available(balance) }
      }))
    const claims = request.budgets ?? []
    const grantClaims = request.grants ?? []
    /** Each grant claimed, with what it has left now. */
    const grantsNow: Effect.Effect<ReadonlyArray<GrantSource & { readonly size: bigint }>> = grantClaims.length === 0
      ? Effect.succeed([])
      : Effect.map(store.grants(request.account_id), (states) =>
        grantClaims.map((claim) => ({
          grant: claim.grant,
          period: claim.period,
          size: claim.size,
          available: grantAvailable(claim, states.find((g) => g.grant === claim.grant && g.period === claim.period))
        })))
    for (let attempt = 1;; attempt++) {
      const grants = yield* grantsNow
      const { holds, rest } = takeGrants(grants, request.amount)
      const allocation = allocate(yield* sourcesNow, rest)
      if (allocation._tag === "Insufficient") {
        const left = grants.reduce((sum, g) => sum + g.available, 0n)
        return (yield* overBudgetNow(request, rest)) ?? { _tag: "insufficient", available: allocation.available + left } as const
      }
      const { scopes: _, amount: __, grants: ___, ...reservation } = request
      const sized = holds.map((h) => ({ ...h, size: grants.find((g) => g.grant === h.grant && g.period === h.period)!.size }))
      const result = yield* store.reserve({
        ...reservation,
        allocations: allocation.allocations,
        ...(sized.length === 0 ? {} : { grants: sized })
      })
      if (result === "reserved") {
        return { _tag: "reserved", allocations: allocation.allocations, ...(holds.length === 0 ? {} : { grants: holds }) } as const
      }
      if (result === "duplicate") return { _tag: "duplicate" } as const
      if (result === "over_budget") {
        const over = yield* overBudgetNow(request, rest)
        if (over !== undefined) return over
        // Released since (a settle, void or expiry, or a limit raised): try again; the last try
        // answers the first claim as it is now.
        if (attempt >= RESERVE_ATTEMPTS) {
          const claim = claims[0]!
          const state = (yield* store.budgets(request.account_id, claim.month)).find((b) => b.budget === claim.budget)
          return {
            _tag: "over_budget",
            budget: claim.budget,
            limit: state?.limit ?? claim.default_limit ?? 0n,
            used: (state?.spent ?? 0n) + (state?.held ?? 0n)
          } as const
        }
        continue
      }
      // A concurrent call took credits (or a grant) between our read and our write.
      if (attempt >= RESERVE_ATTEMPTS) {
        const total = (yield* sourcesNow).reduce((sum, s) => s.available > 0n ? sum + s.available : sum, 0n)
        const left = (yield* grantsNow).reduce((sum, g) => sum + g.available, 0n)
        return { _tag: "insufficient", available: total + left } as const
      }
    }
  })
  return (request: OrderedReservation): Effect.Effect<ReserveInOrderResult> =>
    store.reserveInOrder !== undefined ? store.reserveInOrder(request) : reserving(request)
}

/** What settling a reservation to `actual` writes: its charges as usage entries (`Settlement`). */
export const settlementOf = Effect.fnUntraced(function*(ref: string, actual: bigint, reserved: ReservedHint) {
  const { grants, charges, excess } = settlementCharges(reserved.grants ?? [], reserved.allocations, actual)
  const at = yield* Time.now
  const entries = yield* usageEntries(reserved.account_id, ref, charges, at)
  const charged = charges.reduce((sum, c) => sum + c.amount, 0n)
  return { ref, at, charged, excess, entries, ...(grants.length === 0 ? {} : { grants }) } satisfies Settlement
})

export const ACTIVITY_DEFAULT_LIMIT = 50
export const ACTIVITY_MAX_LIMIT = 500
/** How many times `reserve` re-reads and tries again when concurrent calls took the credits. */
export const RESERVE_ATTEMPTS = 5

// ---------------------------------------------------------------------------------------------
// the use-case service

export interface CreditInput {
  /** Unique per account: the order id, ticket code or plan grant that adds these credits. */
  readonly ref: string
  /** null: usable anywhere; else pinned to that machine. */
  readonly machine_id: string | null
  /** Micro-credits, positive. */
  readonly amount: bigint
  readonly type: Exclude<CreditEntryType, "credit_reversed">
}

/** Credits taken back (a refund or a dispute of the payment that bought them). */
export interface ReversalInput {
  /** Unique per account: the processor's refund or dispute. */
  readonly ref: string
  /** The scope the credits were bought in: it may go below zero when they were spent. */
  readonly machine_id: string | null
  /** Micro-credits taken back, positive (posted negative). */
  readonly amount: bigint
}

export type CreditResult =
  | { readonly _tag: "Posted"; readonly entry: LedgerEntry }
  | { readonly _tag: "Duplicate" }

export type ReserveResult =
  | {
    readonly _tag: "Reserved"
    readonly ref: string
    readonly allocations: ReadonlyArray<Allocation>
    /** What it holds of grants (empty: none). */
    readonly grants: ReadonlyArray<GrantHold>
  }
  /** What the call's sources have available in total (callers answer 402 insufficient_credit). */
  | { readonly _tag: "Insufficient"; readonly available: bigint }
  /** A claimed budget's limit would be passed (LedgerStore's over_budget): nothing is held. */
  | { readonly _tag: "OverBudget"; readonly budget: string; readonly limit: bigint; readonly used: bigint }

/** A settle or void that did nothing: the reservation is unknown, or finished earlier. */
export type NotPending =
  | { readonly _tag: "Unknown" }
  | { readonly _tag: "NotPending"; readonly status: Exclude<ReservationStatus, "pending"> }

export type SettleResult =
  | {
    readonly _tag: "Settled"
    /** The credits charged (the actual cost less what grants covered), of which `excess` went above the reservation. */
    readonly charged: bigint
    readonly excess: bigint
    readonly entries: ReadonlyArray<LedgerEntry>
    /** What grants covered (empty: nothing). */
    readonly grants: ReadonlyArray<GrantHold>
  }
  | NotPending

export type VoidResult = { readonly _tag: "Voided" } | NotPending

/** What a caller of `reserve` knows of its reservation: enough to settle it without reading it. */
export interface ReservedHint {
  readonly account_id: AccountId
  readonly allocations: ReadonlyArray<Allocation>
  readonly grants?: ReadonlyArray<GrantHold> | undefined
}

export class Ledger extends Context.Service<Ledger, {
  /** Adds credits once per ref (a replay is Duplicate and changes nothing). Amount must be > 0. */
  readonly credit: (accountId: AccountId, input: CreditInput) => Effect.Effect<CreditResult>
  /**
   * Takes credits back once per ref (a replay is Duplicate and changes nothing): a negative
   * `credit_reversed` entry in the scope the credits were bought in, which may go below zero —
   * then nothing more is spent from it until it is positive again. Amount must be > 0.
   */
  readonly reverse: (accountId: AccountId, input: ReversalInput) => Effect.Effect<CreditResult>
  /**
   * Holds `amount` micro-credits for a call on `machineId` (null: no machine, account-wide only)
   * until settled, voided or expired at `expiresAt`. Choose expiresAt beyond the longest a call
   * can take: a settle after expiry finds the reservation expired and charges nothing.
   * `budgets`: the monthly limits it counts against (billing/Limits.ts budgetClaims), checked in
   * the same store step; OverBudget when one has no room. `grants`: what it takes from first
   * (billing/Allowances.ts grantClaims); the budgets count only what the credits pay.
   */
  readonly reserve: (
    accountId: AccountId,
    machineId: string | null,
    amount: bigint,
    expiresAt: Time.Timestamp,
    budgets?: ReadonlyArray<BudgetClaim>,
    grants?: ReadonlyArray<GrantClaim>
  ) => Effect.Effect<ReserveResult>
  /**
   * Charges the call's real cost (micro-credits, >= 0) and releases the rest; once. `reserved`,
   * when the caller holds it, is the reservation's account and the allocations `reserve` answered
   * for this ref (they never change): settling then needs no read of the reservation first.
   */
  readonly settle: (ref: string, actual: bigint, reserved?: ReservedHint) => Effect.Effect<SettleResult>
  /** Releases the whole reservation; once. */
  readonly void: (ref: string) => Effect.Effect<VoidResult>
  /** Expires every pending reservation whose expires_at has passed (Clock); returns their refs. */
  readonly expireDue: Effect.Effect<ReadonlyArray<string>>
  /** GET /credits. */
  readonly balance: (accountId: AccountId) => Effect.Effect<CreditBalance>
  /** GET /credits/activity: newest first; limit 1 to 500, default 50, else 400 invalid_request. */
  readonly activity: (accountId: AccountId, limit?: number | undefined) => Effect.Effect<ActivityList, LedgerErrorOf<"invalid_limit">>
  /** The conservation check of one account (see auditAccount); empty when consistent. */
  readonly audit: (accountId: AccountId) => Effect.Effect<ReadonlyArray<string>>
}>()("@model-platform/core/Ledger") {
  static readonly layer: Layer.Layer<Ledger, never, LedgerStore> = Layer.effect(
    Ledger,
    Effect.gen(function*() {
      const store = yield* LedgerStore

      const credit = Effect.fn("Ledger.credit")(function*(accountId: AccountId, input: CreditInput) {
        if (input.amount <= 0n) {
          return yield* Effect.die(new RangeError(`Ledger.credit: amount must be positive, got ${input.amount}`))
        }
        const entry: LedgerEntry = {
          id: yield* generateId("led"),
          account_id: accountId,
          machine_id: input.machine_id,
          amount: input.amount,
          type: input.type,
          ref: input.ref,
          created_at: yield* Time.now
        }
        const result = yield* store.post(entry)
        return result === "posted" ? { _tag: "Posted", entry } as const : { _tag: "Duplicate" } as const
      })

      const reverse = Effect.fn("Ledger.reverse")(function*(accountId: AccountId, input: ReversalInput) {
        if (input.amount <= 0n) {
          return yield* Effect.die(new RangeError(`Ledger.reverse: amount must be positive, got ${input.amount}`))
        }
        const entry: LedgerEntry = {
          id: yield* generateId("led"),
          account_id: accountId,
          machine_id: input.machine_id,
          amount: -input.amount,
          type: "credit_reversed",
          ref: input.ref,
          created_at: yield* Time.now
        }
        const result = yield* store.post(entry)
        return result === "posted" ? { _tag: "Posted", entry } as const : { _tag: "Duplicate" } as const
      })

      const reserveWith = reserveOrdered(store)

      const reserve = Effect.fn("Ledger.reserve")(function*(
        accountId: AccountId,
        machineId: string | null,
        amount: bigint,
        expiresAt: Time.Timestamp,
        budgets?: ReadonlyArray<BudgetClaim>,
        grants?: ReadonlyArray<GrantClaim>
      ) {
        if (amount < 0n) return yield* Effect.die(new RangeError(`Ledger.reserve: negative amount ${amount}`))
        const ref = yield* generateId("usage")
        const result = yield* reserveWith({
          ref,
          account_id: accountId,
          machine_id: machineId,
          scopes: spendingOrder(machineId),
          amount,
          created_at: yield* Time.now,
          expires_at: expiresAt,
          ...(budgets === undefined || budgets.length === 0 ? {} : { budgets }),
          ...(grants === undefined || grants.length === 0 ? {} : { grants })
        })
        if (result._tag === "reserved") {
          return { _tag: "Reserved", ref, allocations: result.allocations, grants: result.grants ?? [] } satisfies ReserveResult
        }
        if (result._tag === "insufficient") {
          return { _tag: "Insufficient", available: result.available } satisfies ReserveResult
        }
        if (result._tag === "over_budget") {
          return { _tag: "OverBudget", budget: result.budget, limit: result.limit, used: result.used } satisfies ReserveResult
        }
        return yield* Effect.die(new Error(`Ledger.reserve: generated ref ${ref} already exists`))
      })

      /** Why a settle or void did nothing, from the reservation as it is now. */
      const finished = (ref: string, reservation: Reservation | undefined): Effect.Effect<NotPending> => {
        if (reservation === undefined) return Effect.succeed({ _tag: "Unknown" })
        const status = reservation.status
        return status === "pending"
          ? Effect.die(new Error(`LedgerStore: reservation ${ref} refused as not pending but is still pending`))
          : Effect.succeed({ _tag: "NotPending", status })
      }

      const settle = Effect.fn("Ledger.settle")(function*(ref: string, actual: bigint, reserved?: ReservedHint) {
        if (actual < 0n) return yield* Effect.die(new RangeError(`Ledger.settle: negative actual cost ${actual}`))
        let reservation: ReservedHint | undefined = reserved
        if (reservation === undefined) {
          const found = yield* store.reservation(ref)
          if (found === undefined || found.status !== "pending") return yield* finished(ref, found)
          reservation = found
        }
        const settlement = yield* settlementOf(ref, actual, reservation)
        const result = yield* store.settle(settlement)
        if (result === "settled") {
          return {
            _tag: "Settled",
            charged: settlement.charged,
            excess: settlement.excess,
            entries: settlement.entries,
            grants: settlement.grants ?? []
          } satisfies SettleResult
        }
        // Lost a race with another settle, a void or an expiry.
        return yield* finished(ref, yield* store.reservation(ref))
      })

      const voidReservation = Effect.fn("Ledger.void")(function*(ref: string) {
        const result = yield* store.void(ref, yield* Time.now)
        if (result === "voided") return { _tag: "Voided" } satisfies VoidResult
        return yield* finished(ref, yield* store.reservation(ref))
      })

      const expireDue = Effect.flatMap(Time.now, store.expire).pipe(Effect.withSpan("Ledger.expireDue"))

      const balance = (accountId: AccountId) => Effect.map(store.balances(accountId), toCreditBalance)

      const activity = Effect.fn("Ledger.activity")(function*(accountId: AccountId, limit?: number) {
        const n = limit ?? ACTIVITY_DEFAULT_LIMIT
        if (!Number.isInteger(n) || n < 1 || n > ACTIVITY_MAX_LIMIT) {
          return yield* ledgerError(
            "invalid_limit",
            `limit must be an integer from 1 to ${ACTIVITY_MAX_LIMIT} (default ${ACTIVITY_DEFAULT_LIMIT}); got ${limit}.`
          )
        }
        const entries = yield* store.entries(accountId, n)
        return { data: entries.map(toActivityEntry) } satisfies ActivityList
      })

      const audit = (accountId: AccountId) =>
        Effect.map(
          Effect.all([store.balances(accountId), store.entries(accountId), store.pending(accountId)]),
          ([balances, entries, pending]) => auditAccount({ balances, entries, pending })
        )

      return Ledger.of({
        credit,
        reverse,
        reserve,
        settle,
        void: voidReservation,
        expireDue,
        balance,
        activity,
        audit
      })
    })
  )
}
