/**
 * The Node server on the "evm" rail (main.ts's wiring: evmOptionsFor, the watcher's loop): a
 * stablecoin order paid by a real ERC-20 transfer on anvil, over HTTP (EvmHttpScenario.ts), the
 * watcher running on its own every 100 ms. Also the start refused without the chain's settings.
 */
import { evmHttpScenario } from "@model-platform/evm/EvmHttpScenario"
import { evmOptionsFor } from "@model-platform/evm/EvmEnvironment"
import { RPC_URL_ENV, useLocalChain, XPUB_ENV } from "@model-platform/evm/LocalChainFixture"
import { fixtureCatalogue } from "@model-platform/test-harness/Fixtures"
import { Layer } from "effect"
import { describe, expect, it } from "vitest"
import * as Database from "@model-platform/postgres-stores/database"
import { PgPlatformStores } from "@model-platform/postgres-stores"
import { startNodeServer } from "./support.ts"

const fixture = useLocalChain()
const CONFIRMATIONS = 3
const INTERVAL_MS = 100

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

describe("the Node server on the evm rail", () => {
  it("pays a stablecoin order from a real transfer at the configured confirmation, its watcher running on its own", async () => {
    const f = fixture()
    const catalogue = { ...fixtureCatalogue, payments: f.payments(CONFIRMATIONS) }
    const evm = evmOptionsFor(catalogue.payments, f.env)
    if ("problems" in evm) throw new Error(evm.problems.join("; "))
    const shell = await startNodeServer(
      catalogue,
      PgPlatformStores.pipe(Layer.provide(Database.layer({ dataDir: Database.MEMORY }))),
      { platform: { evm: evm.evm, watchDeposits: { intervalMs: INTERVAL_MS } } }
    )
    try {
      await evmHttpScenario({
        fetch: shell.fetch,
        ownerSecret: shell.ownerSecret,
        // The loop passes every 100 ms: several passes see the chain as it is now.
        deliver: () => sleep(INTERVAL_MS * 8),
        until: async (check) => {
          const deadline = Date.now() + 20_000
          while (!(await check())) {
            if (Date.now() > deadline) throw new Error("the watcher did not pay the order in 20 s")
            await sleep(INTERVAL_MS)
          }
        }
      }, f, CONFIRMATIONS)
    } finally {
      await shell.close()
    }
  }, 60_000)

  it("refuses to start without the chain's RPC URL or with a private key instead of an xpub, naming the variable", () => {
    const f = fixture()
    const payments = f.payments(CONFIRMATIONS)
    const missing = evmOptionsFor(payments, { [XPUB_ENV]: f.xpub })
    expect(missing).toEqual({ problems: [`${RPC_URL_ENV} (the JSON-RPC URL of anvil) is not set`] })
    const xprv = f.master.derive("m/44'/60'/0'").privateExtendedKey
    const secret = evmOptionsFor(payments, { ...f.env, [XPUB_ENV]: xprv })
    expect("problems" in secret && secret.problems.join(" ")).toMatch(new RegExp(`^${XPUB_ENV}: it is an extended PRIVATE key`))
    // The key itself is never in the message.
    expect(JSON.stringify(secret)).not.toContain(xprv)
    expect(evmOptionsFor(fixtureCatalogue.payments, {})).toEqual({ evm: undefined })
  })
})
