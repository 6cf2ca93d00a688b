/**
 * One local chain per test file (anvil starts in beforeAll and stops in afterAll) with the test
 * tokens deployed: USDC and USDT (6 decimals, both accepted by the catalogue it makes) and OTHER
 * (a token nobody accepts), and the catalogue's `payments` for the "evm" rail on it, with a fresh
 * deposit key per file (its xpub for the rail; its private key only for what a test's wallet does).
 */
import { randomBytes } from "node:crypto"
import type { Address } from "viem"
import { HDKey } from "viem/accounts"
import { afterAll, beforeAll } from "vitest"
import type { CatalogueConfig } from "@model-platform/core/catalogue"
import { type Anvil, startAnvil } from "./Anvil.ts"
import { type LocalChain, localChain } from "./LocalChain.ts"

/** The chain's name in the catalogue of these tests. */
export const CHAIN = "anvil"
export const RPC_URL_ENV = "ANVIL_RPC_URL"
export const XPUB_ENV = "DEPOSIT_XPUB"

export interface LocalChainFixture {
  readonly rpcUrl: string
  readonly chain: LocalChain
  readonly tokens: { readonly USDC: Address; readonly USDT: Address; readonly OTHER: Address }
  /** The deposit key's master (a wallet's): `xpub` is its account m/44'/60'/0'. */
  readonly master: HDKey
  readonly xpub: string
  /** The catalogue's payments for the "evm" rail on this chain. */
  readonly payments: (confirmations: number) => CatalogueConfig["payments"]
  /** The environment a shell reads the chain's RPC URL and xpub from. */
  readonly env: Record<string, string>
}

export const useLocalChain = (): (() => LocalChainFixture) => {
  let anvil: Anvil | undefined
  let fixture: LocalChainFixture | undefined
  beforeAll(async () => {
    anvil = await startAnvil()
    const chain = localChain(anvil.rpcUrl)
    const tokens = {
      USDC: await chain.deployToken("USDC", 6),
      USDT: await chain.deployToken("USDT", 6),
      OTHER: await chain.deployToken("OTHER", 6)
    }
    const master = HDKey.fromMasterSeed(randomBytes(32))
    const xpub = master.derive("m/44'/60'/0'").publicExtendedKey
    fixture = {
      rpcUrl: anvil.rpcUrl,
      chain,
      tokens,
      master,
      xpub,
      payments: (confirmations) => ({
        card: { processor: "test" },
        stablecoin: {
          processor: "evm",
          options: [
            { chain: CHAIN, token: "USDC", decimals: 6, contract: tokens.USDC },
            { chain: CHAIN, token: "USDT", decimals: 6, contract: tokens.USDT }
          ],
          evm: { [CHAIN]: { confirmations, rpc_url_env: RPC_URL_ENV, xpub_env: XPUB_ENV, start_block: 0 } }
        },
        charging_starts_at: null
      }),
      env: { [RPC_URL_ENV]: anvil.rpcUrl, [XPUB_ENV]: xpub }
    }
  }, 60_000)
  afterAll(async () => {
    await anvil?.stop()
  })
  return () => {
    if (fixture === undefined) throw new Error("the local chain is not running (useLocalChain's beforeAll has not run)")
    return fixture
  }
}
