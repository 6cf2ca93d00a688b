/**
 * A process's credit leases over their life (docs/performance.md "Credit leases"): the lease book
 * (LeaseBook.ts) and what it hands back for voiding, voided in the store. Made by Settlement.ts,
 * which holds every reservation a call or a lease has; used by Admission.ts, which draws calls
 * from it and opens leases the store grants.
 *
 * Leases lend only while account notices are live (kernel/AccountNotices.ts): a notice of an
 * account closes its leases (its tier, settings, limits, keys, agents or plans changed), and a
 * listener that may have missed one closes them all. Every second the leases past their time are
 * closed, and what the book hands back is voided, in the background; at shutdown every lease is
 * closed.
 */
import { Clock, Deferred, Effect, Exit, Option, Schedule, type Scope } from "effect"
import { AccountNotices } from "../kernel/AccountNotices.ts"
import type { Holds } from "../ledger/Lease.ts"
import { type Drawn, makeLeaseBook, type OpenLease } from "./LeaseBook.ts"

/** How often leases past their time are closed and closed leases voided. */
const SWEEP_EVERY_MS = 1_000
/** How long `closeAccount` waits for the calls still being metered of the leases it closes. */
const CLOSE_WAIT_MS = 2_000

/** A lease's reservation, to void (Settlement.ts `release`). */
export type VoidLease = (ref: string) => Effect.Effect<void>

export const makeLeases = (voidLease: VoidLease): Effect.Effect<Leases, never, Scope.Scope> =>
  Effect.gen(function*() {
    const book = makeLeaseBook()
    const notices = Option.getOrUndefined(yield* Effect.serviceOption(AccountNotices))
    /** Refs handed back by the book and not voided yet. */
    let due: Array<string> = []
    /** Per account, the `closeAccount` callers waiting for its last lease to be voided. */
    const emptied = new Map<string, Deferred.Deferred<void>>()
    /** After shutdown, a lease the store grants is voided rather than lent from. */
    let shut = false
    /**
     * Notices, counted: `tick` moves at each, `noticedAt` keeps its value at an account's last one
     * and `missedAt` at the last time notices may have been missed. A lease whose store step began
     * before a notice of its account (its `stamp`) may have been granted on what the notice
     * changed: it is voided rather than lent from.
     */
    let tick = 0
    let missedAt = 0
    const noticedAt = new Map<string, number>()
    const noticed = (accountId: string) => {
      if (noticedAt.size >= 10_000) {
        // Bounded: forgetting counts as notices missed (leases being taken are voided, once).
        noticedAt.clear()
        missedAt = ++tick
      }
      noticedAt.set(accountId, ++tick)
    }

    const later = (refs: ReadonlyArray<string>) => {
      if (refs.length > 0) due.push(...refs)
    }
    const voided = (ref: string) =>
      Effect.sync(() => {
        const accountId = book.voided(ref)
        const waiting = accountId === undefined ? undefined : emptied.get(accountId)
        if (accountId === undefined || waiting === undefined || book.holdsAny(accountId)) return
        emptied.delete(accountId)
        Deferred.doneUnsafe(waiting, Exit.void)
      })
    const voidDue = Effect.suspend(() => {
      const refs = due
      due = []
      return Effect.forEach(refs, (ref) => Effect.andThen(voidLease(ref), voided(ref)), { discard: true })
    })

    if (notices !== undefined) {
      yield* notices.follow({
        changed: (accountId) => {
          noticed(accountId)
          later(book.closeAccount(accountId))
        },
        missed: () => {
          missedAt = ++tick
          later(book.closeAll())
        }
      })
    }
    yield* Effect.forkScoped(Effect.interruptible(Effect.repeat(
      Effect.andThen(Effect.map(Clock.currentTimeMillis, (now) => later(book.closeDue(now))), voidDue),
      Schedule.spaced(SWEEP_EVERY_MS)
    )))
    yield* Effect.addFinalizer(() =>
      Effect.andThen(
        Effect.sync(() => {
          shut = true
          later(book.closeAll())
        }),
        voidDue
      )
    )

    return {
      active: () => notices?.live() === true,
      draw: (key, estimate, now) => {
        const toVoid: Array<string> = []
        const drawn = book.draw(key, estimate, now, toVoid)
        later(toVoid)
        return drawn
      },
      stamp: () => tick,
      open: (lease, stamp) =>
        shut || missedAt > stamp || (noticedAt.get(lease.accountId) ?? 0) > stamp ? Effect.as(voidLease(lease.ref), false) : Effect.sync(() => {
          later(book.open(lease))
          return true
        }),
      closeAccount: (accountId) =>
        Effect.gen(function*() {
          later(book.closeAccount(accountId))
          yield* voidDue
          if (!book.holdsAny(accountId)) return
          // Calls drawn from them and still being metered (a call's metering runs after its
          // answer) are waited for, a little: each lease is voided once its last one is.
          let waiting = emptied.get(accountId)
          if (waiting === undefined) {
            waiting = Deferred.makeUnsafe<void>()
            emptied.set(accountId, waiting)
          }
          yield* Effect.timeoutOption(Deferred.await(waiting), CLOSE_WAIT_MS)
        }),
      done: (call, charged) => {
        later(book.done(call, charged))
        return due.length > 0
      },
      voidDue
    } satisfies Leases
  })

export interface Leases {
  /** Whether calls may draw from leases now: notices are live. */
  readonly active: () => boolean
  /** A call's draw from the open lease under `key` (LeaseBook.draw); undefined: to the store. */
  readonly draw: (key: string, estimate: bigint, now: number) => Drawn | undefined
  /** Where the notices stand, taken before a lease's store step (`open`). */
  readonly stamp: () => number
  /**
   * A lease the store granted, its store step begun at `stamp`, lends from now (or once its key's
   * lease cannot: LeaseBook.open). It is voided instead (false) after shutdown, or when a notice
   * of its account (or notices missed) came since `stamp`: the store may have granted it on what
   * the notice changed (a key revoked, a limit lowered).
   */
  readonly open: (lease: OpenLease, stamp: number) => Effect.Effect<boolean>
  /**
   * Closes this process's leases of an account and voids them before it answers, waiting up to
   * 2 s for their calls still being metered: near a limit, what they hold goes back to the
   * account's calls.
   */
  readonly closeAccount: (accountId: string) => Effect.Effect<void>
  /**
   * A drawn call is done: metered (`charged` what it was charged of its draw) or given back
   * (nothing). Whether leases are due to be voided now.
   */
  readonly done: (call: Pick<Drawn, "lease" | "drawn">, charged: Holds) => boolean
  /** Voids the leases the book handed back (the sweep does it every second). */
  readonly voidDue: Effect.Effect<void>
}

/** What a lease is taken for: one key's calls on one machine under one claim shape. */
export const leaseKey = (
  keyId: string,
  machineId: string,
  claims: {
    readonly budgets: ReadonlyArray<{ readonly budget: string; readonly month: string; readonly default_limit: bigint | null }>
    readonly grants: ReadonlyArray<{ readonly grant: string; readonly period: string; readonly size: bigint }>
  }
): string =>
  [
    keyId,
    machineId,
    ...claims.budgets.map((b) => `${b.budget}/${b.month}/${b.default_limit ?? ""}`),
    "|",
    ...claims.grants.map((g) => `${g.grant}/${g.period}/${g.size}`)
  ].join(" ")

