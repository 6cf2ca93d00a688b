/**
 * The dependency rule (docs/architecture.md "Areas"): core is pure Effect and reaches the outside world only
 * through its ports. No file under core/src may import an adapter, a driver (@effect/sql-pg,
 * @effect/platform-node, @aws-sdk/*, @electric-sql/*, stripe) or a Node module; core/package.json may not
 * depend on one either. The scanner is unit-tested below, so a violation really fails the suite.
 */
import { readdirSync, readFileSync } from "node:fs"
import { builtinModules } from "node:module"
import { dirname, join, relative, resolve, sep } from "node:path"
import { describe, expect, it } from "vitest"

const CORE = resolve(import.meta.dirname, "..")
const SRC = join(CORE, "src")
const REPO = resolve(CORE, "..")
const ADAPTERS = join(REPO, "adapters")

/**
 * Node modules core may import anyway. Empty on purpose: a port that truly needs a `node:` module
 * is added here, by its exact specifier (e.g. "node:crypto"), with a comment saying why, so the
 * exception is reviewed rather than slipped in.
 */
const ALLOWED_NODE_MODULES: ReadonlyArray<string> = []

const ADAPTER_PACKAGES = [
  "@model-platform/node-http",
  "@model-platform/lambda",
  "@model-platform/postgres-stores",
  "@model-platform/dynamodb-stores",
  "@model-platform/test-harness",
  "@model-platform/evm",
  "@model-platform/stripe"
]
const NODE_BUILTINS = new Set(builtinModules)

const underPackage = (specifier: string, name: string) => specifier === name || specifier.startsWith(`${name}/`)

/** Why a package specifier is forbidden in core, or undefined when it is allowed. */
const forbiddenPackage = (specifier: string): string | undefined => {
  if (ALLOWED_NODE_MODULES.includes(specifier)) return undefined
  for (const adapter of ADAPTER_PACKAGES) {
    if (underPackage(specifier, adapter)) return `adapter package ${adapter}`
  }
  if (underPackage(specifier, "@effect/sql-pg")) return "the Postgres driver (an adapter's concern)"
  if (/^@effect\/platform-node(-shared)?(\/|$)/.test(specifier)) return "the Node platform (an adapter's concern)"
  if (specifier.startsWith("@aws-sdk/")) return "the AWS SDK (an adapter's concern)"
  if (specifier.startsWith("@electric-sql/")) return "PGlite (an adapter's concern)"
  if (underPackage(specifier, "viem")) return "the EVM client (adapters/evm's concern)"
  if (underPackage(specifier, "stripe")) return "Stripe's client (the card processor's adapter, adapters/stripe)"
  if (specifier.startsWith("node:")) return "a Node module (core runs on every runtime; see ALLOWED_NODE_MODULES)"
  // A bare builtin name ("fs", "crypto/x") is the same module as its node: form.
  if (NODE_BUILTINS.has(specifier.split("/")[0]!)) {
    return "a Node module (core runs on every runtime; see ALLOWED_NODE_MODULES)"
  }
  return undefined
}

interface Violation {
  readonly file: string
  readonly line: number
  readonly specifier: string
  readonly reason: string
}

// Module specifiers of static imports and re-exports (`from "x"`, also across lines), side-effect
// imports (`import "x"`), dynamic imports, `require("x")`, and `import x = require("x")`.
const SPECIFIER = /\bfrom\s*(["'])([^"'\n]+)\1|\bimport\s*(["'])([^"'\n]+)\3|\b(?:import|require)\s*\(\s*(["'])([^"'\n]+)\5/g

/**
 * The forbidden imports in one source text. `file` is the file's absolute path: relative
 * specifiers are resolved against it to find those reaching into adapters/ or out of core/.
 */
const scanSource = (file: string, source: string): ReadonlyArray<Violation> => {
  const violations: Array<Violation> = []
  for (const match of source.matchAll(SPECIFIER)) {
    const specifier = match[2] ?? match[4] ?? match[6]!
    const line = source.slice(0, match.index + match[0].length).split("\n").length
    let reason: string | undefined
    if (specifier.startsWith(".")) {
      const target = resolve(dirname(file), specifier)
      if (target === ADAPTERS || target.startsWith(ADAPTERS + sep)) reason = "a relative path into adapters/"
      else if (target !== CORE && !target.startsWith(CORE + sep)) reason = "a relative path out of core/"
    } else {
      reason = forbiddenPackage(specifier)
    }
    if (reason !== undefined) violations.push({ file, line, specifier, reason })
  }
  return violations
}

const sourceFiles = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sourceFiles(path)
    return entry.isFile() && /\.(ts|mts|cts|tsx)$/.test(entry.name) ? [path] : []
  })

