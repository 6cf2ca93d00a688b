/**
 * Port: notices that an account's state changed, from whichever process changed it
 * (docs/performance.md "Per-account state, told when it changes"). A shell whose store can tell
 * every process of a change as it commits provides it (PostgreSQL: LISTEN/NOTIFY, fed by triggers);
 * one that cannot does not, and what is kept per account (AccountCache.ts) is read again after a
 * few seconds instead.
 *
 * Which changes are noticed: the account's billing settings, its receipts (the tier), credits
 * taken back by a refund or dispute (the tier too), its agents, plans and rentals (what stands
 * behind its keys: gateway/KeyStanding.ts).
 */
import { Context, Effect, Option, type Scope } from "effect"

export interface NoticeFollower {
  /** This account's state changed (the change is committed): forget what is kept of it. */
  readonly changed: (accountId: string) => void
  /** Notices may have been missed (the listener was lost, or has just started): forget everything. */
  readonly missed: () => void
}

export class AccountNotices extends Context.Service<AccountNotices, {
  /** Whether notices arrive now: while false, a change may go unnoticed. */
  readonly live: () => boolean
  /** Tells `follower` of every notice from now until the scope closes. */
  readonly follow: (follower: NoticeFollower) => Effect.Effect<void, never, Scope.Scope>
  /**
   * This process committed a change to the account's state: its own followers forget at once,
   * without waiting for the store's notice (which other processes hear). Where a promise is "at
   * the next call" (an agent revoked, a plan ended), the use-case that made the change says so.
   */
  readonly tell: (accountId: string) => Effect.Effect<void>
}>()("@model-platform/core/kernel/AccountNotices") {}

/** `tell` of the context's notices, or nothing where the shell sends none (nothing is kept then). */
export const accountTeller: Effect.Effect<(accountId: string) => Effect.Effect<void>> = Effect.map(
  Effect.serviceOption(AccountNotices),
  (notices) => Option.isSome(notices) ? notices.value.tell : () => Effect.void
)
