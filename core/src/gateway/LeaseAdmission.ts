/**
 * Admission from credit leases (docs/performance.md "Credit leases"; Leases.ts), where they are
 * on: a priced call draws its estimate and one rpm hit from its key's lease, with no store step
 * before its machine is called. When none lends, the call takes one in the admission batch
 * (Admission.ts `submit`: `LEASE_CALLS` estimates and `hitsAhead` rpm hits), the key's other calls
 * waiting for it; a lease spent fast has its successor taken ahead, in the background. A lease
 * refused for credit or a limit sends the key's calls to be admitted alone for a rate window, this
 * process's leases of the account closed first, so that no lease holds what a call needs.
 */
import { Deferred, Effect, Exit } from "effect"
import type { AgentRecord } from "../agents/Records.ts"
import type { AllowanceSource } from "../billing/Allowances.ts"
import type { Caller } from "../keys/Caller.ts"
import { generateId } from "../kernel/Ids.ts"
import { windowStartOf } from "../kernel/RateLimitStore.ts"
import type { Candidate, Claims } from "./Candidate.ts"
import type { GatewayError } from "./GatewayErrors.ts"
import type { AdmissionResult } from "./GatewayStore.ts"
import { type Drawn, hitsAhead, LEASE_CALLS, LEASE_LIFE_MS } from "./LeaseBook.ts"
import { type Leases, leaseKey } from "./Leases.ts"
import type { Held, Settlement } from "./Settlement.ts"

/** What lease admission takes from the call's admission (Admission.ts). */
export interface LeaseAdmissionDeps {
  readonly config: { readonly rateWindowMs: number; readonly reservationTtlMs: number }
  readonly settlement: Settlement
  /** The rpm of a key whose account bought `bought` credits (its tier). */
  readonly rpmOf: (bought: bigint) => number
  readonly purchasedOf: (accountId: string, now: number) => Effect.Effect<bigint>
  readonly claimsOf: (
    caller: Caller,
    service: string,
    now: number,
    bought: bigint,
    allowance: AllowanceSource,
    agent: AgentRecord | undefined
  ) => Claims
  /** The admission batch's step (Admission.ts `submit`). */
  readonly submit: (
    candidate: Candidate,
    rate: { readonly rpm: number; readonly windowStart: number; readonly hits?: number },
    reservation: { readonly ref: string; readonly amount: bigint; readonly expiresAt: number; readonly claims: Claims }
  ) => Effect.Effect<AdmissionResult>
  /** The key refused by the store (revoked, past its rpm), or undefined. */
  readonly keyRefusal: (
    admission: AdmissionResult,
    caller: Caller,
    rpm: number,
    windowStart: number,
    now: number
  ) => Effect.Effect<never, GatewayError> | undefined
  /** A call of the key was admitted at `now` (speculative dispatch, Admission.ts). */
  readonly admitted: (caller: Caller, now: number) => void
}

/** What a lease is taken for: the key's tier purchases, the claims of its calls and its key in the lease book. */
interface LeaseShape {
  readonly bought: bigint
  readonly claims: Claims
  readonly key: string
}

