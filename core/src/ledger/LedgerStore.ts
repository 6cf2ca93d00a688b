/**
 * Port: where the credit ledger is kept (docs/architecture.md "Money"). The rules (spending order, what a
 * settlement charges, retries) live in core/src/ledger/ (LedgerRules.ts, Ledger.ts); a store only
 * applies what it is given, but each operation below is ATOMIC — all of it happens or none of it, also between processes —
 * because that is what keeps concurrent calls from overspending.
 *
 * Model. Amounts are bigint micro-credits. Per (account, scope) — scope = account-wide
 * (machine_id null) or pinned to one machine — the store keeps:
 *   posted = the sum of the scope's immutable entries, and
 *   held   = the sum of the scope's allocations in PENDING reservations;
 *   available = posted - held.
 * `posted` is a cached sum: it must always equal the sum of the scope's entries, and `held` the
 * sum of the pending allocations (the property tests and `Ledger.audit` check both).
 *
 * Entries are immutable and their `ref` is unique per account: posting a ref that exists changes
 * nothing. Credit entries are positive, reversals of credits negative; usage entries are negative
 * and come only from `settle`.
 *
 * A reservation moves pending -> settled | voided | expired exactly once (a conditional update);
 * every later attempt answers "not_pending" and changes nothing.
 *
 * The input rules every store enforces, and the sums they answer, are ./LedgerStoreRules.ts.
 *
 * Machine ids are non-empty strings (a store may use "" for the account-wide scope internally).
 * Store failures (a broken database, a violated constraint, input that breaks the rules stated
 * here) are defects.
 */
import { Context, type Effect } from "effect"
import type { Timestamp } from "../kernel/Time.ts"
import type { AccountId } from "../kernel/Ids.ts"

/**
 * Entries other than usage: credits added (bought, redeemed) and plan grants, positive; credits
 * taken back by a refund or a dispute of the payment that bought them (`credit_reversed`), negative.
 */
export type CreditEntryType = "credit_added" | "plan_credit_granted" | "credit_reversed"
export type EntryType = CreditEntryType | "usage"

/** One immutable change to one scope's balance. */
export interface LedgerEntry {
  readonly id: string
  readonly account_id: AccountId
  /** The scope changed: null for account-wide credits, else the machine they are pinned to. */
  readonly machine_id: string | null
  /** Signed micro-credits: positive for credits, negative for usage. Never zero. */
  readonly amount: bigint
  readonly type: EntryType
  /** Unique per account: order id, ticket code, plan grant, or usage ref (see Ledger.usageEntryRef). */
  readonly ref: string
  readonly created_at: Timestamp
}

/** Credits of one type added to an account in one UTC month (YYYY-MM), micro-credits. */
export interface CreditTotal {
  readonly month: string
  readonly type: CreditEntryType
  readonly amount: bigint
}

/** An amount taken from (held in, or charged to) one scope. */
export interface Allocation {
  readonly machine_id: string | null
  readonly amount: bigint
}

/** One scope of an account, as the store keeps it. */
export interface ScopeBalance {
  readonly machine_id: string | null
  readonly posted: bigint
  readonly held: bigint
}

export type ReservationStatus = "pending" | "settled" | "voided" | "expired"

/** A pending (or finished) upper bound of a call's cost, held across one or more scopes. */
export interface Reservation {
  /** Unique among all reservations (core generates it); the call's usage ref. */
  readonly ref: string
  readonly account_id: AccountId
  /** The machine the call runs on (null: none); only credits pinned to it may be allocated. */
  readonly machine_id: string | null
  /** In spending order; positive amounts, at most one per scope. */
  readonly allocations: ReadonlyArray<Allocation>
  readonly status: ReservationStatus
  readonly created_at: Timestamp
  readonly expires_at: Timestamp
  /** When it was settled, voided or expired; null while pending. */
  readonly finished_at: Timestamp | null
  /** Settled only: the call's real cost, and the part of it above the reservation. */
  readonly charged: bigint | null
  readonly excess: bigint | null
  /**
   * The budgets it counts against, in the order claimed (absent when it claims none): what it
   * holds is released from them when it finishes, and a settlement's charge is spent in them.
   */
  readonly budgets?: ReadonlyArray<Pick<BudgetClaim, "budget" | "month">> | undefined
  /**
   * What it holds of grants (the allowance, the trial), in spending order, before its allocations
   * (absent when it holds none): released when it finishes; a settlement's grant charges are
   * spent in them.
   */
  readonly grants?: ReadonlyArray<GrantHold> | undefined
}

