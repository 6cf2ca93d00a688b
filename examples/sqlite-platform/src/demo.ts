/**
 * The ledger as a library, without HTTP: credits added, a call's cost held, settled at its real
 * cost, and the balance read, on the SQLite store.
 *
 *   node src/demo.ts [database path]     (":memory:" when none)
 */
import { Effect, Layer } from "effect"
import { Ledger } from "@model-platform/core/ledger"
import { toTimestamp } from "@model-platform/core/kernel"
import { sqliteLedgerStore } from "./SqliteLedgerStore.ts"

/** Micro-credits: 1 credit is 1,000,000. */
const credits = (n: bigint) => n * 1_000_000n

export const demo = Effect.gen(function*() {
  const ledger = yield* Ledger
  const account = "acct_demo"
  yield* ledger.credit(account, { ref: "order_1", machine_id: null, amount: credits(10n), type: "credit_added" })
  // Hold at most 2 credits for a call, for up to 5 minutes.
  const expiresAt = toTimestamp(Date.now() + 5 * 60_000)
  const held = yield* ledger.reserve(account, null, credits(2n), expiresAt)
  if (held._tag !== "Reserved") return yield* Effect.die(new Error(`not reserved: ${held._tag}`))
  const whileHeld = yield* ledger.balance(account)
  // The call cost 1.25 credits: that is charged, the rest of the hold released.
  const settled = yield* ledger.settle(held.ref, 1_250_000n)
  const after = yield* ledger.balance(account)
  return { whileHeld, settled: settled._tag, after }
})

/** The ledger over a SQLite database at `path`. */
export const ledgerOn = (path: string) => Ledger.layer.pipe(Layer.provide(sqliteLedgerStore(path)))

if (import.meta.main) {
  const result = await Effect.runPromise(demo.pipe(Effect.provide(ledgerOn(process.argv[2] ?? ":memory:"))))
  console.log(JSON.stringify(result, (_, v) => typeof v === "bigint" ? v.toString() : v, 2))
}
