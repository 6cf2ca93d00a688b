/**
 * The account notices (core/src/kernel/AccountNotices.ts) of a PostgreSQL server: one connection
 * of the pool LISTENs on the channel the triggers of migration 0027 notify, and every follower
 * hears each account id as its change commits, in whichever process made it.
 *
 * The notices are live only while this process hears its own heartbeat: a notice it sends every
 * HEARTBEAT_MS through the pool, which must come back on the listener within HEARTBEAT_WAIT_MS.
 * So a listener that hears nothing without failing (a transaction-pooling proxy in between, which
 * does not carry notices to a session) never counts as live, and the kept state is read again
 * after its few seconds, as without notices.
 *
 * When the notices stop being live (the heartbeat is late, or the connection failed), the
 * followers forget everything: what changed meanwhile went unheard. When they are live again (the
 * first heartbeat heard, after a start or a new LISTEN), they forget everything once more (a change
 * may have committed before), then follow the notices. A failed listener listens again after
 * RELISTEN_MS.
 *
 * Not for the embedded database: its one connection would be held by the listener.
 */
import { PgClient } from "@effect/sql-pg"
import { AccountNotices, type NoticeFollower } from "@model-platform/core/kernel"
import { Cause, Effect, Layer, Queue } from "effect"
import { ACCOUNT_NOTICE_CHANNEL } from "./migrations/0027_account_notices.ts"

/** How long after losing its connection the listener tries again. */
const RELISTEN_MS = 1_000
/** How often this process checks that it hears its own notices. */
const HEARTBEAT_MS = 10_000
/** How long a heartbeat may take to come back before the notices count as not live. */
const HEARTBEAT_WAIT_MS = 2_000
/** The heartbeats' payloads start so; an account id never does (ids are `<kind>_...`). */
const HEARTBEAT = "heartbeat:"

export const AccountNoticesPg: Layer.Layer<AccountNotices, never, PgClient.PgClient> = Layer.effect(
  AccountNotices,
  Effect.gen(function*() {
    const pg = yield* PgClient.PgClient
    const followers = new Set<NoticeFollower>()
    const beat = `${HEARTBEAT}${crypto.randomUUID()}`
    let live = false
    /** The last heartbeat of this process heard back (epoch ms). */
    let heardAt = 0
    const missed = () => {
      for (const follower of followers) follower.missed()
    }
    const changed = (accountId: string) => {
      for (const follower of followers) follower.changed(accountId)
    }
    const notLive = (why: string, cause?: unknown) =>
      Effect.suspend(() => {
        if (!live) return Effect.void
        live = false
        missed()
        return Effect.logWarning(`account notices: ${why}; kept account state is read again until they are heard again`, ...(cause === undefined ? [] : [cause]))
      })
    const heartbeat = Effect.gen(function*() {
      for (;;) {
        const sentAt = Date.now()
        yield* pg`SELECT pg_notify(${ACCOUNT_NOTICE_CHANNEL}, ${beat})`.pipe(
          Effect.catchCause((cause) => notLive("this process's heartbeat could not be sent", cause))
        )
        yield* Effect.sleep(HEARTBEAT_WAIT_MS)
        if (heardAt < sentAt) yield* notLive(`this process's heartbeat did not come back within ${HEARTBEAT_WAIT_MS} ms`)
        yield* Effect.sleep(HEARTBEAT_MS - HEARTBEAT_WAIT_MS)
      }
    })
    const listen = Effect.scoped(Effect.gen(function*() {
      const notices = yield* pg.listen(ACCOUNT_NOTICE_CHANNEL)
      yield* Effect.forkScoped(heartbeat)
      for (;;) {
        const { payload } = yield* Queue.take(notices)
        if (payload === beat) {
          heardAt = Date.now()
          if (!live) {
            live = true
            missed()
          }
        } else if (!payload.startsWith(HEARTBEAT)) {
          changed(payload)
        }
      }
    }))
    yield* Effect.forkScoped(Effect.forever(listen.pipe(
      // Shutting down interrupts it: that is not a lost listener.
      Effect.catchCause((cause) => Cause.hasInterruptsOnly(cause) ? Effect.failCause(cause) : notLive("the listener was lost", cause)),
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
