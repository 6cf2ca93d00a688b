/**
 * scripts/evm-local.ts, the by-hand sender of the "evm" rail: `send` makes a real token transfer
 * on a local chain (here the test file's anvil, named with --rpc and --contract) and mines the
 * confirmations asked for; an amount that is not exact is refused before anything is sent.
 */
import { execFile } from "node:child_process"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { describe, expect, it } from "vitest"
import { useLocalChain } from "../src/LocalChainFixture.ts"

const script = fileURLToPath(new URL("../../../scripts/evm-local.ts", import.meta.url))
const run = promisify(execFile)
const fixture = useLocalChain()

describe("scripts/evm-local.ts", () => {
  it("send: a real transfer of the token to the address, then the blocks asked for", async () => {
    const f = fixture()
    const to = f.chain.account(9).address
    const before = await f.chain.balanceOf(f.tokens.USDC, to)
    const { stdout } = await run(process.execPath, [
      script, "send", "--rpc", f.rpcUrl, "--contract", f.tokens.USDC, "--to", to, "--amount", "4.5", "--mine", "2", "--json"
    ])
    const result = JSON.parse(stdout)
    expect(result).toMatchObject({ to, token: "USDC", amount: "4.5", confirmations: 3 })
    expect(await f.chain.balanceOf(f.tokens.USDC, to)).toBe(before + 4_500_000n)
    const receipt = await f.chain.client.getTransactionReceipt({ hash: result.tx })
    expect(receipt.status).toBe("success")
    expect(Number(await f.chain.head())).toBe(result.block + 2)
  }, 60_000)

  it("an amount with more than the token's 6 decimals, or an address that is not one, is refused and nothing is sent", async () => {
    const f = fixture()
    const head = await f.chain.head()
    for (const [flag, value, message] of [
      ["--amount", "25.0000001", /at most 6 decimals/],
      ["--to", "0x1234", /must be an address/]
    ] as const) {
      const args = { "--to": f.chain.account(9).address, "--amount": "1", [flag]: value }
      const failed = await run(process.execPath, [script, "send", "--rpc", f.rpcUrl, "--contract", f.tokens.USDC, ...Object.entries(args).flat()])
        .then(() => undefined, (error: { code: number; stderr: string }) => error)
      expect(failed?.code).toBe(1)
      expect(failed?.stderr).toMatch(message)
    }
    expect(await f.chain.head()).toBe(head)
  }, 60_000)
})
