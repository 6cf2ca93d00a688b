/**
 * The stablecoin rail contract (StablecoinRailContract.ts) on the "evm" rail: anvil, the test
 * tokens, addresses from an xpub; delivering mines the confirmations and runs a watcher's pass.
 */
import { Context, Effect } from "effect"
import type { Address } from "viem"
import { DepositWatcher, Orders } from "@model-platform/core/payments"
import { LedgerStore } from "@model-platform/core/ledger"
import { stablecoinRailContract } from "@model-platform/test-harness/StablecoinRailContract"
import { CHAIN, useLocalChain } from "../src/LocalChainFixture.ts"
import { makeWorld } from "./evmWorld.ts"

const fixture = useLocalChain()
const CONFIRMATIONS = 2

stablecoinRailContract("the evm rail on anvil", Effect.gen(function*() {
  const f = fixture()
  const world = yield* makeWorld(f, CONFIRMATIONS)
  const context = yield* world.process()
  return {
    chain: CHAIN,
    orders: Context.get(context, Orders),
    credits: (accountId) =>
      Effect.map(Context.get(context, LedgerStore).balances(accountId), (bs) => bs.reduce((n, b) => n + b.posted, 0n)),
    send: (to, token, amount) => Effect.promise(() => f.chain.transfer(f.tokens[token], 1, to as Address, amount)),
    deliver: Effect.gen(function*() {
      yield* Effect.promise(() => f.chain.mine(CONFIRMATIONS - 1))
      const reports = yield* Context.get(context, DepositWatcher).pass
      for (const r of reports) if (r.error !== null) yield* Effect.die(new Error(r.error))
    })
  }
}))