const describeViolations = (violations: ReadonlyArray<Violation>) =>
  violations.map((v) => `${relative(REPO, v.file)}:${v.line}: "${v.specifier}" is ${v.reason}`)

describe("dependency rule: core imports no adapter, driver or Node module", () => {
  it("holds for every .ts file under core/src", () => {
    const files = sourceFiles(SRC)
    expect(files.length).toBeGreaterThan(0)
    const violations = files.flatMap((file) => scanSource(file, readFileSync(file, "utf8")))
    expect(describeViolations(violations)).toEqual([])
  })

  it("holds for core/package.json's dependencies", () => {
    const manifest = JSON.parse(readFileSync(join(CORE, "package.json"), "utf8")) as Record<string, unknown>
    const problems: Array<string> = []
    for (const field of ["dependencies", "devDependencies", "peerDependencies", "optionalDependencies"]) {
      const deps = (manifest[field] ?? {}) as Record<string, string>
      for (const name of Object.keys(deps)) {
        const reason = forbiddenPackage(name)
        if (reason !== undefined) problems.push(`core/package.json ${field}: "${name}" is ${reason}`)
      }
    }
    expect(problems).toEqual([])
  })
})

describe("the scanner finds what the rule forbids", () => {
  const file = join(SRC, "ports", "Sample.ts")
  const found = (source: string) => scanSource(file, source).map((v) => `${v.line}:${v.specifier}`)

  it("reports each forbidden import with its line", () => {
    const source = [
      `import { Effect } from "effect"`, // 1 allowed
      `import { PgClient } from "@effect/sql-pg"`, // 2
      `import type { Server } from "node:http"`, // 3: type-only imports count too
      `import * as fs from "fs"`, // 4: bare builtin
      `import {`, // 5
      `  NodeHttpServer`, // 6
      `} from "@effect/platform-node"`, // 7: a multi-line import is reported where its specifier is
      `export { main } from "@model-platform/node-http/main"`, // 8
      `import "@aws-sdk/client-dynamodb"`, // 9
      `const m = await import("@electric-sql/pglite")`, // 10
      `const t = require("@model-platform/test-harness/Memory")`, // 11
      `import { x } from "../../../adapters/lambda/src/x.ts"`, // 12
      `import { y } from "../../../elsewhere/y.ts"`, // 13
      `import { Money } from "../Money.ts"`, // 14 allowed
      `import { Z } from "../src/kernel/Money.ts"`, // 15 allowed
      `import { KeyStore } from './KeyStore.ts'` // 16 allowed
    ].join("\n")
    expect(found(source)).toEqual([
      "2:@effect/sql-pg",
      "3:node:http",
      "4:fs",
      "7:@effect/platform-node",
      "8:@model-platform/node-http/main",
      "9:@aws-sdk/client-dynamodb",
      "10:@electric-sql/pglite",
      "11:@model-platform/test-harness/Memory",
      "12:../../../adapters/lambda/src/x.ts",
      "13:../../../elsewhere/y.ts"
    ])
  })

  it("says why: into adapters/, out of core/, or which package", () => {
    const reasons = (source: string) => scanSource(file, source).map((v) => v.reason)
    expect(reasons(`import { x } from "../../../adapters/lambda/src/x.ts"`)).toEqual(["a relative path into adapters/"])
    expect(reasons(`import { y } from "../../../scripts/y.ts"`)).toEqual(["a relative path out of core/"])
    expect(reasons(`import { z } from "node:crypto"`)[0]).toMatch(/Node module/)
  })

  it("allows Effect and core's own modules", () => {
    expect(found(`import { Schema } from "effect"\nimport { HttpApi } from "effect/unstable/httpapi"\nimport type { Health } from "../Routing.ts"`))
      .toEqual([])
  })

  it("classifies package names for the manifest check", () => {
    expect(forbiddenPackage("effect")).toBeUndefined()
    expect(forbiddenPackage("@effect/vitest")).toBeUndefined()
    expect(forbiddenPackage("@effect/platform-node-shared")).toBeDefined()
    expect(forbiddenPackage("@model-platform/lambda")).toBeDefined()
    expect(forbiddenPackage("@aws-sdk/client-s3")).toBeDefined()
    expect(forbiddenPackage("viem/accounts")).toBeDefined()
    expect(forbiddenPackage("@model-platform/evm/EvmRail")).toBeDefined()
    expect(forbiddenPackage("stripe")).toBeDefined()
    expect(forbiddenPackage("@model-platform/stripe")).toBeDefined()
    expect(forbiddenPackage("stripe-like")).toBeUndefined()
    expect(forbiddenPackage("node:crypto")).toBeDefined()
    // WebAuthn verification: runtime-neutral JS on WebCrypto (no node: import), so core may use it.
    expect(forbiddenPackage("@simplewebauthn/server")).toBeUndefined()
  })
})
