/**
 * Compiles contracts/TestToken.sol (OpenZeppelin's ERC-20 with chosen decimals) with solc-js, the
 * exact compiler its pragma names, reading OpenZeppelin's sources from the installed package. Used
 * by scripts/build-test-token.ts (the repository root) to write contracts/TestToken.json, and by a test that checks the
 * committed build still matches the source. Needs the package's dev dependencies (solc,
 * @openzeppelin/contracts): tests and the build script only.
 */
import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"

export const CONTRACTS = join(import.meta.dirname, "..", "contracts")
export const SOURCE = join(CONTRACTS, "TestToken.sol")
export const ARTIFACT = join(CONTRACTS, "TestToken.json")

export interface TestTokenBuild {
  readonly compiler: string
  readonly abi: ReadonlyArray<unknown>
  readonly bytecode: `0x${string}`
}

export const compileTestToken = async (): Promise<TestTokenBuild> => {
  const require = createRequire(import.meta.url)
  const solc = require("solc") as { compile: (input: string, callbacks: object) => string; version: () => string }
  const openZeppelin = dirname(require.resolve("@openzeppelin/contracts/package.json"))
  const input = {
    language: "Solidity",
    sources: { "TestToken.sol": { content: readFileSync(SOURCE, "utf8") } },
    settings: { optimizer: { enabled: true, runs: 200 }, outputSelection: { "*": { "*": ["abi", "evm.bytecode.object"] } } }
  }
  const findImports = (path: string) =>
    path.startsWith("@openzeppelin/contracts/")
      ? { contents: readFileSync(join(openZeppelin, path.slice("@openzeppelin/contracts/".length)), "utf8") }
      : { error: `not found: ${path}` }
  const output = JSON.parse(solc.compile(JSON.stringify(input), { import: findImports }))
  const errors = (output.errors ?? []).filter((e: { severity: string }) => e.severity === "error")
  if (errors.length > 0) throw new Error(errors.map((e: { formattedMessage: string }) => e.formattedMessage).join("\n"))
  const contract = output.contracts["TestToken.sol"].TestToken
  return { compiler: solc.version(), abi: contract.abi, bytecode: `0x${contract.evm.bytecode.object}` }
}
