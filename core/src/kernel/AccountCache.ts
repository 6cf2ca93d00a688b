/**
 * What a process keeps of an account's state that every call would otherwise read (the tier's
 * purchased credits, the billing settings): docs/performance.md "Per-account state, told when it
 * changes".
 *
 * Without notices (AccountNotices.ts), a value is used for `ttlMs` after it was read, so a change
 * made elsewhere is seen within that time. With live notices, it is used until its account's
 * notice comes (FOLLOWED_TTL_MS at most), and everything is forgotten when notices may have been
 * missed. A value whose read overlapped a notice is kept only `ttlMs`: the read may have seen the
 * state before the change it announced.
 */
import { Effect, Option, type Scope } from "effect"
import { AccountNotices } from "./AccountNotices.ts"

/** How long a value is used while notices are live: the bound on a change whose notice never came. */
export const FOLLOWED_TTL_MS = 10 * 60_000
/** At most this many accounts are kept; past it, all are forgotten (a forgotten one costs a read). */
const MAX_ACCOUNTS = 10_000

export interface AccountCache<K extends string, A, E> {
  /** The value kept for the account, while fresh at `now`. */
  readonly get: (accountId: K, now: number) => Option.Option<A>
  /** Reads the value now (whatever is kept) and keeps it. */
  readonly read: (accountId: K, now: number) => Effect.Effect<A, E>
  /** The value kept while fresh at `now` (looked up when called), else read now and kept. */
  readonly through: (accountId: K, now: number) => Effect.Effect<A, E>
  /** The account changed in this process: read it again next time. */
  readonly forget: (accountId: K) => void
}

interface Kept<A> {
  readonly value: A
  readonly at: number
  /** Read while notices were live and none came during the read: used until a notice. */
  readonly followed: boolean
}

/** A cache of the per-account values `reader` reads, following the notices when the shell provides them. */
export const makeAccountCache = <K extends string, A, E>(
  ttlMs: number,
  reader: (accountId: K) => Effect.Effect<A, E>
): Effect.Effect<AccountCache<K, A, E>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const notices = Option.getOrUndefined(yield* Effect.serviceOption(AccountNotices))
    const kept = new Map<string, Kept<A>>()
    /** Counts the notices heard: a read during which it moved may predate the change. */
    let heard = 0
    if (notices !== undefined) {
      yield* notices.follow({
        changed: (accountId) => {
          heard++
          kept.delete(accountId)
        },
        missed: () => {
          heard++
          kept.clear()
        }
      })
    }
    const get = (accountId: K, now: number): Option.Option<A> => {
      const entry = kept.get(accountId)
      if (entry === undefined) return Option.none()
      const ttl = entry.followed && notices?.live() === true ? FOLLOWED_TTL_MS : ttlMs
      return now - entry.at < ttl ? Option.some(entry.value) : Option.none()
    }
    const read = (accountId: K, now: number) =>
      Effect.suspend(() => {
        const before = heard
        const live = notices?.live() === true
        return Effect.map(reader(accountId), (value) => {
          if (kept.size >= MAX_ACCOUNTS) kept.clear()
          kept.set(accountId, { value, at: now, followed: live && heard === before })
          return value
        })
      })
    return {
      get,
      read,
      through: (accountId, now) => {
        const hit = get(accountId, now)
        return Option.isSome(hit) ? Effect.succeed(hit.value) : read(accountId, now)
      },
      forget: (accountId) => void kept.delete(accountId)
    }
  })
