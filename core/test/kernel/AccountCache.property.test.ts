/**
 * The cache of per-account state under any interleaving (core/src/kernel/AccountCache.ts, with the
 * fast-check scheduler): reads whose snapshot and answer come at any moment, changes to the store
 * each followed by its notice at any later moment, calls through the cache at any moment. Once
 * every notice has been heard, the cache serves no value older than the store's: a read that may
 * have missed a change it was told of is never kept until the next notice.
 */
import { Effect, Layer } from "effect"
import fc from "fast-check"
import { expect, it } from "vitest"
import { makeAccountCache } from "../../src/kernel/AccountCache.ts"
import { AccountNotices, type NoticeFollower } from "../../src/kernel/AccountNotices.ts"

const ACCOUNTS = ["a", "b"] as const

type Step = { readonly kind: "change" | "call"; readonly account: 0 | 1 }

const step: fc.Arbitrary<Step> = fc.record({
  kind: fc.constantFrom("change" as const, "call" as const),
  account: fc.constantFrom(0 as const, 1 as const)
})

it("once every notice is heard, nothing older than the store is served (fast-check scheduler)", async () => {
  await fc.assert(
    fc.asyncProperty(fc.scheduler(), fc.array(step, { minLength: 1, maxLength: 12 }), async (s, steps) => {
      const version = new Map<string, number>(ACCOUNTS.map((a) => [a, 0]))
      const followers = new Set<NoticeFollower>()
      const notices = Layer.succeed(AccountNotices, AccountNotices.of({
        live: () => true,
        tell: (accountId) => Effect.sync(() => followers.forEach((f) => f.changed(accountId))),
        follow: (follower) =>
          Effect.asVoid(Effect.acquireRelease(Effect.sync(() => followers.add(follower)), () => Effect.sync(() => followers.delete(follower))))
      }))
      const when = (label: string) => Effect.promise(() => s.schedule(Promise.resolve(), label))
      // A read's snapshot is taken at one moment, its answer arrives at a later one.
      const read = (accountId: string) =>
        Effect.gen(function*() {
          yield* when(`snapshot ${accountId}`)
          const seen = version.get(accountId)!
          yield* when(`answer ${accountId}`)
          return seen
        })
      await Effect.runPromise(Effect.gen(function*() {
        // ttl 0: only a value kept until its notice is ever served.
        const cache = yield* makeAccountCache(0, read)
        const { tell } = yield* AccountNotices
        const run = ({ account, kind }: Step) => {
          const accountId = ACCOUNTS[account]
          return Effect.andThen(
            when(`${kind} ${accountId}`),
            kind === "call"
              ? Effect.asVoid(cache.through(accountId, 0))
              // Committed, then noticed at some later moment.
              : Effect.andThen(Effect.sync(() => void version.set(accountId, version.get(accountId)! + 1)), Effect.andThen(when(`notice ${accountId}`), tell(accountId)))
          )
        }
        yield* Effect.all([
          Effect.all(steps.map(run), { concurrency: "unbounded", discard: true }),
          Effect.promise(() => s.waitAll())
        ], { concurrency: "unbounded", discard: true })
        for (const accountId of ACCOUNTS) {
          const served = cache.get(accountId, 0)
          if (served._tag === "Some") expect(served.value, `${accountId}: served ${served.value}, the store has ${version.get(accountId)}`).toBe(version.get(accountId))
        }
      }).pipe(Effect.scoped, Effect.provide(notices)))
    }),
    { numRuns: 300 }
  )
}, 120_000)
