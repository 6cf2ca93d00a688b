/**
 * The credit ledger: the rules of DESIGN.md "Money", as pure functions, and the `Ledger`
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
import type { ActivityEntry, ActivityList, CreditBalance } from "./Credits.ts"
import * as Errors from "./Errors.ts"
import { generateId } from "./Keys.ts"
import { microToCredits } from "./Money.ts"
import {
  type Allocation,
  type BudgetClaim,
  type BudgetState,
  byScope,
  type CreditEntryType,
  firstOverBudget,
  type GrantClaim,
  type GrantHold,
  type GrantState,
  type LedgerEntry,
  LedgerStore,
  type OrderedReservation,
  type Reservation,
  type ReservationStatus,
  type ReserveInOrderResult,
  type ScopeBalance,
  type Settlement,
  scopeKey
} from "./ports/LedgerStore.ts"
import * as Time from "./Time.ts"

// ---------------------------------------------------------------------------------------------
// pure rules

export const available = (balance: ScopeBalance): bigint => balance.posted - balance.held

/** Something a call may spend from, in spending order, with what it has available now. */
export interface Source {
  readonly machine_id: string | null
  readonly available: bigint
}

/**
 * The sources a call on `machineId` may spend, in spending order: credits pinned to that machine,
 * then account-wide credits. A call on no machine (null) spends account-wide credits only.
 */
export const spendingSources = (
  balances: ReadonlyArray<ScopeBalance>,
  machineId: string | null
): ReadonlyArray<Source> => {
  const find = (scope: string | null) => balances.find((b) => b.machine_id === scope)
  const source = (scope: string | null): Source => {
    const balance = find(scope)
    return { machine_id: scope, available: balance === undefined ? 0n : available(balance) }
  }
  return spendingOrder(machineId).map(source)
}

export type AllocationResult =
  | { readonly _tag: "Allocated"; readonly allocations: ReadonlyArray<Allocation> }
  | { readonly _tag: "Insufficient"; readonly available: bigint }

/**
 * Takes `amount` from the sources in order, each giving what it has (never below zero), and
 * leaves out sources that give nothing. Insufficient (with the total available) when they cannot
 * cover it all. An amount of 0 needs no allocation.
 */
export const allocate = (sources: ReadonlyArray<Source>, amount: bigint): AllocationResult => {
  if (amount < 0n) throw new RangeError(`allocate: negative amount ${amount}`)
  const allocations: Array<Allocation> = []
  let remaining = amount
  let total = 0n
  for (const source of sources) {
    if (source.available <= 0n) continue
    total += source.available
    if (remaining === 0n) continue
    const take = source.available < remaining ? source.available : remaining
    allocations.push({ machine_id: source.machine_id, amount: take })
    remaining -= take
  }
  return remaining === 0n ? { _tag: "Allocated", allocations } : { _tag: "Insufficient", available: total }
}

/** A grant a call may take from, with what it has left now (size - spent - held). */
export interface GrantSource {
  readonly grant: string
  readonly period: string
  readonly available: bigint
}

/** What a grant has left of its size, from its state (none: all of it). Never below zero. */
export const grantAvailable = (claim: GrantClaim, state: GrantState | undefined): bigint => {
  const left = claim.size - (state === undefined ? 0n : state.spent + state.held)
  return left > 0n ? left : 0n
}

/**
 * Takes `amount` from the grants in order, each giving what it has left: the holds (positive
 * only) and what is left of the amount for the ledger's scopes.
 */
export const takeGrants = (
  grants: ReadonlyArray<GrantSource>,
  amount: bigint
): { readonly holds: ReadonlyArray<GrantHold>; readonly rest: bigint } => {
  const holds: Array<GrantHold> = []
  let rest = amount
  for (const g of grants) {
    if (rest === 0n) break
    if (g.available <= 0n) continue
    const take = g.available < rest ? g.available : rest
    holds.push({ grant: g.grant, period: g.period, amount: take })
    rest -= take
  }
  return { holds, rest }
}