export type NewReservation =
  & Pick<Reservation, "ref" | "account_id" | "machine_id" | "allocations" | "created_at" | "expires_at">
  & {
    /** The monthly limits the reservation counts against (none: no limit applies). */
    readonly budgets?: ReadonlyArray<BudgetClaim> | undefined
    /**
     * What to hold of grants, with each grant's size: admitted only when, for each, spent + held +
     * amount <= size (else "insufficient", nothing changed), in the same atomic step as the rest.
     */
    readonly grants?: ReadonlyArray<GrantHold & { readonly size: bigint }> | undefined
  }

/**
 * A grant (docs/billing.md "Allowances and the trial"): credits of one service an account may use
 * without paying, before its credits. "allowance:<service>" has `size` in each UTC month (period
 * YYYY-MM: nothing carries over), "trial:<service>" once (period "once"). Per grant and period the
 * store keeps `spent` (what settlements took) and `held` (what pending reservations hold); a
 * reservation takes min(size - spent - held, what is left of its amount) from each grant in
 * order, then its allocations take the rest. So spent + held never passes the size.
 */
export interface GrantClaim {
  /** "allowance:<service>" or "trial:<service>". */
  readonly grant: string
  /** YYYY-MM for an allowance, "once" for a trial. */
  readonly period: string
  /** Micro-credits the period has in all, >= 0. */
  readonly size: bigint
}

/** An amount held in (or charged to) one grant's period: positive. */
export interface GrantHold {
  readonly grant: string
  readonly period: string
  readonly amount: bigint
}

/** A grant's period as the store keeps it. */
export interface GrantState {
  readonly grant: string
  readonly period: string
  readonly spent: bigint
  readonly held: bigint
}

/**
 * A monthly spending limit a reservation counts against (docs/billing.md "Monthly limits"): the
 * account's, or one key's. Per budget the store keeps its limit (setBudgetLimit; none set: the
 * claim's default_limit applies), and per budget and month what settlements charged (`spent`) and
 * what pending reservations hold (`held`). A reservation is admitted only when, for every claim,
 * spent + held + its amount <= the limit in force — checked and held in the same atomic step as
 * the balance, so concurrent calls can never overshoot a limit. Settling moves the reservation's
 * amount from held to spent as what was charged (the charge may exceed the amount: a machine's
 * over-report, recorded as the settlement's excess); voiding and expiring release it.
 */
export interface BudgetClaim {
  /**
   * "account", "key:<key id>", or an agent's "agent:<agent id>:day" / "agent:<agent id>:total":
   * unique within the account.
   */
  readonly budget: string
  /**
   * The period the reservation and its charge count in: the UTC calendar month of the admission
   * (YYYY-MM); for an agent's day budget its UTC day (YYYY-MM-DD), for its total budget "total".
   */
  readonly month: string
  /** The limit when none is set for the budget (the tier's monthly limit for "account"); null: none. */
  readonly default_limit: bigint | null
}

/** A budget as the store keeps it for one month. */
export interface BudgetState {
  readonly budget: string
  /** The limit set with setBudgetLimit; null: none set (the claim's default applies). */
  readonly limit: bigint | null
  readonly spent: bigint
  readonly held: bigint
}

/** A reservation whose holds the store makes: from `grants`, then from `scopes`, in that order. */
export interface OrderedReservation extends Omit<NewReservation, "allocations" | "grants"> {
  /** Distinct grants (by grant and period), in spending order; taken from before any scope. */
  readonly grants?: ReadonlyArray<GrantClaim> | undefined
  /** Distinct scopes (null: account-wide), in spending order. */
  readonly scopes: ReadonlyArray<string | null>
  /** Micro-credits, >= 0. */
  readonly amount: bigint
}

export type ReserveInOrderResult =
  /** `grants`: what was held of each grant (positive only; absent or empty: none). */
  | {
    readonly _tag: "reserved"
    readonly allocations: ReadonlyArray<Allocation>
    readonly grants?: ReadonlyArray<GrantHold> | undefined
  }
  /** `available`: what the grants have left and the scopes have available, summed. */
  | { readonly _tag: "insufficient"; readonly available: bigint }
  | { readonly _tag: "duplicate" }
  /** A budget's limit would be passed: the first such claim, its limit in force and spent + held. */
  | { readonly _tag: "over_budget"; readonly budget: string; readonly limit: bigint; readonly used: bigint }

