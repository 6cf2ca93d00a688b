/**
 * Settlement, the gateway's last stage (docs/gateway.md "Metering", "Metering that survives
 * faults"): a call the machine answered is charged exactly once, whatever happens after the answer.
 *
 * - `hold` keeps a call's reservation as a scoped resource: acquired by admission, released when
 *   the call's scope closes unless metering took it over (or it was released for a fallback).
 * - `complete` builds the call's settlement and usage record (GatewayStore `Metered`), writes it to
 *   the metering journal before the answer is handed over (when a journal is configured), then
 *   writes it to the store: in the background after the answer, or before it (`settleInline`, for
 *   hosts that freeze after a response: Lambda).
 * - Writes are retried with backoff while the store is unavailable (StoreUnavailable), until the
 *   reservation expires; a failure of another kind is tried a few times. Replays are harmless: the
 *   store's commit is idempotent by ref ("Duplicate" record, "not_pending" settlement).
 * - Inline, metering that cannot be written within `inlineRetryMs` fails the call with
 *   StoreUnavailable (answered 503 store_unavailable): the answer is not handed over, so it is not
 *   charged either (its reservation is released, or expires).
 * - `release` voids a reservation whose call will not be charged; while the store is unavailable,
 *   in the background, retried until the reservation would expire anyway.
 * - At start (`recover`), and every 30 s, the journals of processes that are gone are replayed: each completed call
 *   metered (again), each reservation whose call never completed voided at once, not at its expiry.
 *
 * Every write goes through group commit (core/src/kernel/Batcher.ts) with the other calls of its batch.
 * `idle` waits for the background work (tests; the gateway's scope waits up to 10 s at shutdown).
 *
 * Billing is told when the balance or the month's spend changes (billing/Watch.ts, when the
 * shell provides it): after each written batch, the accounts it charged (alerts, automatic
 * top-ups), and at a refusal at a monthly limit (`limitReached`). In the background, or inline
 * before the answer where the host freezes after a response (settleInline).
 */
import { Cause, Clock, Effect, Exit, FiberSet, Option, Random, Scope } from "effect"
import type { Caller } from "../keys/Caller.ts"
import { makeBatcher } from "../kernel/Batcher.ts"
import { grantParts } from "../billing/Allowances.ts"
import { BillingWatch } from "../billing/Watch.ts"
import { generateId } from "../kernel/Ids.ts"
import { Ledger, settlementOf } from "../ledger/Ledger.ts"
import { chargedOf } from "../ledger/Lease.ts"
import { GatewayStore, type Metered, type MeteredResult } from "./GatewayStore.ts"
import type { Allocation, GrantHold } from "../ledger/LedgerStore.ts"
import { MeteringJournal } from "./MeteringJournal.ts"
import { isStoreUnavailableCause, StoreUnavailable } from "../kernel/StoreUnavailable.ts"
import type { UsageRecord } from "../billing/UsageStore.ts"
import * as Time from "../kernel/Time.ts"
import { CurrentActivity, pendingSettlement } from "./Activity.ts"
import { makeLeases } from "./Leases.ts"
import { LEASE_LIFE_MS } from "./LeaseBook.ts"
import { costOf, type Prices, type Quantities, unitOf } from "./Metering.ts"
import type { ValidCall } from "./Validation.ts"

export interface SettlementConfig {
  /** At most this many calls' settlements and usage records go in one store step. */
  readonly storeBatch: number
  /** Meter before the answer is handed over (Lambda), instead of in the background after it. */
  readonly settleInline: boolean
  /** Inline: how long metering is retried while the store is unavailable before the call answers 503. */
  readonly inlineRetryMs: number
  /** How long a call without a reservation (unpriced) may be retried; a reservation's own life otherwise. */
  readonly reservationTtlMs: number
  /** Admit calls from credit leases where account notices are live (Leases.ts). */
  readonly creditLeases: boolean
}

/** What a call given back was charged of its draw. */
const NOTHING_CHARGED = { allocations: [], grants: [] } as const

