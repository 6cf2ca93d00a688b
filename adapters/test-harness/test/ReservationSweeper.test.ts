/**
 * The reservation sweeper frees credits held by calls that never came back: once a reservation's
 * expires_at passes, the next sweep releases it, the balance shows the credits again, and a late
 * settle charges nothing.
 */
import { describe, expect, it } from "@effect/vitest"
import { Ledger, ReservationSweeper } from "@model-platform/core/ledger"
import { Time } from "@model-platform/core/kernel"
import { Clock, Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { LedgerStoreMemory } from "@model-platform/memory-stores/MemoryLedgerStore"

const LedgerMemory = Ledger.layer.pipe(Layer.provide(LedgerStoreMemory))
const credits = (n: number) => BigInt(n) * 1_000_000n

describe("ReservationSweeper", () => {
  it.effect("releases a reservation past its expiry on the next sweep, and only then", () =>
    Effect.gen(function*() {
      const ledger = yield* Ledger
      yield* ledger.credit("acct", { ref: "order:1", machine_id: null, amount: credits(10), type: "credit_added" })
      const now = yield* Clock.currentTimeMillis
      const reserved = yield* ledger.reserve("acct", "m1", credits(4), Time.toTimestamp(now + 60_000))
      expect(reserved._tag).toBe("Reserved")
      yield* Layer.build(ReservationSweeper.layer({ intervalMs: 30_000 }))

      expect((yield* ledger.balance("acct")).total_credits).toBe(6)
      yield* TestClock.adjust("30 seconds") // a sweep before expiry changes nothing
      expect((yield* ledger.balance("acct")).total_credits).toBe(6)
      yield* TestClock.adjust("60 seconds") // past expires_at: the next sweep frees it
      expect((yield* ledger.balance("acct")).total_credits).toBe(10)

      if (reserved._tag !== "Reserved") return
      const late = yield* ledger.settle(reserved.ref, credits(4))
      expect(late._tag).not.toBe("Settled")
      expect((yield* ledger.balance("acct")).total_credits).toBe(10)
      expect(yield* ledger.audit("acct")).toEqual([])
    }).pipe(Effect.scoped, Effect.provide(LedgerMemory)))

  it.effect("a failing store is logged and retried, never fatal", () =>
    Effect.gen(function*() {
      const failing = Layer.succeed(Ledger, { expireDue: Effect.die(new Error("store down")) } as unknown as Ledger["Service"])
      const swept = yield* ReservationSweeper.sweepOnce.pipe(Effect.provide(failing))
      expect(swept).toBe(0)
    }))
})
