/**
 * A database another connection keeps locked past the busy timeout: the store (the ledger alone,
 * or the gateway's over every store) dies with core's StoreUnavailable (an outage the platform
 * answers 503 to), changes nothing, and works again once the lock is gone.
 */
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { DatabaseSync } from "node:sqlite"
import { assert, it } from "@effect/vitest"
import { Cause, Effect, Exit } from "effect"
import { isStoreUnavailableCause, toTimestamp } from "@model-platform/core/kernel"
import { LedgerStore } from "@model-platform/core/ledger"
import { type Admission, GatewayStore } from "@model-platform/core/gateway"
import { AccountStore, KeyStore } from "@model-platform/core/keys"
import { sqliteLedgerStore } from "../src/SqliteLedgerStore.ts"
import { sqliteStores } from "../src/SqliteStores.ts"

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

it.effect("an admission behind another connection's lock is StoreUnavailable and counts nothing; once released it is admitted", () =>
  Effect.gen(function*() {
    const path = join(mkdtempSync(join(tmpdir(), "sqlite-platform-")), "platform.db")
    yield* Effect.gen(function*() {
      const gateway = yield* GatewayStore
      const at = toTimestamp(Date.UTC(2026, 0, 1))
      yield* (yield* AccountStore).insert({ id: "acct_1", email: "one@example.test", created_at: at })
      yield* (yield* KeyStore).insert({
        id: "key_1", account_id: "acct_1", name: "k", prefix: "mpk_abcdefgh", secret_hash: "hash_1", permissions: ["inference"],
        machine_id: null, subscription_id: null, rental_id: null, agent_id: null, created_at: at, last_used_at: null, revoked_at: null
      })
      const admission: Admission = {
        account_id: "acct_1", key_id: "key_1", touch_at: undefined, reservation: undefined,
        rate: { bucket: "rpm:key_1", window_start: 0, window_ms: 60_000, limit: 10 }
      }
      const other = new DatabaseSync(path)
      other.exec("BEGIN IMMEDIATE")
      const exit = yield* Effect.exit(gateway.admit([admission]))
      assert.isTrue(Exit.isFailure(exit) && isStoreUnavailableCause(exit.cause), `got ${Exit.isFailure(exit) ? Cause.pretty(exit.cause) : "success"}`)
      other.exec("ROLLBACK")
      other.close()
      assert.deepStrictEqual(yield* gateway.admit([admission]), [{ _tag: "Admitted", count: 1, reserved: undefined }])
    }).pipe(Effect.provide(sqliteStores(path, { busyTimeoutMs: 50 })))
  }))
