/**
 * Trying the "evm" stablecoin rail by hand on a local chain (docs/payments.md "Trying it on a local
 * chain"): anvil from npm, the 6-decimal test tokens, a deposit wallet, and real token transfers.
 *
 *   ./platform node scripts/evm-local.ts chain
 *       starts anvil on 127.0.0.1:8545, deploys USDC and USDT (6 decimals), makes a deposit
 *       wallet, writes .data/evm-local.json (what `send` reads) and .data/catalogue.evm.json (the
 *       demo catalogue on the "evm" rail), and prints the variables to start the platform with.
 *       Runs until Ctrl-C; the chain is gone after (start the platform on a fresh DATA_DIR then).
 *
 *   ./platform node scripts/evm-local.ts send --to 0x… --amount 25 [--token USDC] [--mine 2]
 *       sends a real transfer of the token from one of anvil's funded accounts to the address
 *       (the order's payment.deposit.address), then mines --mine more blocks (confirmations).
 *
 *   ./platform node scripts/evm-local.ts mine --blocks 3
 *
 * Options of send and mine: --rpc and --contract (default: from .data/evm-local.json), --json.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { dirname, join, resolve } from "node:path"
import { parseArgs } from "node:util"
import { startAnvil } from "../adapters/evm/src/Anvil.ts"
import { localChain, newDepositWallet } from "../adapters/evm/src/LocalChain.ts"

const ROOT = resolve(import.meta.dirname, "..")
const STATE = join(ROOT, ".data", "evm-local.json")
const CATALOGUE = join(ROOT, ".data", "catalogue.evm.json")
const PORT = 8545
const CONFIRMATIONS = 2

const usage = `usage: ./platform node scripts/evm-local.ts chain
       ./platform node scripts/evm-local.ts send --to <address> --amount <decimal> [--token USDC|USDT] [--mine <blocks>]
       ./platform node scripts/evm-local.ts mine --blocks <n>
Options of send and mine: --rpc <url> --contract <token address> (default: from .data/evm-local.json), --json.`

const fail = (message: string): never => {
  console.error(message)
  process.exit(1)
}

const [command, ...rest] = process.argv.slice(2)
const { values } = parseArgs({
  args: rest,
  options: {
    to: { type: "string" },
    amount: { type: "string" },
    token: { type: "string", default: "USDC" },
    mine: { type: "string", default: "0" },
    blocks: { type: "string", default: "1" },
    rpc: { type: "string" },
    contract: { type: "string" },
    json: { type: "boolean", default: false }
  }
})

interface State {
  readonly rpcUrl: string
  readonly tokens: Record<string, `0x${string}`>
}

const readState = (): State | undefined => {
  try {
    return JSON.parse(readFileSync(STATE, "utf8")) as State
  } catch {
    return undefined
  }
}

/** "25" or "25.5" in base units of a 6-decimal token, exactly (never through a float). */
const baseUnits = (text: string): bigint => {
  const match = /^(\d+)(?:\.(\d{1,6}))?$/.exec(text)
  if (match === null) return fail(`--amount must be a positive decimal with at most 6 decimals, e.g. 25 or 4.5; got ${JSON.stringify(text)}`)
  const units = BigInt(match[1]!) * 1_000_000n + BigInt((match[2] ?? "").padEnd(6, "0"))
  return units > 0n ? units : fail("--amount must be above 0")
}

const blocksOf = (text: string, option: string): number => {
  const n = Number(text)
  return Number.isInteger(n) && n >= 0 && n <= 10_000 ? n : fail(`--${option} must be a whole number of blocks (0 to 10000)`)
}

const target = () => {
  const state = readState()
  const rpcUrl = values.rpc ?? state?.rpcUrl ?? fail(`No chain: run "./platform node scripts/evm-local.ts chain" first, or pass --rpc.\n${usage}`)
  return { state, rpcUrl }
}

