/** The demo (src/demo.ts): the ledger called directly, on a file the next run reads again. */
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { assert, it } from "@effect/vitest"
import { Effect } from "effect"
import { Ledger } from "@model-platform/core/ledger"
import { demo, ledgerOn } from "../src/demo.ts"

it.effect("credit 10, hold 2, settle at 1.25: 8.75 credits left, and a second process sees them", () =>
  Effect.gen(function*() {
    const path = join(mkdtempSync(join(tmpdir(), "sqlite-ledger-")), "ledger.db")
    const result = yield* demo.pipe(Effect.provide(ledgerOn(path)))
    assert.strictEqual(result.whileHeld.total_credits, 8)
    assert.strictEqual(result.settled, "Settled")
    assert.strictEqual(result.after.total_credits, 8.75)
    // A new connection (as another process would open) reads what was committed.
    const reread = yield* Effect.gen(function*() {
      return yield* (yield* Ledger).balance("acct_demo")
    }).pipe(Effect.provide(ledgerOn(path)))
    assert.deepStrictEqual(reread, result.after)
  }))
