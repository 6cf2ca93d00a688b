/**
 * Per-account state kept in process (core/src/kernel/AccountCache.ts): a few seconds without
 * notices; with live notices, until its account's notice, everything forgotten when notices may
 * have been missed, and a value whose read overlapped a notice kept only the few seconds.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer } from "effect"
import { FOLLOWED_TTL_MS, makeAccountCache } from "../../src/kernel/AccountCache.ts"
import { AccountNotices, type NoticeFollower } from "../../src/kernel/AccountNotices.ts"

const TTL = 5_000

/** A store of one value per account, counting its reads. */
const counter = () => {
  const values = new Map<string, number>()
  let reads = 0
  return {
    set: (accountId: string, value: number) => void values.set(accountId, value),
    reads: () => reads,
    read: (accountId: string) =>
      Effect.sync(() => {
        reads++
        return values.get(accountId) ?? 0
      })
  }
}

/** Notices the test sends by hand. */
const handNotices = () => {
  const followers = new Set<NoticeFollower>()
  const state = { live: true }
  const changed = (accountId: string) => followers.forEach((f) => f.changed(accountId))
  const layer = Layer.succeed(AccountNotices, AccountNotices.of({
    live: () => state.live,
    tell: (accountId) => Effect.sync(() => changed(accountId)),
    follow: (follower) =>
      Effect.asVoid(Effect.acquireRelease(Effect.sync(() => followers.add(follower)), () => Effect.sync(() => followers.delete(follower))))
  }))
  return {
    layer,
    state,
    changed,
    missed: () => followers.forEach((f) => f.missed()),
    followers: () => followers.size
  }
}

describe("AccountCache", () => {
  it.effect("without notices, a value is read again once it is ttl old", () =>
    Effect.gen(function*() {
      const store = counter()
      const cache = yield* makeAccountCache(TTL, store.read)
      store.set("a", 1)
      assert.strictEqual(yield* cache.through("a", 0), 1)
      store.set("a", 2)
      assert.strictEqual(yield* cache.through("a", TTL - 1), 1)
      assert.strictEqual(yield* cache.through("a", TTL), 2)
      assert.strictEqual(store.reads(), 2)
    }).pipe(Effect.scoped))

  it.effect("with live notices, a value is kept until its account's notice, and only that account's", () =>
    Effect.gen(function*() {
      const notices = handNotices()
      yield* Effect.gen(function*() {
        const store = counter()
        const cache = yield* makeAccountCache(TTL, store.read)
        store.set("a", 1)
        store.set("b", 10)
        yield* cache.through("a", 0)
        yield* cache.through("b", 0)
        store.set("a", 2)
        store.set("b", 20)
        // Long past the ttl, nothing changed as far as anyone said: no read.
        assert.strictEqual(yield* cache.through("a", FOLLOWED_TTL_MS - 1), 1)
        notices.changed("a")
        assert.strictEqual(yield* cache.through("a", FOLLOWED_TTL_MS - 1), 2)
        assert.strictEqual(yield* cache.through("b", FOLLOWED_TTL_MS - 1), 10)
        // The bound on a notice that never came.
        assert.strictEqual(yield* cache.through("b", FOLLOWED_TTL_MS), 20)
        assert.strictEqual(store.reads(), 4)
      }).pipe(Effect.scoped, Effect.provide(notices.layer))
      assert.strictEqual(notices.followers(), 0, "a cache stops following when its scope closes")
    }))

  it.effect("notices missed forget everything; while they are not live, values last the ttl", () =>
    Effect.gen(function*() {
      const notices = handNotices()
      yield* Effect.gen(function*() {
        const store = counter()
        const cache = yield* makeAccountCache(TTL, store.read)
        store.set("a", 1)
        yield* cache.through("a", 0)
        store.set("a", 2)
        notices.missed()
        assert.strictEqual(yield* cache.through("a", 1), 2)
        notices.state.live = false
        store.set("a", 3)
        assert.strictEqual(yield* cache.through("a", 1 + TTL), 3, "kept while live, but not live now: the ttl holds")
      }).pipe(Effect.scoped, Effect.provide(notices.layer))
    }))

  it.effect("a value whose read overlapped a notice is kept only the ttl (the read may predate the change)", () =>
    Effect.gen(function*() {
      const notices = handNotices()
      yield* Effect.gen(function*() {
        const reading = yield* Deferred.make<void>()
        const answer = yield* Deferred.make<number>()
        let reads = 0
        // The first read waits for the test; later ones answer 2 at once.
        const cache = yield* makeAccountCache(TTL, (_: string) =>
          ++reads === 1 ? Effect.andThen(Deferred.succeed(reading, undefined), Deferred.await(answer)) : Effect.succeed(2))
        const fiber = yield* Effect.forkChild(cache.through("a", 0))
        yield* Deferred.await(reading)
        // The change commits and is noticed while the read is under way; the read answers the old value.
        notices.changed("a")
        yield* Deferred.succeed(answer, 1)
        assert.strictEqual(yield* Fiber.join(fiber), 1)
        assert.strictEqual(yield* cache.through("a", TTL - 1), 1)
        assert.strictEqual(yield* cache.through("a", TTL), 2)
        assert.strictEqual(reads, 2, "read again at the ttl, not kept until a notice")
      }).pipe(Effect.scoped, Effect.provide(notices.layer))
    }))
})
