/**
 * The account notices (core/src/kernel/AccountNotices.ts) of a PostgreSQL server: one connection
 * of the pool LISTENs on the channel the triggers of migration 0027 notify, and every follower
 * hears each account id as its change commits, in whichever process made it.
 *
 * A lost connection makes the notices not live and tells the followers to forget everything (what
 * changed meanwhile went unheard); the listener is opened again after RELISTEN_MS, and once it
 * listens the followers forget everything once more (a change may have committed between the loss
 * and the new LISTEN), then follow the notices again.
 *
 * Not for the embedded database: its one connection would be held by the listener. There the
 * kept state is read again after its few seconds, as without notices.
 */
import { PgClient } from "@effect/sql-pg"
import { AccountNotices, type NoticeFollower } from "@model-platform/core/kernel"
import { Cause, Effect, Layer, Queue } from "effect"
import { ACCOUNT_NOTICE_CHANNEL } from "./migrations/0027_account_notices.ts"

/** How long after losing its connection the listener tries again. */
const RELISTEN_MS = 1_000

export const AccountNoticesPg: Layer.Layer<AccountNotices, never, PgClient.PgClient> = Layer.effect(
  AccountNotices,
  Effect.gen(function*() {
    const pg = yield* PgClient.PgClient
    const followers = new Set<NoticeFollower>()
    let live = false
    const missed = () => {
      for (const follower of followers) follower.missed()
    }
    const changed = (accountId: string) => {
      for (const follower of followers) follower.changed(accountId)
    }
    const listen = Effect.scoped(Effect.gen(function*() {
      const notices = yield* pg.listen(ACCOUNT_NOTICE_CHANNEL)
      live = true
      missed()
      for (;;) changed((yield* Queue.take(notices)).payload)
    }))
    const lost = (cause: unknown) =>
      Effect.andThen(
        Effect.sync(() => {
          live = false
          missed()
        }),
        Effect.logWarning(`account notices: the listener was lost; kept account state is read again until it listens (in ${RELISTEN_MS} ms)`, cause)
      )
    yield* Effect.forkScoped(Effect.forever(listen.pipe(
      // Shutting down interrupts it: that is not a lost listener.
      Effect.catchCause((cause) => Cause.hasInterruptsOnly(cause) ? Effect.failCause(cause) : lost(cause)),
      Effect.andThen(Effect.sleep(RELISTEN_MS))
    )))
    return AccountNotices.of({
      live: () => live,
      tell: (accountId) => Effect.sync(() => changed(accountId)),
      follow: (follower) =>
        Effect.asVoid(Effect.acquireRelease(
          Effect.sync(() => followers.add(follower)),
          () => Effect.sync(() => followers.delete(follower))
        ))
    })
  })
)
