/**
 * Rebuilds adapters/evm/contracts/TestToken.json from TestToken.sol (src/TestTokenBuild.ts):
 *
 *   ./platform node scripts/build-test-token.ts
 */
import { writeFileSync } from "node:fs"
import { ARTIFACT, compileTestToken } from "../adapters/evm/src/TestTokenBuild.ts"

const build = await compileTestToken()
writeFileSync(ARTIFACT, JSON.stringify(build, null, 2) + "\n")
console.log(`wrote ${ARTIFACT} (solc ${build.compiler}, ${(build.bytecode.length - 2) / 2} bytes)`)