/** Backoff between attempts while the store is unavailable: from 50 ms, doubling, at most 2 s, jittered. */
const RETRY_FIRST_MS = 50
const RETRY_MAX_MS = 2_000
/**
 * Metering in the background waits this long before writing a batch alone: the client's next
 * request, sent right after the answer, is read and sent on to the machine first, and the write
 * runs while that call waits for the machine (docs/performance.md "Metering after a linger").
 */
const METERING_LINGER_MS = 1
/** How often the journals of processes that died are looked for, after the first time at start. */
const RECOVER_EVERY_MS = 30_000
/** A failure that is not the store being unavailable (a bug, a refused write) is tried this often more. */
const OTHER_RETRIES = 2

/** A call's reservation while the gateway holds it. */
export interface Held {
  /** The reservation's ref; for a call drawn from a lease, the call's own usage ref. */
  readonly ref: string
  /**
   * Set when the call drew from a credit lease (Leases.ts): the lease's ref. `allocations` and
   * `grants` are then what it drew, and `expiresAt` the lease's.
   */
  readonly lease?: string | undefined
  readonly machineId: string
  readonly allocations: ReadonlyArray<Allocation>
  /** What it holds of the allowance and the trial (billing/Allowances.ts). */
  readonly grants: ReadonlyArray<GrantHold>
  /** When the reservation expires (epoch ms): metering is retried until then. */
  readonly expiresAt: number
}

/**
 * A call's reservation as a scoped resource (`Settlement.hold`): whatever it still holds when the
 * call's scope closes is released, unless it was taken (by metering, or to be released at once).
 */
export interface Hold {
  /** The reservation held now. */
  readonly current: () => Held | undefined
  /** Hands the reservation over: the hold keeps nothing. */
  readonly take: () => Held | undefined
  /** Holds this reservation (the previous one having been taken). */
  readonly put: (held: Held) => void
}

/** What a completed call is charged for. */
export interface Completion {
  readonly caller: Caller
  readonly call: ValidCall
  readonly machineId: string
  readonly price: Prices
  /** Its reservation, taken over by metering; undefined for a call that held none (unpriced). */
  readonly held: Held | undefined
  readonly usage: Quantities
}

/** The accounts a written batch charged: each call whose settlement charged more than nothing. */
export const chargedAccounts = (calls: ReadonlyArray<Metered>, results: ReadonlyArray<MeteredResult>): ReadonlyArray<string> =>
  calls.flatMap((call, i) =>
    results[i]?.settlement === "settled" && call.settlement !== undefined && call.settlement.charged > 0n ? [call.record.account_id] : []
  )