export interface Charges {
  /** What each grant held is charged (positive), in the reservation's order; no zero charges. */
  readonly grants: ReadonlyArray<GrantHold>
  /** What each scope is charged (positive), in the reservation's order; no zero charges. */
  readonly charges: ReadonlyArray<Allocation>
  /** The part of the actual cost above the reservation, included in the account-wide charge. */
  readonly excess: bigint
}

/**
 * What settling a reservation with these grant holds and allocations charges for an actual cost:
 * the grant holds in order, then the allocations in order, each up to its amount; anything left
 * is excess, charged account-wide (added to the account-wide charge when there is one, appended
 * otherwise). Grants cover only what they held: an over-report is paid with credits.
 */
export const settlementCharges = (
  grantHolds: ReadonlyArray<GrantHold>,
  allocations: ReadonlyArray<Allocation>,
  actual: bigint
): Charges => {
  if (actual < 0n) throw new RangeError(`settlementCharges: negative actual cost ${actual}`)
  const grants: Array<GrantHold> = []
  const charges: Array<Allocation> = []
  let remaining = actual
  for (const hold of grantHolds) {
    if (remaining === 0n) break
    const take = hold.amount < remaining ? hold.amount : remaining
    if (take > 0n) grants.push({ grant: hold.grant, period: hold.period, amount: take })
    remaining -= take
  }
  for (const allocation of allocations) {
    if (remaining === 0n) break
    const take = allocation.amount < remaining ? allocation.amount : remaining
    if (take > 0n) charges.push({ machine_id: allocation.machine_id, amount: take })
    remaining -= take
  }
  const excess = remaining
  if (excess > 0n) {
    const index = charges.findIndex((c) => c.machine_id === null)
    if (index === -1) charges.push({ machine_id: null, amount: excess })
    else charges[index] = { machine_id: null, amount: charges[index]!.amount + excess }
  }
  return { grants, charges, excess }
}

/**
 * The ref of a settlement's usage entry in one scope: the reservation's ref for the account-wide
 * charge, `<ref>@<machine_id>` for a pinned one (entry refs are unique per account, and a
 * settlement writes at most one entry per scope). Reservation refs contain no "@".
 */
export const usageEntryRef = (ref: string, machineId: string | null): string =>
  machineId === null ? ref : `${ref}@${machineId}`

/** Sums of signed amounts by scope key (scopeKey: "" is account-wide). */
/** The usage entries that settling reservation `ref` with these charges writes: one per charged scope. */
export const usageEntries = Effect.fnUntraced(function*(
  accountId: string,
  ref: string,
  charges: ReadonlyArray<Allocation>,
  createdAt: Time.Timestamp
) {
  const entries: Array<LedgerEntry> = []
  for (const charge of charges) {
    entries.push({
      id: yield* generateId("led"),
      account_id: accountId,
      machine_id: charge.machine_id,
      amount: -charge.amount,
      type: "usage",
      ref: usageEntryRef(ref, charge.machine_id),
      created_at: createdAt
    })
  }
  return entries
})

export const sumByScope = (
  items: ReadonlyArray<{ readonly machine_id: string | null; readonly amount: bigint }>
): ReadonlyMap<string, bigint> => {
  const sums = new Map<string, bigint>()
  for (const item of items) {
    const key = scopeKey(item.machine_id)
    sums.set(key, (sums.get(key) ?? 0n) + item.amount)
  }
  return sums
}

/** Credits added (credit and plan entries) and credits charged (usage, positive) by some entries. */
export const totals = (entries: ReadonlyArray<LedgerEntry>): { readonly added: bigint; readonly charged: bigint } => {
  let added = 0n
  let charged = 0n
  for (const entry of entries) {
    if (entry.type === "usage") charged -= entry.amount
    else added += entry.amount
  }
  return { added, charged }
}

/**
 * Conservation check of one account: every scope's `posted` equals the sum of its entries, its
 * `held` the sum of the pending allocations in it, and held is never negative. Returns what is
 * wrong, in words (empty when the ledger is consistent).
 */
