/**
 * Driving a local anvil chain (Anvil.ts) with viem, for tests and the by-hand script: deploy the
 * test token (contracts/TestToken.sol, built into TestToken.json), mint, transfer from anvil's
 * funded accounts, mine blocks, and reorganise the chain (anvil_reorg replaces the newest blocks
 * with empty ones, anvil_rollback removes them: their transactions are gone either way until they
 * are sent again).
 */
import { pbkdf2Sync } from "node:crypto"
import { readFileSync } from "node:fs"
import {
  type Abi,
  createTestClient,
  createWalletClient,
  http,
  type Hash,
  publicActions,
  type Address
} from "viem"
import { english, generateMnemonic, HDKey, mnemonicToAccount } from "viem/accounts"
import { foundry } from "viem/chains"
import { ARTIFACT } from "./TestTokenBuild.ts"

/** anvil's accounts, each funded with 10000 ETH. */
export const ANVIL_MNEMONIC = "test test test test test test test test test test test junk"

const build = JSON.parse(readFileSync(ARTIFACT, "utf8")) as { readonly abi: Abi; readonly bytecode: Hash }
export const TEST_TOKEN_ABI = build.abi

export interface SentTransfer {
  readonly hash: Hash
  readonly blockNumber: bigint
  readonly blockHash: Hash
}

export const localChain = (rpcUrl: string) => {
  const transport = http(rpcUrl, { retryCount: 0 })
  const client = createTestClient({ chain: foundry, mode: "anvil", transport, cacheTime: 0 }).extend(publicActions)
  /** anvil's funded account i (m/44'/60'/0'/0/i of its mnemonic). */
  const account = (i: number) => mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: i })
  const wallet = (i: number) => createWalletClient({ chain: foundry, transport, account: account(i) })

  const mined = async (hash: Hash): Promise<SentTransfer> => {
    const receipt = await client.waitForTransactionReceipt({ hash, pollingInterval: 20 })
    if (receipt.status !== "success") throw new Error(`transaction ${hash} reverted`)
    return { hash, blockNumber: receipt.blockNumber, blockHash: receipt.blockHash }
  }

  return {
    client,
    account,
    /** Deploys a TestToken (by account 0) and answers its address. */
    deployToken: async (symbol: string, decimals: number): Promise<Address> => {
      const hash = await wallet(0).deployContract({ abi: TEST_TOKEN_ABI, bytecode: build.bytecode, args: [`Test ${symbol}`, symbol, decimals] })
      const receipt = await client.waitForTransactionReceipt({ hash, pollingInterval: 20 })
      if (receipt.contractAddress === null || receipt.contractAddress === undefined) throw new Error("no contract deployed")
      return receipt.contractAddress
    },
    mint: async (token: Address, to: Address, amount: bigint) =>
      mined(await wallet(0).writeContract({ address: token, abi: TEST_TOKEN_ABI, functionName: "mint", args: [to, amount] })),
    /** A transfer from anvil's account `from` (minted to it first when short). */
    transfer: async (token: Address, from: number, to: Address | string, amount: bigint): Promise<SentTransfer> => {
      const sender = account(from).address
      const balance = await client.readContract({ address: token, abi: TEST_TOKEN_ABI, functionName: "balanceOf", args: [sender] }) as bigint
      if (balance < amount) await mined(await wallet(0).writeContract({ address: token, abi: TEST_TOKEN_ABI, functionName: "mint", args: [sender, amount] }))
      return mined(await wallet(from).writeContract({ address: token, abi: TEST_TOKEN_ABI, functionName: "transfer", args: [to as Address, amount] }))
    },
    balanceOf: (token: Address, owner: Address | string) =>
      client.readContract({ address: token, abi: TEST_TOKEN_ABI, functionName: "balanceOf", args: [owner as Address] }) as Promise<bigint>,
    head: () => client.getBlockNumber({ cacheTime: 0 }),
    mine: (blocks: number) => client.mine({ blocks }),
    /** The newest `depth` blocks replaced by as many empty ones (their transfers undone). */
    reorg: (depth: number) => client.request({ method: "anvil_reorg" as never, params: [depth, []] as never }),
    /** The newest `depth` blocks removed. */
    rollback: (depth: number) => client.request({ method: "anvil_rollback" as never, params: [depth] as never }),
    /** Sets the time of the next block (seconds since the epoch). */
    setNextBlockTime: (seconds: number) => client.setNextBlockTimestamp({ timestamp: BigInt(seconds) })
  }
}

export type LocalChain = ReturnType<typeof localChain>

/**
 * A new deposit wallet for a local chain: its mnemonic (BIP-39, to sweep by hand with any wallet)
 * and the xpub of its first Ethereum account, m/44'/60'/0', which the platform derives from.
 */
export const newDepositWallet = (): { readonly mnemonic: string; readonly xpub: string } => {
  const mnemonic = generateMnemonic(english)
  const seed = pbkdf2Sync(mnemonic.normalize("NFKD"), "mnemonic", 2048, 64, "sha512")
  return { mnemonic, xpub: HDKey.fromMasterSeed(seed).derive("m/44'/60'/0'").publicExtendedKey }
}