export const makeLeaseAdmission = (deps: LeaseAdmissionDeps) => {
  /** Per lease key, until when its calls are admitted one by one: a lease was refused for credit or a limit. */
  const leaseRefused = new Map<string, number>()
  /** Per lease key, the lease being taken now: done when the store has answered. */
  const leasesTaken = new Map<string, Deferred.Deferred<void>>()
  /** A call drawn from a lease, held as a reservation of what it drew. */
  const drawnHeld = (drawn: Drawn, machineId: string) =>
    Effect.map(generateId("usage"), (ref): Held => ({
      ref,
      lease: drawn.lease,
      machineId,
      allocations: drawn.drawn.allocations,
      grants: drawn.drawn.grants,
      expiresAt: drawn.expiresAt
    }))
  /**
   * A priced call admitted from its key's lease, taking a new one in the admission batch when none
   * lends (`LEASE_CALLS` estimates and `hitsAhead` rpm hits); undefined when the call is to be
   * admitted alone (a lease was refused lately for credit or a limit: near them, calls reserve
   * their own estimates, and this process's leases of the account are closed, so that no lease
   * holds what a call needs). A lease spent fast has its successor taken ahead, in the background.
   */
  const leasedStep = Effect.fnUntraced(function*(candidate: Candidate, leases: Leases) {
    const { agent, allowance, caller, first, now, service } = candidate
    const bought = yield* deps.purchasedOf(caller.account.id, now)
    const claims = deps.claimsOf(caller, service, now, bought, allowance, agent)
    const key = leaseKey(caller.key.id, first.id, claims)
    const shape = { bought, claims, key }
    // While a lease of this key is being taken, its calls wait for it rather than each take one.
    // A call takes at most two: one drained by others before it drew sends it to the store alone.
    for (let takes = 0;;) {
      const drawn = leases.draw(key, candidate.bound!, now)
      if (drawn !== undefined) {
        deps.admitted(caller, now)
        if (drawn.refill && !leasesTaken.has(key)) {
          // Refused or failed, the successor is not needed now: the lease lends on, and a call
          // finding it dry takes one itself.
          yield* deps.settlement.fork(Effect.ignore(takeLease(candidate, leases, shape)))
        }
        return yield* drawnHeld(drawn, first.id)
      }
      // A lease being taken is waited for even when refused: it closes the account's leases first.
      const inFlight = leasesTaken.get(key)
      if (inFlight !== undefined) yield* Deferred.await(inFlight)
      else if ((leaseRefused.get(key) ?? 0) > now || takes++ === 2) return undefined
      else yield* takeLease(candidate, leases, shape)
    }
  })

  /**
   * Takes a lease for `key` in the admission batch and hands it to the leases, its ref journaled
   * before it is asked for and closed (or voided) when none is granted. The key's calls finding no
   * lease wait for it meanwhile.
   */
  const takeLease = (candidate: Candidate, leases: Leases, shape: LeaseShape) => {
    // Registered at once, before any fiber runs: a call finding the lease dry meanwhile waits for
    // this one (a successor forked in the background too) rather than take another.
    const taken = Deferred.makeUnsafe<void>()
    leasesTaken.set(shape.key, taken)
    return leaseTaken(candidate, leases, shape, taken)
  }
  const leaseTaken = Effect.fnUntraced(function*(candidate: Candidate, leases: Leases, shape: LeaseShape, taken: Deferred.Deferred<void>) {
    const ref = yield* generateId("usage")
    let granted = false
    yield* leaseStep(candidate, leases, shape, ref).pipe(
      Effect.tap((answer) => Effect.sync(() => void (granted = answer))),
      Effect.onExit((exit) =>
        Effect.andThen(
          Effect.sync(() => {
            leasesTaken.delete(shape.key)
            Deferred.doneUnsafe(taken, Exit.void)
          }),
          granted ? Effect.void : deps.settlement.abandon(ref, exit)
        )
      )
    )
  })
  /** A lease's store step and what its answer means: whether it was granted (and handed to the leases). */
  const leaseStep = Effect.fnUntraced(function*(candidate: Candidate, leases: Leases, { bought, claims, key }: LeaseShape, ref: string) {
    const { caller, now } = candidate
    const rpm = deps.rpmOf(bought)
    const windowStart = windowStartOf(now, deps.config.rateWindowMs)
    const hits = hitsAhead(rpm)
    const expiresAt = now + deps.config.reservationTtlMs + LEASE_LIFE_MS
    // Before the store step: a notice of the account from here on voids the lease (Leases.open).
    const stamp = leases.stamp()
    const admission = yield* deps.submit(candidate, { rpm, windowStart, hits }, {
      ref,
      amount: candidate.bound! * LEASE_CALLS,
      expiresAt,
      claims
    })
    const refusedKey = deps.keyRefusal(admission, caller, rpm, windowStart, now)
    if (refusedKey !== undefined) return yield* refusedKey
    if (admission._tag !== "Admitted") return yield* Effect.die(new Error("Gateway: an admission neither refused nor admitted"))
    const reserved = admission.reserved
    if (reserved?._tag === "duplicate") return yield* Effect.die(new Error(`Gateway: generated lease ref ${ref} already exists`))
    if (reserved?._tag !== "reserved") {
      if (leaseRefused.size >= 10_000) leaseRefused.clear() // bounded: forgetting costs one refused lease
      leaseRefused.set(key, now + deps.config.rateWindowMs)
      // Near a limit: this process's leases of the account give back what they hold and lend no
      // more, so that the call, admitted alone next, is not refused for what they keep.
      yield* leases.closeAccount(caller.account.id)
      return false
    }
    // Opened, or voided by the leases (after shutdown, or a notice since the stamp): either way
    // the lease is theirs now; a call finding none lending takes another.
    yield* leases.open({
      ref,
      accountId: caller.account.id,
      key,
      window: windowStart,
      windowEnd: windowStart + deps.config.rateWindowMs,
      closesAt: now + LEASE_LIFE_MS,
      expiresAt,
      left: { allocations: reserved.allocations, grants: reserved.grants ?? [] },
      // The hits within the limit (the first one is, or the store would have refused).
      hitsLeft: Math.min(hits, rpm - (admission.count - hits))
    }, stamp)
    return true
  })
  return leasedStep
}