export const auditAccount = (input: {
  readonly balances: ReadonlyArray<ScopeBalance>
  readonly entries: ReadonlyArray<LedgerEntry>
  readonly pending: ReadonlyArray<Reservation>
}): ReadonlyArray<string> => {
  const problems: Array<string> = []
  const posted = sumByScope(input.entries)
  const held = sumByScope(input.pending.flatMap((r) => r.allocations))
  const scopes = new Set([...posted.keys(), ...held.keys(), ...input.balances.map((b) => scopeKey(b.machine_id))])
  const name = (key: string) => key === "" ? "account-wide" : `machine ${key}`
  for (const key of scopes) {
    const balance = input.balances.find((b) => scopeKey(b.machine_id) === key)
    const wantPosted = posted.get(key) ?? 0n
    const wantHeld = held.get(key) ?? 0n
    const gotPosted = balance?.posted ?? 0n
    const gotHeld = balance?.held ?? 0n
    if (gotPosted !== wantPosted) problems.push(`${name(key)}: posted ${gotPosted} but its entries sum to ${wantPosted}`)
    if (gotHeld !== wantHeld) problems.push(`${name(key)}: held ${gotHeld} but its pending allocations sum to ${wantHeld}`)
    if (gotHeld < 0n) problems.push(`${name(key)}: held is negative (${gotHeld})`)
  }
  return problems
}

/** A ledger entry as GET /credits/activity shows it: credits signed, at = created_at. */
export const toActivityEntry = (entry: LedgerEntry): ActivityEntry => ({
  id: entry.id,
  type: entry.type,
  credits: microToCredits(entry.amount),
  machine_id: entry.machine_id,
  at: entry.created_at
})

/** GET /credits from the store's scopes: credits = available; account-wide always listed first. */
export const toCreditBalance = (balances: ReadonlyArray<ScopeBalance>): CreditBalance => {
  const scopes = balances.some((b) => b.machine_id === null)
    ? [...balances].sort(byScope)
    : [{ machine_id: null, posted: 0n, held: 0n }, ...[...balances].sort(byScope)]
  let total = 0n
  for (const scope of scopes) total += available(scope)
  return {
    total_credits: microToCredits(total),
    by_scope: scopes.map((scope) => ({ machine_id: scope.machine_id, credits: microToCredits(available(scope)) }))
  }
}

/**
 * The scopes a call on `machineId` spends, in spending order (`spendingSources` without balances).
 * This is the seam for the plan allowance and the trial: they will be prepended here.
 */
export const spendingOrder = (machineId: string | null): ReadonlyArray<string | null> =>
  machineId === null ? [null] : [machineId, null]

/**
 * Reserves `request.amount` from its scopes in the order given, as `allocate` takes it: the
 * store's one-step `reserveInOrder` where it has one, else read the balances, allocate and write
 * the reservation (which refuses when a concurrent call took the credits meanwhile), up to
 * RESERVE_ATTEMPTS times. Budgets are checked before the balance, by the store and atomically;
 * on a refusal this path reads the budgets only to say which one (`over_budget`), as they are then.
 */
