/**
 * A database another connection keeps locked past the busy timeout: the store dies with core's
 * StoreUnavailable (an outage the platform answers 503 to), changes nothing, and works again once
 * the lock is gone.
 */
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { DatabaseSync } from "node:sqlite"
import { assert, it } from "@effect/vitest"
import { Cause, Effect, Exit } from "effect"
import { isStoreUnavailableCause, toTimestamp } from "@model-platform/core/kernel"
import { LedgerStore } from "@model-platform/core/ledger"
import { sqliteLedgerStore } from "../src/SqliteLedgerStore.ts"

it.effect("a write behind another connection's lock is StoreUnavailable, then succeeds once the lock is released", () =>
  Effect.gen(function*() {
    const path = join(mkdtempSync(join(tmpdir(), "sqlite-ledger-")), "ledger.db")
    const entry = {
      id: "led_1", account_id: "acct_1", machine_id: null, amount: 5_000_000n,
      type: "credit_added" as const, ref: "order_1", created_at: toTimestamp(Date.UTC(2026, 0, 1))
    }
    yield* Effect.gen(function*() {
      const store = yield* LedgerStore
      const other = new DatabaseSync(path)
      other.exec("BEGIN IMMEDIATE")
      const exit = yield* Effect.exit(store.post(entry))
      assert.isTrue(Exit.isFailure(exit) && isStoreUnavailableCause(exit.cause), `got ${Exit.isFailure(exit) ? Cause.pretty(exit.cause) : "success"}`)
      other.exec("ROLLBACK")
      other.close()
      assert.deepStrictEqual(yield* store.balances("acct_1"), [])
      assert.strictEqual(yield* store.post(entry), "posted")
    }).pipe(Effect.provide(sqliteLedgerStore(path, { busyTimeoutMs: 50 })))
  }))
