/**
 * Port: notices that an account's state changed, from whichever process changed it
 * (docs/performance.md "Per-account state, told when it changes"). A shell whose store can tell
 * every process of a change as it commits provides it (PostgreSQL: LISTEN/NOTIFY, fed by triggers);
 * one that cannot does not, and what is kept per account (AccountCache.ts) is read again after a
 * few seconds instead.
 *
 * Which changes are noticed: the account's billing settings, its receipts (the tier) and credits
 * taken back by a refund or dispute (the tier too).
 */
import { Context, type Effect, type Scope } from "effect"

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
}>()("@model-platform/core/kernel/AccountNotices") {}