export const reserveOrdered = (store: LedgerStore["Service"]) =>
(request: OrderedReservation): Effect.Effect<ReserveInOrderResult> => {
  if (store.reserveInOrder !== undefined) return store.reserveInOrder(request)
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
  /**
   * The first claim that `amount` (what credits pay: the grants' part counts in no budget) would
   * take over its limit as the budgets are now (undefined: none, or no claims).
   */
  const overBudgetNow = (amount: bigint) => Effect.gen(function*() {
    if (claims.length === 0) return undefined
    const states = new Map<string, BudgetState>()
    for (const month of new Set(claims.map((c) => c.month))) {
      for (const state of yield* store.budgets(request.account_id, month)) states.set(`${month}/${state.budget}`, state)
    }
    const stateOf = (claim: BudgetClaim) =>
      states.get(`${claim.month}/${claim.budget}`) ?? { limit: null, spent: 0n, held: 0n }
    return firstOverBudget(claims, stateOf, amount)
  })
  return Effect.gen(function*() {
    for (let attempt = 1;; attempt++) {
      const grants = yield* grantsNow
      const { holds, rest } = takeGrants(grants, request.amount)
      const allocation = allocate(yield* sourcesNow, rest)
      if (allocation._tag === "Insufficient") {
        const left = grants.reduce((sum, g) => sum + g.available, 0n)
        return (yield* overBudgetNow(rest)) ?? { _tag: "insufficient", available: allocation.available + left } as const
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
        const over = yield* overBudgetNow(rest)
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
}

/** What settling a reservation to `actual` writes: its charges as usage entries (`Settlement`). */
export const settlementOf = (ref: string, actual: bigint, reserved: ReservedHint) =>
  Effect.gen(function*() {
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
  readonly type: CreditEntryType
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
  readonly account_id: string
  readonly allocations: ReadonlyArray<Allocation>
  readonly grants?: ReadonlyArray<GrantHold> | undefined
}

export class Ledger extends Context.Service<Ledger, {
  /** Adds credits once per ref (a replay is Duplicate and changes nothing). Amount must be > 0. */
  readonly credit: (accountId: string, input: CreditInput) => Effect.Effect<CreditResult>
  /**
   * Holds `amount` micro-credits for a call on `machineId` (null: no machine, account-wide only)
   * until settled, voided or expired at `expiresAt`. Choose expiresAt beyond the longest a call
   * can take: a settle after expiry finds the reservation expired and charges nothing.
   * `budgets`: the monthly limits it counts against (billing/Limits.ts budgetClaims), checked in
   * the same store step; OverBudget when one has no room. `grants`: what it takes from first
   * (billing/Allowances.ts grantClaims); the budgets count only what the credits pay.
   */
  readonly reserve: (
    accountId: string,
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
  readonly balance: (accountId: string) => Effect.Effect<CreditBalance>
  /** GET /credits/activity: newest first; limit 1 to 500, default 50, else 400 invalid_request. */
  readonly activity: (accountId: string, limit?: number | undefined) => Effect.Effect<ActivityList, Errors.BadRequest>
  /** The conservation check of one account (see auditAccount); empty when consistent. */
  readonly audit: (accountId: string) => Effect.Effect<ReadonlyArray<string>>
}>()("@model-platform/core/Ledger") {
  static readonly layer: Layer.Layer<Ledger, never, LedgerStore> = Layer.effect(
    Ledger,
    Effect.gen(function*() {
      const store = yield* LedgerStore

      const credit = Effect.fn("Ledger.credit")(function*(accountId: string, input: CreditInput) {
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

      const reserveWith = reserveOrdered(store)

      const reserve = Effect.fn("Ledger.reserve")(function*(
        accountId: string,
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

      const balance = (accountId: string) => Effect.map(store.balances(accountId), toCreditBalance)

      const activity = Effect.fn("Ledger.activity")(function*(accountId: string, limit?: number) {
        const n = limit ?? ACTIVITY_DEFAULT_LIMIT
        if (!Number.isInteger(n) || n < 1 || n > ACTIVITY_MAX_LIMIT) {
          return yield* Errors.badRequest(
            "invalid_request",
            `limit must be an integer from 1 to ${ACTIVITY_MAX_LIMIT} (default ${ACTIVITY_DEFAULT_LIMIT}); got ${limit}.`
          )
        }
        const entries = yield* store.entries(accountId, n)
        return { data: entries.map(toActivityEntry) } satisfies ActivityList
      })

      const audit = (accountId: string) =>
        Effect.map(
          Effect.all([store.balances(accountId), store.entries(accountId), store.pending(accountId)]),
          ([balances, entries, pending]) => auditAccount({ balances, entries, pending })
        )

      return Ledger.of({
        credit,
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