/** What settling a reservation writes: the usage entries (one per scope charged) and the totals. */
export interface Settlement {
  readonly ref: string
  readonly at: Timestamp
  /**
   * The credits charged (>= 0): the call's real cost less what its grants covered, and the sum of
   * the entries (negated). Budgets count this.
   */
  readonly charged: bigint
  /**
   * What each grant the reservation holds is charged (positive, at most its hold; absent or
   * empty: none). It moves from the grant's held to its spent; the rest of the hold is released.
   */
  readonly grants?: ReadonlyArray<GrantHold> | undefined
  /** The part of `charged` above the reservation (>= 0), charged account-wide. */
  readonly excess: bigint
  /** Usage entries of the reservation's account: negative, at most one per scope. */
  readonly entries: ReadonlyArray<LedgerEntry>
}

/**
 * One call's share of a lease (docs/performance.md "Credit leases"): a pending reservation made
 * for many calls of one account, key and claim shape. The call drew its estimate from what the
 * lease still holds, split as a reservation's holds are spent (its grants first, then its scopes
 * in order: `drawFrom`), and is then charged by `settlement`, exactly as a reservation holding
 * what it drew would be settled (`settlementOf`).
 */
export interface Draw {
  /** The lease's reservation ref. */
  readonly lease: string
  /** What the call drew of the lease's allocations: positive, at most one per scope of the lease. */
  readonly allocations: ReadonlyArray<Allocation>
  /** What it drew of the lease's grant holds: positive, at most one per grant the lease holds. */
  readonly grants?: ReadonlyArray<GrantHold> | undefined
  /**
   * The call's charge; `ref` is the call's usage ref (unique among reservations and draws), and
   * its grant charges and its entries are within what it drew, as a settlement's are within what
   * its reservation holds.
   */
  readonly settlement: Settlement
}

/**
 * "drawn": the lease was pending, and what the call drew moved from held to spent;
 * "charged": the lease had finished (voided, expired), so the charge was posted with no hold to
 * take it from (an answered call is charged); "duplicate": a reservation or draw with the call's
 * ref exists, and nothing changed.
 */
export type DrawResult = "drawn" | "charged" | "duplicate"

export class LedgerStore extends Context.Service<LedgerStore, {
  /**
   * Atomically: inserts a credit entry (positive amount, a credit type; negative for
   * `credit_reversed`) unless its ref exists in the account, and adds it to its scope's `posted`
   * (creating the scope; a reversal may take it below zero). "duplicate": an entry
   * with that ref exists (whatever its amount, scope or type), and nothing changed. Concurrent
   * posts of one ref: exactly one is "posted".
   */
  readonly post: (entry: LedgerEntry) => Effect.Effect<"posted" | "duplicate">

  /** Every scope the account has, account-wide first, then pinned scopes by machine id. */
  readonly balances: (accountId: AccountId) => Effect.Effect<ReadonlyArray<ScopeBalance>>

  /** The account's entries, newest first (equal created_at: last inserted first); `limit` or all. */
  readonly entries: (accountId: AccountId, limit?: number) => Effect.Effect<ReadonlyArray<LedgerEntry>>

  /**
   * The account's credit entries summed per UTC month of created_at and credit type (statements:
   * docs/billing.md "Statements"), ordered by month then type; only non-zero sums. Never reads
   * the usage entries (one per call: millions), so it costs the number of credits, not of calls.
   * Equals `creditTotalsOf(entries)`.
   */
  readonly creditTotals: (accountId: AccountId) => Effect.Effect<ReadonlyArray<CreditTotal>>

  /**
   * Atomically: checks that every allocation's scope has available >= its amount, then records
   * the reservation as pending and adds each allocation to its scope's `held` — all of it or none.
   * "insufficient": some scope lacked the amount (or does not exist) and nothing changed;
   * "duplicate": a reservation with this ref exists and nothing changed. Concurrent reserves never
   * take a scope's available below zero. Allocations pinned to another machine than the
   * reservation's are a defect (pinned credits are only spent by calls on their machine).
   * Budgets (BudgetClaim) are checked first, in the order given, then the balance:
   * "over_budget" when a claim's limit would be passed, nothing changed.
   */
  readonly reserve: (
    reservation: NewReservation
  ) => Effect.Effect<"reserved" | "insufficient" | "duplicate" | "over_budget">

