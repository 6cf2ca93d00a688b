/**
 * `./platform pack`: the publishable packages as npm tarballs in dist/packages/, for projects
 * outside this workspace (docs/embedding.md). Inside the workspace the packages stay TypeScript
 * sources run directly; here each one's `src/` is compiled by the workspace's TypeScript (it emits
 * the ESM JavaScript and the `.d.ts`), staged in dist/pack/<package>/ with a package.json of its
 * own (exports to the built files, `effect` and the other platform packages as peers) and packed
 * with `npm pack`. Only `src/` is compiled, so no test file and no other package's source is in a
 * tarball: the packages that import core are compiled against core's built `.d.ts`.
 */
import { execFileSync } from "node:child_process"
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { join } from "node:path"

const ROOT = join(import.meta.dirname, "..")
const STAGE = join(ROOT, "dist/pack")
const OUT = join(ROOT, "dist/packages")

interface Publishable {
  readonly dir: string
  /** The package's exports, to files under dist/ (without extension). */
  readonly exports: Record<string, string | null>
  /** Dependencies the host brings (one copy of each in its node_modules). */
  readonly peers: ReadonlyArray<string>
  readonly description: string
}

const areas = readdirSync(join(ROOT, "core/src")).filter((d) => statSync(join(ROOT, "core/src", d)).isDirectory())

const PACKAGES: ReadonlyArray<Publishable> = [
  {
    dir: "core",
    // One entry per area (core/src/<area>/index.ts), nothing deeper.
    exports: { ...Object.fromEntries(areas.map((a) => [`./${a}`, `${a}/index`])), "./internal/*": null },
    peers: ["effect"],
    description: "The Model Platform's core: one entry per area (docs/embedding.md)"
  },
  {
    dir: "adapters/memory-stores",
    exports: { "./*": "*" },
    peers: ["effect", "@model-platform/core"],
    description: "Every store port of @model-platform/core in memory"
  },
  {
    dir: "adapters/postgres-stores",
    // The stores and their migrations; the database (PGlite embedded or a server) apart, so that
    // importing the stores never loads PGlite.
    exports: { ".": "index", "./database": "database/index" },
    peers: ["effect", "@model-platform/core"],
    description: "Every store port of @model-platform/core on PostgreSQL, its migrations, and PGlite embedded (docs/embedding.md)"
  },
  {
    dir: "adapters/dynamodb-stores",
    exports: { ".": "index" },
    peers: ["effect", "@model-platform/core"],
    description: "Every store port of @model-platform/core in one DynamoDB table, the table's definition and its backfills (docs/embedding.md)"
  },
  {
    dir: "adapters/contract-kit",
    exports: { "./*": "*" },
    peers: ["effect", "@model-platform/core", "vitest", "@effect/vitest"],
    description: "The store contracts of @model-platform/core, to run against your own store (docs/implementing-a-store.md)"
  }
]

const readJson = (path: string) => JSON.parse(readFileSync(path, "utf8"))
const workspaceVersion = (name: string): string =>
  name.startsWith("@model-platform/")
    ? readJson(join(ROOT, name === "@model-platform/core" ? "core" : `adapters/${name.split("/")[1]}`, "package.json")).version
    : readJson(join(ROOT, "package.json")).devDependencies[name]

/** Every file under `dir`, recursively. */
const filesUnder = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? filesUnder(join(dir, e.name)) : [join(dir, e.name)]
  )

const compile = (pkg: Publishable, outDir: string) => {
  const tsconfig = join(STAGE, pkg.dir.replaceAll("/", "_") + ".tsconfig.json")
  writeFileSync(tsconfig, JSON.stringify({
    extends: join(ROOT, "tsconfig.base.json"),
    compilerOptions: {
      noEmit: false,
      declaration: true,
      // The sources import "./X.ts"; the JavaScript must import "./X.js".
      rewriteRelativeImportExtensions: true,
      rootDir: join(ROOT, pkg.dir, "src"),
      outDir,
      typeRoots: [join(ROOT, "node_modules/@types")],
      // Core as a consumer sees it (its built .d.ts), not its sources.
      paths: { "@model-platform/core/*": [join(STAGE, "core/dist/*/index.d.ts")] }
    },
    include: [join(ROOT, pkg.dir, "src")]
  }, null, 2))
  execFileSync(process.execPath, [join(ROOT, "node_modules/typescript/bin/tsc"), "-p", tsconfig], { stdio: "inherit" })
  // The declarations keep the sources' "./X.ts" specifiers; a consumer's TypeScript resolves
  // "./X.js" to X.d.ts under any settings, so they are rewritten the same way.
  for (const file of filesUnder(outDir).filter((f) => f.endsWith(".d.ts"))) {
    const text = readFileSync(file, "utf8")
    const rewritten = text.replace(/(["'])(\.{1,2}\/[^"']*)\.ts\1/g, "$1$2.js$1")
    if (rewritten !== text) writeFileSync(file, rewritten)
  }
}

const manifest = (pkg: Publishable) => {
  const source = readJson(join(ROOT, pkg.dir, "package.json"))
  const dependencies = Object.fromEntries(
    Object.entries(source.dependencies as Record<string, string>)
      .filter(([name]) => !pkg.peers.includes(name))
      .map(([name, version]) => [name, version.startsWith("workspace:") ? workspaceVersion(name) : version])
  )
  // A range, so the host keeps its own copy when it is compatible.
  const peerDependencies = Object.fromEntries(pkg.peers.map((name) => [name, `^${workspaceVersion(name)}`]))
  const exports = Object.fromEntries(
    Object.entries(pkg.exports).map(([entry, file]) => [
      entry,
      file === null ? null : { types: `./dist/${file}.d.ts`, import: `./dist/${file}.js` }
    ])
  )
  return {
    name: source.name,
    version: source.version,
    description: pkg.description,
    type: "module",
    license: "UNLICENSED",
    engines: { node: ">=22.19.0" },
    exports,
    files: ["dist"],
    dependencies,
    peerDependencies
  }
}

rmSync(STAGE, { recursive: true, force: true })
mkdirSync(STAGE, { recursive: true })
mkdirSync(OUT, { recursive: true })
for (const pkg of PACKAGES) {
  const dir = join(STAGE, pkg.dir.replace("adapters/", ""))
  compile(pkg, join(dir, "dist"))
  const json = manifest(pkg)
  writeFileSync(join(dir, "package.json"), JSON.stringify(json, null, 2) + "\n")
  rmSync(join(OUT, `${json.name.replace("@", "").replace("/", "-")}-${json.version}.tgz`), { force: true })
  const packed = JSON.parse(execFileSync("npm", ["pack", "--json", "--pack-destination", OUT], { cwd: dir, encoding: "utf8" }))[0]
  console.log(`pack: ${join("dist/packages", packed.filename)} ${(packed.size / 1024).toFixed(0)} KB (${packed.entryCount} files)`)
}
