/**
 * Bundles the Lambda handlers with esbuild into an ESM file, `<outDir>/index.mjs` (plus its
 * source map), and the chunks it imports lazily (`<outDir>/chunks/`), which the CDK stack deploys
 * with `Code.fromAsset(outDir)`. Bundling here rather
 * than in NodejsFunction keeps synthesis offline and Docker-free, and lets tests synthesise the
 * stack without bundling at all.
 *
 *   ./platform node adapters/lambda/cdk/bundle.ts [entry] [outDir]
 *
 * Everything is bundled, the AWS SDK included (the runtime's copy is not pinned), for Node 22
 * on arm64 (the bundle is plain JavaScript: no native module is allowed in it). Beside it goes the
 * one file the code reads at run time: @simplewebauthn/browser's UMD bundle, which the account
 * pages serve (a function has no node_modules to find it in; src/Accounts.ts reads it there).
 */
import { webAuthnBundleFile } from "@model-platform/node-http/Accounts"
import * as esbuild from "esbuild"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { WEBAUTHN_BUNDLE_FILE } from "../src/Accounts.ts"

const here = Path.dirname(fileURLToPath(import.meta.url))

/** The handlers' module (exports `handler` and `streamHandler`, stack.ts HANDLERS). */
export const DEFAULT_ENTRY = Path.join(here, "..", "src", "lambda.ts")
/** Ignored by git (`dist/`). */
export const DEFAULT_OUT_DIR = Path.join(here, "..", "dist", "lambda")

export interface BundleOptions {
  readonly entry?: string
  readonly outDir?: string
  /** Default true. */
  readonly minify?: boolean
}

export interface BundleResult {
  readonly outDir: string
  readonly outFile: string
  /** Size of index.mjs. */
  readonly bytes: number
  /** What a start reads: index.mjs and the chunks it imports statically. */
  readonly startBytes: number
  /** The chunks imported only when first used (import()). */
  readonly lazyBytes: number
  /** The source files a start reads (compiled into index.mjs and its static chunks). */
  readonly startInputs: ReadonlyArray<string>
  /** The names index.mjs exports. */
  readonly exports: ReadonlyArray<string>
  readonly millis: number
}

/** What a start reads (`outFile` and the chunks it imports statically), and the bytes of every other chunk. */
const startAndLazyBytes = (metafile: esbuild.Metafile, outFile: string) => {
  const outputs = new Map(Object.entries(metafile.outputs).map(([file, output]) => [Path.resolve(file), output]))
  const start = new Set<string>()
  const visit = (file: string) => {
    if (start.has(file) || !outputs.has(file)) return
    start.add(file)
    for (const imported of outputs.get(file)!.imports) if (imported.kind === "import-statement") visit(Path.resolve(imported.path))
  }
  visit(outFile)
  let startBytes = 0
  let lazyBytes = 0
  const startInputs = new Set<string>()
  for (const [file, output] of outputs) {
    if (!file.endsWith(".mjs")) continue
    if (start.has(file)) {
      startBytes += output.bytes
      for (const input of Object.keys(output.inputs)) startInputs.add(input)
    } else {
      lazyBytes += output.bytes
    }
  }
  return { startBytes, lazyBytes, startInputs: [...startInputs] }
}

/** Builds the bundle into `outDir`, replacing what was there. */
export const bundle = async (options: BundleOptions = {}): Promise<BundleResult> => {
  const started = Date.now()
  const entry = Path.resolve(options.entry ?? DEFAULT_ENTRY)
  const outDir = Path.resolve(options.outDir ?? DEFAULT_OUT_DIR)
  if (!Fs.existsSync(entry)) throw new Error(`bundle: no entry file at ${entry}`)
  Fs.rmSync(outDir, { recursive: true, force: true })
  Fs.mkdirSync(outDir, { recursive: true })
  const outFile = Path.join(outDir, "index.mjs")
  const result = await esbuild.build({
    entryPoints: { index: entry },
    outdir: outDir,
    outExtension: { ".js": ".mjs" },
    // What the code imports with import() goes in chunks of its own, read only when first used
    // (the /docs page's Scalar script, passkeys, SMTP, S3): a cold start compiles index.mjs alone.
    splitting: true,
    chunkNames: "chunks/[name]-[hash]",
    bundle: true,
    platform: "node",
    target: "node22",
    format: "esm",
    minify: options.minify ?? true,
    sourcemap: true,
    sourcesContent: false,
    legalComments: "none",
    logLevel: "warning",
    // CommonJS dependencies (the AWS SDK's) call require(): give the ES module one
    banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
    mainFields: ["module", "main"],
    metafile: true
  })
  Fs.copyFileSync(webAuthnBundleFile(), Path.join(outDir, WEBAUTHN_BUNDLE_FILE))
  const output = Object.entries(result.metafile.outputs).find(([file]) => Path.resolve(file) === outFile)?.[1]
  return {
    outDir,
    outFile,
    bytes: Fs.statSync(outFile).size,
    ...startAndLazyBytes(result.metafile, outFile),
    exports: output?.exports ?? [],
    millis: Date.now() - started
  }
}

if (process.argv[1] !== undefined && Path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [entry, outDir] = process.argv.slice(2)
  const result = await bundle({ ...(entry === undefined ? {} : { entry }), ...(outDir === undefined ? {} : { outDir }) })
  console.log(`bundled ${result.outFile}: ${(result.bytes / 1024).toFixed(0)} KB in ${result.millis} ms`)
}