const chainCommand = async () => {
  const anvil = await startAnvil({ port: PORT }).catch((error: unknown) =>
    fail(`Cannot start anvil on port ${PORT} (is one running already?): ${error instanceof Error ? error.message : String(error)}`))
  const chain = localChain(anvil.rpcUrl)
  const tokens = { USDC: await chain.deployToken("USDC", 6), USDT: await chain.deployToken("USDT", 6) }
  // The deposit wallet: its xpub goes to the platform; its mnemonic stays here, to sweep by hand.
  const { mnemonic, xpub } = newDepositWallet()
  const demo = JSON.parse(readFileSync(join(ROOT, "adapters", "node-http", "catalogue.demo.json"), "utf8"))
  const catalogue = {
    ...demo,
    payments: {
      ...demo.payments,
      stablecoin: {
        processor: "evm",
        options: [
          { chain: "local", token: "USDC", decimals: 6, contract: tokens.USDC },
          { chain: "local", token: "USDT", decimals: 6, contract: tokens.USDT }
        ],
        evm: { local: { confirmations: CONFIRMATIONS, rpc_url_env: "LOCAL_RPC_URL", xpub_env: "DEPOSIT_XPUB", start_block: 0 } }
      }
    }
  }
  mkdirSync(dirname(STATE), { recursive: true })
  writeFileSync(STATE, JSON.stringify({ rpcUrl: anvil.rpcUrl, tokens } satisfies State, null, 2) + "\n")
  writeFileSync(CATALOGUE, JSON.stringify(catalogue, null, 2) + "\n")
  console.log([
    `A local chain (anvil) is running at ${anvil.rpcUrl}, chain id 31337; each block mined on demand.`,
    `Tokens (6 decimals): USDC ${tokens.USDC}, USDT ${tokens.USDT}.`,
    `The catalogue on the "evm" rail is ${CATALOGUE} (chain "local", ${CONFIRMATIONS} confirmations).`,
    "",
    "Start the platform on it (a fresh data directory: this chain is new):",
    "",
    `    CATALOGUE_FILE=${CATALOGUE} LOCAL_RPC_URL=${anvil.rpcUrl} DEPOSIT_XPUB=${xpub} DATA_DIR=.data/evm ./platform start`,
    "",
    "then open an order, pay it with {\"method\":\"stablecoin\",\"chain\":\"local\",\"token\":\"USDC\"}, and send to its address:",
    "",
    "    ./platform node scripts/evm-local.ts send --to <payment.deposit.address> --amount 25 --mine 1",
    "",
    `The deposit wallet's mnemonic (a throwaway for this chain; its address i is m/44'/60'/0'/0/i, to sweep by hand):`,
    "",
    `    ${mnemonic}`,
    "",
    "Ctrl-C stops the chain."
  ].join("\n"))
  const stop = async () => {
    await anvil.stop()
    process.exit(0)
  }
  process.on("SIGINT", stop)
  process.on("SIGTERM", stop)
  await new Promise(() => {})
}

const sendCommand = async () => {
  const { state, rpcUrl } = target()
  const to = values.to ?? fail(`--to is required.\n${usage}`)
  if (!/^0x[0-9a-fA-F]{40}$/.test(to)) fail(`--to must be an address (0x and 40 hex digits); got ${JSON.stringify(to)}`)
  const amount = baseUnits(values.amount ?? fail(`--amount is required.\n${usage}`))
  const contract = (values.contract ?? state?.tokens[values.token] ??
    fail(`No contract for ${values.token}: pass --contract, or use USDC or USDT of .data/evm-local.json.`)) as `0x${string}`
  const mine = blocksOf(values.mine, "mine")
  const chain = localChain(rpcUrl)
  const sent = await chain.transfer(contract, 1, to, amount).catch((error: unknown) =>
    fail(`The transfer failed on ${rpcUrl}: ${error instanceof Error ? error.message.split("\n")[0] : String(error)}`))
  if (mine > 0) await chain.mine(mine)
  const head = await chain.head()
  const result = {
    tx: sent.hash,
    block: Number(sent.blockNumber),
    confirmations: Number(head - sent.blockNumber) + 1,
    to,
    token: values.token,
    amount: values.amount,
    balance: (await chain.balanceOf(contract, to)).toString()
  }
  if (values.json) console.log(JSON.stringify(result, null, 2))
  else {
    console.log(`Sent ${values.amount} ${values.token} to ${to} in tx ${sent.hash} (block ${result.block}, ${result.confirmations} confirmation(s) now).`)
    console.log(`The address holds ${result.balance} base units of ${values.token}. The platform pays the order once the block has its confirmations.`)
  }
}

const mineCommand = async () => {
  const { rpcUrl } = target()
  const blocks = blocksOf(values.blocks, "blocks")
  const chain = localChain(rpcUrl)
  await chain.mine(blocks)
  console.log(`Mined ${blocks} block(s); the head is now block ${await chain.head()}.`)
}

switch (command) {
  case "chain":
    await chainCommand()
    break
  case "send":
    await sendCommand()
    break
  case "mine":
    await mineCommand()
    break
  default:
    console.log(usage)
    process.exit(command === undefined || command === "--help" || command === "-h" ? 0 : 2)
}