  /**
   * Optional: `balances`, the allocation and `reserve` as ONE atomic operation, for stores where
   * that saves round trips (a database server). Takes `amount` from the account's scopes in the
   * order given (the spending order), each giving what it has available when that is positive, up
   * to what is left — exactly as Ledger.allocate does over those scopes' balances — and reserves
   * those allocations (none for an amount of 0), all of it or none, as `reserve` does.
   * "reserved" with the allocations, in that order; "insufficient" with the total those scopes
   * have available (their positive available, summed), nothing changed; "duplicate" as `reserve`.
   * Ledger.reserve uses it when present, else reads `balances` and calls `reserve`.
   */
  readonly reserveInOrder?: (request: OrderedReservation) => Effect.Effect<ReserveInOrderResult>

  /**
   * Optional (docs/performance.md "Credit leases"): charges one call that drew from a lease.
   * Atomically, unless a reservation with the call's ref exists ("duplicate": nothing changed):
   * if the lease is pending, takes what the call was charged of what it drew (`chargedOf`) off
   * the lease's allocations and grant holds (and off the scopes', budgets' and grants' `held`;
   * the rest of the draw stays with the lease), then charges the settlement as `settle` does
   * (grant charges and the charge spent, usage entries posted); if the lease has finished,
   * charges the settlement the same way with nothing held. Either way the call is recorded as a
   * settled reservation of its own (its ref, what it drew, the lease's budgets), which makes a
   * second draw of it a "duplicate" (a journal line replayed). The lease stays pending with what
   * is left. An unknown lease, a draw past what the pending lease holds in a scope or grant, or a
   * settlement outside what the call drew is a defect.
   */
  readonly draw?: (draw: Draw) => Effect.Effect<DrawResult>

  readonly reservation: (ref: string) => Effect.Effect<Reservation | undefined>

  /** The account's pending reservations, oldest first. */
  readonly pending: (accountId: AccountId) => Effect.Effect<ReadonlyArray<Reservation>>

  /**
   * Atomically, only if the reservation is pending: marks it settled (finished_at, charged,
   * excess), subtracts its allocations from `held`, inserts the usage entries and adds them to
   * their scopes' `posted` (the account-wide scope may go below zero: that is the excess).
   * "not_pending": unknown, or already settled, voided or expired — nothing changed.
   */
  readonly settle: (settlement: Settlement) => Effect.Effect<"settled" | "not_pending">

  /**
   * Atomically, only if the reservation is pending: marks it voided and subtracts its allocations
   * from `held`. "not_pending": unknown, or already finished — nothing changed.
   */
  readonly void: (ref: string, at: Timestamp) => Effect.Effect<"voided" | "not_pending">

  /**
   * Marks every reservation still pending with expires_at <= now as expired (finished_at = now)
   * and releases its holds; each one atomically and conditionally, as `void` does (a settle or
   * void racing with it wins or loses as a whole). Returns the refs this call expired.
   */
  readonly expire: (now: Timestamp) => Effect.Effect<ReadonlyArray<string>>

  /**
   * Sets (null: removes) a budget's own limit, >= 0. Atomic with the admissions: one admitted
   * after it returns is checked against the new limit. A limit below what is spent already stops
   * the month's later priced calls; it takes nothing back.
   */
  readonly setBudgetLimit: (accountId: AccountId, budget: string, limit: bigint | null) => Effect.Effect<void>

  /**
   * The account's budgets in one month, by budget name: every budget with a limit set or anything
   * (non-zero) spent or held in that month.
   */
  readonly budgets: (accountId: AccountId, month: string) => Effect.Effect<ReadonlyArray<BudgetState>>

  /**
   * The account's grants (docs/billing.md "Allowances and the trial"): every grant and period with
   * anything (non-zero) spent or held, by grant, then period.
   */
  readonly grants: (accountId: AccountId) => Effect.Effect<ReadonlyArray<GrantState>>
}>()("@model-platform/core/ledger/LedgerStore") {}
