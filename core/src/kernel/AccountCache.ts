/**
 * What a process keeps of an account's state that every call would otherwise read (the tier's
 * purchased credits, the billing settings, what stands behind a key): docs/performance.md
 * "Per-account state, told when it changes".
 *
 * Without notices (AccountNotices.ts), a value is used for `ttlMs` after it was read, so a change
 * made elsewhere is seen within that time (0: read every time). With live notices, it is used
 * until its account's notice comes (FOLLOWED_TTL_MS at most), and everything is forgotten when
 * notices may have been missed. A value whose read overlapped a notice is kept only `ttlMs`: the
 * read may have seen the state before the change it announced.
 */
import { Effect, Option, type Scope } from "effect"
import { AccountNotices } from "./AccountNotices.ts"

/** How long a value is used while notices are live: the bound on a change whose notice never came. */
export const FOLLOWED_TTL_MS = 10 * 60_000
/** At most this many values are kept; past it, all are forgotten (a forgotten one costs a read). */
const MAX_KEPT = 10_000

/** Values kept by id, each of one account. */
export interface KeptCache<A> {
  /** The value kept under `id`, while fresh at `now`. */
  readonly get: (id: string, now: number) => Option.Option<A>
  /** Runs `read` now (whatever is kept) and keeps its value under `id`, as state of `accountId`. */
  readonly read: <E>(id: string, accountId: string, now: number, read: Effect.Effect<A, E>) => Effect.Effect<A, E>
  /** The value kept under `id` while fresh at `now` (looked up when called), else `read()` run now and kept. */
  readonly through: <E>(id: string, accountId: string, now: number, read: () => Effect.Effect<A, E>) => Effect.Effect<A, E>
  /** `id` changed in this process: read it again next time. */
  readonly forget: (id: string) => void
}

interface Kept<A> {
  readonly value: A
  readonly accountId: string
  readonly at: number
  /** Read while notices were live and none came during the read: used until a notice. */
  readonly followed: boolean
}

/** A cache following the notices when the shell provides them. */
export const makeKeptCache = <A>(ttlMs: number): Effect.Effect<KeptCache<A>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const notices = Option.getOrUndefined(yield* Effect.serviceOption(AccountNotices))
    const kept = new Map<string, Kept<A>>()
    /** Counts the notices heard: a read during which it moved may predate the change. */
    let heard = 0
    if (notices !== undefined) {
      yield* notices.follow({
        changed: (accountId) => {
          heard++
          // Notices are rare (a settings change, a purchase, an agent or plan changed): a scan is fine.
          for (const [id, entry] of kept) if (entry.accountId === accountId) kept.delete(id)
        },
        missed: () => {
          heard++
          kept.clear()
        }
      })
    }
    const get = (id: string, now: number): Option.Option<A> => {
      const entry = kept.get(id)
      if (entry === undefined) return Option.none()
      const ttl = entry.followed && notices?.live() === true ? FOLLOWED_TTL_MS : ttlMs
      return now - entry.at < ttl ? Option.some(entry.value) : Option.none()
    }
    const read = <E>(id: string, accountId: string, now: number, effect: Effect.Effect<A, E>) =>
      Effect.suspend(() => {
        const before = heard
        const live = notices?.live() === true
        return Effect.map(effect, (value) => {
          if (kept.size >= MAX_KEPT) kept.clear()
          kept.set(id, { value, accountId, at: now, followed: live && heard === before })
          return value
        })
      })
    return {
      get,
      read,
      through: (id, accountId, now, effect) => {
        const hit = get(id, now)
        return Option.isSome(hit) ? Effect.succeed(hit.value) : read(id, accountId, now, effect())
      },
      forget: (id) => void kept.delete(id)
    }
  })

/** One value per account, read by `reader`. */
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

/** A cache of the per-account values `reader` reads, following the notices when the shell provides them. */
export const makeAccountCache = <K extends string, A, E>(
  ttlMs: number,
  reader: (accountId: K) => Effect.Effect<A, E>
): Effect.Effect<AccountCache<K, A, E>, never, Scope.Scope> =>
  Effect.map(makeKeptCache<A>(ttlMs), (cache) => ({
    get: cache.get,
    read: (accountId, now) => cache.read(accountId, accountId, now, reader(accountId)),
    through: (accountId, now) => cache.through(accountId, accountId, now, () => reader(accountId)),
    forget: cache.forget
  }))
