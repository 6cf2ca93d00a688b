/**
 * The committed build of the test token (contracts/TestToken.json) is what its source compiles to
 * with the pinned solc and OpenZeppelin: a change to either without a rebuild
 * (`./platform node scripts/build-test-token.ts`) fails here.
 */
import { readFileSync } from "node:fs"
import { describe, expect, it } from "vitest"
import { ARTIFACT, compileTestToken } from "../src/TestTokenBuild.ts"

describe("the test token's committed build", () => {
  it("matches a fresh compile of contracts/TestToken.sol", async () => {
    const committed = JSON.parse(readFileSync(ARTIFACT, "utf8"))
    const fresh = await compileTestToken()
    expect(committed.compiler).toBe(fresh.compiler)
    expect(committed.abi).toEqual(fresh.abi)
    expect(committed.bytecode).toBe(fresh.bytecode)
    expect(fresh.abi.map((item) => (item as { name?: string }).name)).toEqual(expect.arrayContaining(["decimals", "transfer", "mint", "Transfer"]))
  }, 60_000)
})
