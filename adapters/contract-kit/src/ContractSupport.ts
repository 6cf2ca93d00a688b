/**
 * What the store contracts share: asserting a defect (a store refusing input that breaks its
 * port's rules dies, as a violated constraint does in SQL), and a fresh account with credits.
 */
import { assert } from "@effect/vitest"
import { Cause, Effect, Exit } from "effect"
import { generateId } from "@model-platform/core/kernel"
import { LedgerStore } from "@model-platform/core/ledger"
import type { Timestamp } from "@model-platform/core/kernel"

/** Runs `effect` and asserts it died (a defect), not failed or succeeded. */
export const assertDies = <A, E, R>(effect: Effect.Effect<A, E, R>, what: string) =>
  Effect.gen(function*() {
    const exit = yield* Effect.exit(effect)
    assert.isTrue(Exit.isFailure(exit) && Cause.hasDies(exit.cause), `${what}: expected a defect, got ${exit}`)
  })

/** A fresh account id with `amount` account-wide credits posted at `at` (none for 0). */
export const fundedAccount = Effect.fnUntraced(function*(amount: bigint, at: Timestamp) {
  const store = yield* LedgerStore
  const account = yield* generateId("acct")
  if (amount > 0n) {
    const posted = yield* store.post({
      id: yield* generateId("led"),
      account_id: account,
      machine_id: null,
      amount,
      type: "credit_added",
      ref: yield* generateId("order"),
      created_at: at
    })
    assert.strictEqual(posted, "posted")
  }
  return account
})
