/**
 * The area rule (docs/architecture.md "Areas"): every file of core/src sits in the kernel, in one
 * area of the spec, or in http; a file imports files of its own folder's area and of the areas its
 * row of AREAS names, nothing else (type-only imports count too); the table has no cycle, and
 * no set of files imports each other in a circle. A new arrow between areas is a decision: it is
 * written in the table, where a reviewer sees it. The scanner and the cycle finder are
 * unit-tested below, so a violation really fails the suite.
 */
import { readdirSync, readFileSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"
import { describe, expect, it } from "vitest"

const SRC = resolve(import.meta.dirname, "..", "src")

/** What each area may import besides itself, lowest first. http is above every area; none imports it. */
const AREAS: Record<string, ReadonlyArray<string>> = {
  kernel: [],
  observability: ["kernel"],
  catalogue: ["kernel"],
  keys: ["kernel", "catalogue", "observability"],
  ledger: ["kernel", "keys", "observability"],
  plans: ["kernel", "catalogue", "keys"],
  payments: ["kernel", "catalogue", "keys", "ledger", "plans"],
  billing: ["kernel", "catalogue", "keys", "ledger", "plans", "payments"],
  agents: ["kernel", "catalogue", "keys", "ledger"],
  accounts: ["kernel", "keys", "agents"],
  datasets: ["kernel", "keys"],
  fieldwork: ["kernel", "keys", "datasets"],
  gateway: ["kernel", "observability", "catalogue", "keys", "ledger", "plans", "payments", "billing", "agents"],
  operator: ["kernel", "catalogue", "keys", "ledger", "plans", "payments", "billing", "gateway"],
  http: [
    "kernel",
    "observability",
    "catalogue",
    "keys",
    "ledger",
    "plans",
    "payments",
    "billing",
    "agents",
    "accounts",
    "datasets",
    "fieldwork",
    "gateway",
    "operator"
  ]
}

// Relative specifiers of static imports and re-exports, also across lines and type-only.
const RELATIVE = /\b(?:import|export)\b[^;]*?\bfrom\s*(["'])(\.[^"'\n]+)\1|\bimport\s*\(\s*(["'])(\.[^"'\n]+)\3/g

const sourceFiles = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sourceFiles(path)
    return entry.isFile() && entry.name.endsWith(".ts") ? [path] : []
  })

/** The files of core/src (relative paths) a source text imports. */
const importsOf = (file: string, source: string): ReadonlyArray<string> =>
  [...source.matchAll(RELATIVE)].map((m) => relative(SRC, resolve(dirname(join(SRC, file)), m[2] ?? m[4]!)))

const areaOf = (file: string): string | undefined => (file.includes("/") ? file.split("/")[0] : undefined)

/** The imports that break the table: "from -> to (area -> area)". */
const violations = (graph: ReadonlyMap<string, ReadonlyArray<string>>, areas: Record<string, ReadonlyArray<string>>) => {
  const out: Array<string> = []
  for (const [file, targets] of graph) {
    const from = areaOf(file)
    for (const target of targets) {
      const to = areaOf(target)
      if (from === undefined || to === undefined || from === to) continue
      if (!(areas[from] ?? []).includes(to)) out.push(`${file} -> ${target} (${from} -> ${to})`)
    }
  }
  return out
}

/** Each set of nodes that reach each other (Tarjan's strongly connected components of size > 1). */
const cycles = (graph: ReadonlyMap<string, ReadonlyArray<string>>): Array<Array<string>> => {
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: Array<string> = []
  const onStack = new Set<string>()
  const found: Array<Array<string>> = []
  const visit = (v: string) => {
    index.set(v, index.size)
    low.set(v, index.get(v)!)
    stack.push(v)
    onStack.add(v)
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue
      if (!index.has(w)) {
        visit(w)
        low.set(v, Math.min(low.get(v)!, low.get(w)!))
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!))
    }
    if (low.get(v) === index.get(v)) {
      const component: Array<string> = []
      for (;;) {
        const w = stack.pop()!
        onStack.delete(w)
        component.push(w)
        if (w === v) break
      }
      if (component.length > 1) found.push(component.sort())
    }
  }
  for (const v of graph.keys()) if (!index.has(v)) visit(v)
  return found
}

const codeGraph = (): Map<string, ReadonlyArray<string>> =>
  new Map(sourceFiles(SRC).map((path) => {
    const file = relative(SRC, path)
    return [file, importsOf(file, readFileSync(path, "utf8"))]
  }))

describe("the area rule: areas depend one way, files in no circle", () => {
  const graph = codeGraph()

  it("every file of core/src sits in the kernel, an area or http", () => {
    const homeless = [...graph.keys()].filter((file) => !(areaOf(file)! in AREAS))
    expect(graph.size).toBeGreaterThan(100)
    expect(homeless).toEqual([])
  })

  it("every import follows the table", () => {
    expect(violations(graph, AREAS)).toEqual([])
  })

  it("the table itself has no cycle, and nothing names http", () => {
    expect(cycles(new Map(Object.entries(AREAS)))).toEqual([])
    expect(Object.entries(AREAS).filter(([, below]) => below.includes("http"))).toEqual([])
  })

  it("no files import each other in a circle", () => {
    expect(cycles(graph)).toEqual([])
  })
})

describe("the area rule's scanner and cycle finder", () => {
  it("reads relative imports, type-only and multi-line ones too, and ignores packages", () => {
    const source = [
      `import { Effect } from "effect"`,
      `import type { Caller } from "../keys/Caller.ts"`,
      `import {`,
      `  Ledger`,
      `} from "../ledger/Ledger.ts"`,
      `export { x } from "./X.ts"`,
      `const lazy = await import("../http/Api.ts")`
    ].join("\n")
    expect(importsOf("billing/Usage.ts", source)).toEqual(["keys/Caller.ts", "ledger/Ledger.ts", "billing/X.ts", "http/Api.ts"])
  })

  it("reports an import against the table, and not one within an area", () => {
    const graph = new Map([
      ["keys/ApiKeys.ts", ["plans/PlanStore.ts", "keys/Keys.ts", "kernel/Time.ts"]],
      ["plans/Plans.ts", ["keys/Caller.ts"]]
    ])
    expect(violations(graph, AREAS)).toEqual(["keys/ApiKeys.ts -> plans/PlanStore.ts (keys -> plans)"])
  })

  it("finds a circle of files, and none in a tree", () => {
    expect(cycles(new Map([["a", ["b"]], ["b", ["c"]], ["c", ["a"]], ["d", ["a"]]]))).toEqual([["a", "b", "c"]])
    expect(cycles(new Map([["a", ["b", "c"]], ["b", ["c"]], ["c", []]]))).toEqual([])
  })
})
