/**
 * Bundles the Node server (src/main.ts) into one minified ES module, `dist/main.mjs` (plus the
 * chunks it imports lazily, `dist/chunks/`), which `./platform start` runs (docs/performance.md
 * "Memory"). Run from TypeScript sources, Node strips the types of every module at load and keeps
 * each module's whole source text (Effect's comments included) for the life of the process: the
 * server idled at about 180 MB on PostgreSQL that way, about 80 MB bundled.
 *
 *   ./platform node adapters/node-http/scripts/bundle.ts
 *
 * PGlite stays outside the bundle: it reads its WebAssembly and data files next to its own module.
 * The bundle resolves it from this package's node_modules, so it stays among this package's
 * dependencies (though only @model-platform/postgres-stores imports it).
 * The bundle lives in dist/ beside src/, so what the server finds relative to its module (the demo
 * catalogue, @simplewebauthn/browser in node_modules) is where it is from src/.
 */
import * as esbuild from "esbuild"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

const here = Path.dirname(fileURLToPath(import.meta.url))
export const SERVER_BUNDLE = Path.join(here, "..", "dist", "main.mjs")

/** Builds into `outDir` (dist/ by default; tests build their own beside it, at the same depth). */
export const bundleServer = async (outDir = Path.dirname(SERVER_BUNDLE)) => {
  const started = Date.now()
  await esbuild.build({
    entryPoints: { main: Path.join(here, "..", "src", "main.ts") },
    outdir: outDir,
    outExtension: { ".js": ".mjs" },
    splitting: true,
    chunkNames: "chunks/[name]-[hash]",
    bundle: true,
    platform: "node",
    target: "node22",
    format: "esm",
    minify: true,
    sourcemap: true,
    sourcesContent: false,
    legalComments: "none",
    logLevel: "warning",
    external: ["@electric-sql/pglite", "@electric-sql/pglite-socket"],
    // CommonJS dependencies call require(): give the ES module one.
    banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
    mainFields: ["module", "main"]
  })
  return { file: Path.join(outDir, "main.mjs"), millis: Date.now() - started }
}

if (process.argv[1] !== undefined && Path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { file, millis } = await bundleServer()
  console.error(`platform: bundled the server into ${Path.relative(process.cwd(), file)} in ${millis} ms`)
}
