/**
 * fast-check arbitraries for the money code: sequences of ledger operations (credits of random
 * amounts and scopes, reserves, settles below and above the reservation, voids, expiries, and
 * replays of refs already used) and concurrent call scenarios for interleaving tests.
 *
 * Pools are small on purpose: few machines and few order refs, so scopes collide, refs repeat
 * (a repeated credit ref is a replay of a payment completion) and balances run out.
 */
import fc from "fast-check"
import type { CreditEntryType } from "@model-platform/core/ledger"

export const MICRO = 1_000_000n

/** The machines of the generated scenarios. */
export const MACHINES = ["m_a", "m_b", "m_c"] as const

/** A scope: account-wide (null) or one of MACHINES; account-wide about as likely as all machines. */
export const scopeArb: fc.Arbitrary<string | null> = fc.oneof(
  { arbitrary: fc.constant(null), weight: 3 },
  { arbitrary: fc.constantFrom(...MACHINES), weight: 3 }
)

/**
 * A positive micro-credit amount up to `maxCredits`: often whole credits (so balances are used up
 * exactly), sometimes any micro amount, sometimes a single micro-credit.
 */
export const microArb = (maxCredits: number): fc.Arbitrary<bigint> =>
  fc.oneof(
    { arbitrary: fc.bigInt({ min: 1n, max: BigInt(maxCredits) }).map((c) => c * MICRO), weight: 4 },
    { arbitrary: fc.bigInt({ min: 1n, max: BigInt(maxCredits) * MICRO }), weight: 4 },
    { arbitrary: fc.constant(1n), weight: 1 }
  )

/** Micro-credit amounts in the range where credits as JSON numbers are exact (< 10^9 credits). */
export const jsonSafeMicroArb: fc.Arbitrary<bigint> = fc.bigInt({ min: -(10n ** 15n) + 1n, max: 10n ** 15n - 1n })

/** What a settle charges, relative to the reservation it settles. */
export type ActualCost =
  /** permille of the reserved amount (0..1000): at most the reservation. */
  | { readonly kind: "within"; readonly permille: number }
  /** The reserved amount plus `extra`: a machine reporting more usage than reserved. */
  | { readonly kind: "over"; readonly extra: bigint }

export const actualCostArb: fc.Arbitrary<ActualCost> = fc.oneof(
  { arbitrary: fc.integer({ min: 0, max: 1000 }).map((permille) => ({ kind: "within", permille }) as const), weight: 4 },
  { arbitrary: fc.constant({ kind: "within", permille: 1000 } as const), weight: 1 },
  { arbitrary: microArb(5).map((extra) => ({ kind: "over", extra }) as const), weight: 2 }
)

/** The actual cost of a call that reserved `reserved`. */
export const actualCost = (reserved: bigint, cost: ActualCost): bigint =>
  cost.kind === "within" ? (reserved * BigInt(cost.permille)) / 1000n : reserved + cost.extra

export type LedgerOp =
  /** Credits for an order ref from a small pool: a ref seen before is a replay. */
  | {
    readonly _tag: "Credit"
    readonly ref: string
    readonly machine_id: string | null
    readonly amount: bigint
    readonly type: Exclude<CreditEntryType, "credit_reversed">
  }
  /** A call on machine_id (null: on no machine) reserving `amount`, expiring after `ttl` ticks. */
  | { readonly _tag: "Reserve"; readonly machine_id: string | null; readonly amount: bigint; readonly ttl: number }
  /** Settles the reservation at `slot` (modulo the reservations made so far; none: a no-op). */
  | { readonly _tag: "Settle"; readonly slot: number; readonly actual: ActualCost }
  | { readonly _tag: "Void"; readonly slot: number }
  /** Moves the clock `ticks` forward and expires what is due. */
  | { readonly _tag: "Expire"; readonly ticks: number }
  /** Replays a finished or pending reservation's settle and void, or a credit ref, with other data. */
  | { readonly _tag: "Replay"; readonly slot: number; readonly actual: ActualCost; readonly amount: bigint }

/** How long a tick of the generated scenarios is, in milliseconds. */
export const TICK_MS = 60_000

export const creditOpArb: fc.Arbitrary<LedgerOp> = fc.record({
  _tag: fc.constant("Credit"),
  ref: fc.integer({ min: 0, max: 7 }).map((n) => `order_${n}`),
  machine_id: scopeArb,
  amount: microArb(40),
  type: fc.constantFrom<Exclude<CreditEntryType, "credit_reversed">>("credit_added", "plan_credit_granted")
})

export const reserveOpArb: fc.Arbitrary<LedgerOp> = fc.record({
  _tag: fc.constant("Reserve"),
  machine_id: scopeArb,
  amount: fc.oneof({ arbitrary: microArb(30), weight: 9 }, { arbitrary: fc.constant(0n), weight: 1 }),
  ttl: fc.integer({ min: 1, max: 6 })
})

const slotArb = fc.nat({ max: 1_000 })

export const ledgerOpArb: fc.Arbitrary<LedgerOp> = fc.oneof(
  { arbitrary: creditOpArb, weight: 4 },
  { arbitrary: reserveOpArb, weight: 5 },
  { arbitrary: fc.record({ _tag: fc.constant("Settle"), slot: slotArb, actual: actualCostArb }), weight: 4 },
  { arbitrary: fc.record({ _tag: fc.constant("Void"), slot: slotArb }), weight: 1 },
  { arbitrary: fc.record({ _tag: fc.constant("Expire"), ticks: fc.integer({ min: 0, max: 4 }) }), weight: 1 },
  {
    arbitrary: fc.record({ _tag: fc.constant("Replay"), slot: slotArb, actual: actualCostArb, amount: microArb(40) }),
    weight: 2
  }
)

export const ledgerOpsArb = (maxLength = 60): fc.Arbitrary<ReadonlyArray<LedgerOp>> =>
  fc.array(ledgerOpArb, { minLength: 1, maxLength })

/** What a concurrent call does after its reserve succeeds. */
export type CallOutcome =
  | { readonly kind: "settle"; readonly actual: ActualCost }
  | { readonly kind: "void" }
  /** Never comes back: left pending for expiry. */
  | { readonly kind: "abandon" }
  /** Settle and void race for the same reservation. */
  | { readonly kind: "race"; readonly actual: ActualCost }

export const callOutcomeArb: fc.Arbitrary<CallOutcome> = fc.oneof(
  { arbitrary: actualCostArb.map((actual) => ({ kind: "settle", actual }) as const), weight: 5 },
  { arbitrary: fc.constant({ kind: "void" } as const), weight: 1 },
  { arbitrary: fc.constant({ kind: "abandon" } as const), weight: 1 },
  { arbitrary: actualCostArb.map((actual) => ({ kind: "race", actual }) as const), weight: 1 }
)

export interface ConcurrentScenario {
  /** Credits added before the calls start. */
  readonly funds: ReadonlyArray<{ readonly machine_id: string | null; readonly amount: bigint }>
  /** Calls started together; they interleave at every store operation. */
  readonly calls: ReadonlyArray<{
    readonly machine_id: string | null
    readonly amount: bigint
    readonly outcome: CallOutcome
  }>
}

export const concurrentScenarioArb: fc.Arbitrary<ConcurrentScenario> = fc.record({
  funds: fc.array(fc.record({ machine_id: scopeArb, amount: microArb(20) }), { maxLength: 4 }),
  calls: fc.array(fc.record({ machine_id: scopeArb, amount: microArb(12), outcome: callOutcomeArb }), {
    minLength: 2,
    maxLength: 10
  })
})