export const makeSettlement = (config: SettlementConfig) =>
  Effect.gen(function*() {
    const store = yield* GatewayStore
    const ledger = yield* Ledger
    const journal = Option.getOrUndefined(yield* Effect.serviceOption(MeteringJournal))
    // What this process holds, for the gauges of GET /metrics (gateway/Activity.ts).
    const activity = yield* CurrentActivity

    const background = yield* FiberSet.make<void, never>()
    yield* Effect.addFinalizer(() => FiberSet.awaitEmpty(background).pipe(Effect.timeoutOption(10_000), Effect.asVoid))
    /** Work that outlives the request (a stream's pump, metering). */
    const fork = (effect: Effect.Effect<void>) => Effect.asVoid(FiberSet.run(background, effect))
    /** Retrying writes: interruptible between attempts (shutdown) even when forked from an uninterruptible region. */
    const forkRetries = (effect: Effect.Effect<void>) => fork(Effect.interruptible(effect))
    /**
     * Background work that starts after the current fiber yields, so the answer in hand is sent
     * first (started at once, metering would build and send its first store statement before it).
     */
    const forkAfter = (effect: Effect.Effect<void>) =>
      Effect.asVoid(FiberSet.run(background, effect, { startImmediately: false }))

    const watch = Option.getOrUndefined(yield* Effect.serviceOption(BillingWatch))
    /** Billing's follow-up: inline when settling inline (the host may freeze after the answer), else in the background. */
    const afterward = (effect: Effect.Effect<void>) => config.settleInline ? effect : fork(Effect.interruptible(effect))

    /** The store has the settlements and records of these calls, or their reservations voided. */
    const closed = (refs: ReadonlyArray<string>) => {
      for (const ref of refs) activity.reservationClosed(ref)
      return journal === undefined ? Effect.void : journal.closed(refs)
    }

    /** Before reservations are asked for: journaled, so that a restart releases those whose call never completes. */
    const opened = (refs: ReadonlyArray<string>) => journal === undefined || refs.length === 0 ? Effect.void : journal.opened(refs)

    // A written batch is closed in the journal in one append.
    const metering = makeBatcher(
      (calls: ReadonlyArray<Metered>) =>
        Effect.tap(store.commit(calls), (results) =>
          Effect.andThen(
            Effect.andThen(closed(calls.map((call) => call.record.ref)), leasesMetered(calls)),
            watch === undefined ? Effect.void : afterward(watch.settled(chargedAccounts(calls, results)))
          )),
      config.storeBatch,
      config.settleInline ? 0 : METERING_LINGER_MS
    )

    /**
     * Runs a store write until it succeeds: again with backoff while the store is unavailable, as
     * long as `deadline` (epoch ms) allows; a few times for any other failure. Each attempt is
     * uninterruptible (a batch write is), the waits between them are not (shutdown).
     */
    const persist = Effect.fnUntraced(function*<A>(write: Effect.Effect<A>, deadline: number): Effect.fn.Return<Exit.Exit<A>> {
      let delay = RETRY_FIRST_MS
      let others = 0
      for (;;) {
        const exit = yield* Effect.exit(Effect.uninterruptible(write))
        if (Exit.isSuccess(exit) || Cause.hasInterruptsOnly(exit.cause)) return exit
        if (!isStoreUnavailableCause(exit.cause) && ++others > OTHER_RETRIES) return exit
        const wait = Math.round(delay * (0.5 + (yield* Random.next) / 2))
        if ((yield* Clock.currentTimeMillis) + wait > deadline) return exit
        yield* Effect.sleep(wait)
        delay = Math.min(delay * 2, RETRY_MAX_MS)
      }
    })

    /** Calls drawn from leases were metered: a closed lease whose last call that was is voided. */
    const leasesMetered = (calls: ReadonlyArray<Metered>): Effect.Effect<void> => {
      if (leases === undefined) return Effect.void
      let due = false
      for (const { drawn, settlement } of calls) {
        if (drawn === undefined || settlement === undefined) continue
        const holds = { allocations: drawn.allocations, grants: drawn.grants ?? [] }
        due = leases.done({ lease: drawn.lease, drawn: holds }, chargedOf(holds, settlement)) || due
      }
      return due ? fork(leases.voidDue) : Effect.void
    }

    const meteredOf = Effect.fnUntraced(function*(c: Completion) {
      const list = costOf(c.price, c.usage)
      const settlement = c.held === undefined
        ? undefined
        : yield* settlementOf(c.held.ref, list, {
          account_id: c.caller.account.id,
          allocations: c.held.allocations,
          grants: c.held.grants
        })
      const { unit, quantity } = unitOf(c.call, c.price, c.usage)
      const record: UsageRecord = {
        ref: c.held?.ref ?? (yield* generateId("usage")),
        account_id: c.caller.account.id,
        at: yield* Time.now,
        key_id: c.caller.key.id,
        agent_id: c.caller.key.agent_id,
        machine_id: c.machineId,
        service: c.call.model.service,
        model: c.call.model.id,
        unit,
        quantity,
        input_tokens: c.usage.input_tokens,
        output_tokens: c.usage.output_tokens,
        list_credits: list,
        // Only a priced call holds a reservation; the store writes 0 when it is no longer pending.
        credits: settlement === undefined ? 0n : settlement.charged,
        ...grantParts(settlement?.grants ?? [])
      }
      const drawn = c.held?.lease === undefined
        ? undefined
        : { lease: c.held.lease, allocations: c.held.allocations, ...(c.held.grants.length === 0 ? {} : { grants: c.held.grants }) }
      return { settlement, record, ...(drawn === undefined ? {} : { drawn }) } satisfies Metered
    })

    /** Writes one call's metering; whether it is in the store. Logs what it could not do. */
    const commit = (metered: Metered, deadline: number): Effect.Effect<boolean> =>
      Effect.flatMap(persist(metering.submit(metered), deadline), (exit) => {
        const ref = metered.record.ref
        if (Exit.isFailure(exit)) {
          return Effect.as(
            Effect.logError(
              `gateway: metering of ${ref} failed${journal === undefined ? "" : "; the journal keeps it for the next start"}`,
              exit.cause
            ),
            false
          )
        }
        // A replay finds its record written ("Duplicate"): only a first write charging nothing is news.
        const warn = exit.value.settlement === "not_pending" && exit.value.record === "Recorded"
          ? Effect.logWarning(`gateway: reservation ${ref} was no longer pending at settlement; nothing charged`)
          : Effect.void
        // Closed in the journal by its batch (`metering`).
        return Effect.as(warn, true)
      })

    /**
     * Voids a reservation whose call will not be charged. Tried at once; while the store is
     * unavailable, again in the background until the reservation would expire anyway.
     */
    const release = (held: Held | undefined): Effect.Effect<void> => {
      if (held === undefined) return Effect.void
      if (held.lease !== undefined) {
        // Drawn from a lease: what it drew goes back to the lease; the store holds it there.
        const call = { lease: held.lease, drawn: { allocations: held.allocations, grants: held.grants } }
        return Effect.andThen(
          Effect.suspend(() => leases?.done(call, NOTHING_CHARGED) ? fork(leases.voidDue) : Effect.void),
          closed([held.ref])
        )
      }
      const done = Effect.andThen(Effect.asVoid(ledger.void(held.ref)), closed([held.ref]))
      return Effect.catchCause(Effect.uninterruptible(done), (cause) =>
        isStoreUnavailableCause(cause)
          ? forkRetries(Effect.flatMap(persist(done, held.expiresAt), (exit) =>
            Exit.isSuccess(exit)
              ? Effect.void
              : Effect.logWarning(`gateway: could not release reservation ${held.ref}; it expires on its own`, exit.cause)))
          : Effect.logError(`gateway: could not release reservation ${held.ref}; it expires on its own`, cause))
    }

    /** The credit leases (Leases.ts), where they are on: a closed lease is voided as a reservation is. */
    const leases = config.creditLeases
      ? yield* makeLeases((ref) =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          release({ ref, machineId: "", allocations: [], grants: [], expiresAt: now + config.reservationTtlMs + LEASE_LIFE_MS })))
      : undefined

    /**
     * The call's reservation, acquired by `admit` (undefined when it reserves nothing), held for
     * the life of the scope: released when the scope closes unless metering took it over.
     * As `Effect.acquireRelease`, but the release is added to the scope as it is: acquireRelease
     * runs it under the context captured at acquisition, which copies the fiber's whole context
     * (every service) at every call (docs/performance.md "A context copied per call").
     */
    const hold = <E, R>(admit: Effect.Effect<Held | undefined, E, R>): Effect.Effect<Hold, E, R | Scope.Scope> =>
      Effect.uninterruptible(Effect.flatMap(Effect.scope, (scope) =>
        Effect.tap(
          Effect.map(admit, (first): Hold => {
            let held = first
            if (first !== undefined) activity.reservationHeld(first)
            return {
              current: () => held,
              take: () => {
                const taken = held
                held = undefined
                return taken
              },
              put: (next) => {
                held = next
                activity.reservationHeld(next)
              }
            }
          }),
          (h) => Scope.addFinalizer(scope, Effect.suspend(() => release(h.take())))
        )))

    /**
     * A journaled reservation ref that did not become the call's reservation. Admission refused it
     * (a typed error: the store answered, nothing was reserved): closed. Admission failed or was
     * interrupted (the client left) before its answer was seen: the store may have made it, so it
     * is voided (harmless when it was not).
     */
    const abandon = (ref: string, exit: Exit.Exit<unknown, unknown>): Effect.Effect<void> =>
      Exit.isFailure(exit) && (Cause.hasDies(exit.cause) || Cause.hasInterrupts(exit.cause))
        ? Effect.flatMap(Clock.currentTimeMillis, (now) =>
          release({ ref, machineId: "", allocations: [], grants: [], expiresAt: now + config.reservationTtlMs }))
        : closed([ref])

    /**
     * A completed call: charged exactly once. In the background (after the answer), or inline
     * (settleInline), where a store that stays unavailable fails the call with StoreUnavailable.
     */
    const completing = Effect.fnUntraced(function*(c: Completion) {
      const metered = yield* meteredOf(c)
      const now = yield* Clock.currentTimeMillis
      const deadline = c.held?.expiresAt ?? now + config.reservationTtlMs
      if (!config.settleInline) {
        // Durable before the answer is handed over: a process killed from here on is replayed.
        if (journal !== undefined) yield* journal.completed(metered)
        return yield* forkAfter(Effect.interruptible(Effect.asVoid(pendingSettlement(commit(metered, deadline)))))
      }
      if (yield* pendingSettlement(commit(metered, Math.min(deadline, now + config.inlineRetryMs)))) return
      // Not written: the answer is not handed over, so the call is not charged.
      yield* release(c.held)
      return yield* Effect.die(new StoreUnavailable("GatewayStore.commit", "metering could not be written"))
    })
    const complete = (c: Completion): Effect.Effect<void> => Effect.uninterruptible(completing(c))

    /**
     * At start: replays the journals of processes that are gone. Retried until the store takes it
     * (nothing can be served without the store anyway); in the background.
     */
    const recover = Effect.gen(function*() {
      if (journal === undefined) return
      for (const orphan of yield* journal.orphans) {
        const { completed, opened: uncompleted } = orphan.entries
        let written = 0
        for (const metered of completed) if (yield* commit(metered, Number.POSITIVE_INFINITY)) written += 1
        let voided = 0
        for (const ref of uncompleted) {
          const exit = yield* persist(ledger.void(ref), Number.POSITIVE_INFINITY)
          if (Exit.isSuccess(exit) && exit.value._tag === "Voided") voided += 1
        }
        if (completed.length + uncompleted.length > 0) {
          yield* Effect.logInfo(
            `gateway: replayed the metering journal ${orphan.name}: ${written} of ${completed.length} completed call(s) metered, ` +
              `${voided} of ${uncompleted.length} uncompleted reservation(s) released`
          )
        }
        if (written === completed.length) yield* orphan.release
      }
    }).pipe(Effect.catchCause((cause) => Effect.logError("gateway: replaying the metering journal failed", cause)))

    yield* forkRetries(recover)
    // Again now and then: a sibling process on the same journal directory may have died.
    yield* Effect.forkScoped(Effect.interruptible(Effect.forever(Effect.andThen(Effect.sleep(RECOVER_EVERY_MS), recover))))

    /** A priced call was refused at a monthly limit ("account" or "key:<id>") of `month`: billing raises its alert. */
    const limitReached = (accountId: string, budget: string, month: string, limit: bigint): Effect.Effect<void> =>
      watch === undefined ? Effect.void : afterward(watch.refused(accountId, budget, month, limit))

    return {
      opened,
      leases,
      hold,
      limitReached,
      abandon,
      complete,
      release,
      fork,
      forkAfter,
      idle: FiberSet.awaitEmpty(background)
    } as const
  })

export type Settlement = Effect.Success<ReturnType<typeof makeSettlement>>
