/**
 * What the installed packages offer, as Node itself resolves them (a child process, not the test
 * runner's resolver): every area entry of core, the memory stores and the PostgreSQL and DynamoDB
 * stores' entries import; a file behind an entry does not.
 */
import { execFileSync } from "node:child_process"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { assert, it } from "vitest"

const nodeImports = (specifiers: ReadonlyArray<string>): Record<string, string> =>
  JSON.parse(execFileSync(process.execPath, [
    "--input-type=module",
    "-e",
    `const out = {}
     for (const s of ${JSON.stringify(specifiers)}) {
       try { out[s] = Object.keys(await import(s)).length > 0 ? "ok" : "empty" } catch (e) { out[s] = e.code ?? String(e) }
     }
     console.log(JSON.stringify(out))`
  ], { encoding: "utf8" }))

it("every area of core and the stores' entries import from the installed packages", () => {
  const manifest = join(import.meta.dirname, "../node_modules/@model-platform/core/package.json")
  const areas = Object.entries(JSON.parse(readFileSync(manifest, "utf8")).exports as Record<string, unknown>)
    .filter(([, target]) => target !== null)
    .map(([entry]) => `@model-platform/core/${entry.slice(2)}`)
  assert.include(areas, "@model-platform/core/http")
  const specifiers = [
    ...areas,
    "@model-platform/memory-stores/MemoryPlatformStores",
    "@model-platform/postgres-stores",
    "@model-platform/postgres-stores/database",
    "@model-platform/dynamodb-stores"
  ]
  assert.deepStrictEqual(nodeImports(specifiers), Object.fromEntries(specifiers.map((s) => [s, "ok"])))
})

it("files behind an entry and ./internal are not exported", () => {
  const hidden = [
    "@model-platform/core/ledger/Ledger.js",
    "@model-platform/core/internal/x",
    "@model-platform/core/src/ledger/index.ts",
    "@model-platform/postgres-stores/PgLedgerStore.js",
    "@model-platform/dynamodb-stores/DynamoTable.js"
  ]
  assert.deepStrictEqual(nodeImports(hidden), Object.fromEntries(hidden.map((s) => [s, "ERR_PACKAGE_PATH_NOT_EXPORTED"])))
})
