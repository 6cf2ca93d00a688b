/**
 * The Lambda shell on the "evm" rail: the API function's handler answers the stablecoin order over
 * HTTP (EvmHttpScenario.ts) on DynamoDB Local, and a second handler on the same table, as the
 * scheduled WatchFunction's container is, runs the deposit watcher's passes (watchDeposits, what
 * lambda.ts's watchHandler calls); a real ERC-20 transfer on anvil pays the order.
 */
import { evmHttpScenario } from "@model-platform/evm/EvmHttpScenario"
import { evmOptionsFor } from "@model-platform/evm/EvmEnvironment"
import { useLocalChain } from "@model-platform/evm/LocalChainFixture"
import { fixtureCatalogue } from "@model-platform/test-harness/Fixtures"
import { MemoryPlatformStores } from "@model-platform/memory-stores/MemoryPlatformStores"
import { describe, expect, it } from "vitest"
import { makeHandler } from "../src/Handler.ts"
import { startLambda } from "./support.ts"

const fixture = useLocalChain()
const CONFIRMATIONS = 3

describe("the Lambda shell on the evm rail", () => {
  it("pays a stablecoin order from a real transfer at the configured confirmation, the watcher running as a scheduled function", async () => {
    const f = fixture()
    const catalogue = { ...fixtureCatalogue, payments: f.payments(CONFIRMATIONS) }
    const evm = evmOptionsFor(catalogue.payments, f.env)
    if ("problems" in evm) throw new Error(evm.problems.join("; "))
    const api = await startLambda(catalogue, { platform: { evm: evm.evm } })
    // WatchFunction: its own container on the same table.
    const watch = makeHandler({ catalogue, ownerEmail: "owner@test.local", dynamo: api.dynamo, platform: { evm: evm.evm } })
    try {
      let passes = 0
      await evmHttpScenario({
        fetch: api.fetch,
        ownerSecret: api.ownerSecret,
        deliver: async () => {
          const reports = await watch.watchDeposits()
          expect(reports.map((r) => r.error)).toEqual([null, null])
          passes++
        }
      }, f, CONFIRMATIONS)
      expect(passes).toBeGreaterThan(3)
      // The API function itself has a watcher too (one platform), but nothing schedules it.
      expect((await api.handler.watchDeposits()).map((r) => r.applied)).toEqual([0, 0])
    } finally {
      await watch.dispose()
      await api.close()
    }
  }, 120_000)

  it("a platform on another rail has no watcher: a scheduled pass does nothing", async () => {
    const handler = makeHandler({ catalogue: fixtureCatalogue, ownerEmail: "owner@test.local", stores: MemoryPlatformStores })
    try {
      expect(await handler.watchDeposits()).toEqual([])
    } finally {
      await handler.dispose()
    }
  })
})
