/**
 * The server as `./platform start` runs it, bundled (scripts/bundle.ts) once per test run by the
 * first test that starts it, and shared by the rest: from TypeScript sources every start loaded
 * for about 3 s here, the bundle loads in under 1 s.
 *
 * The run's bundle lives in `.test-bundle-<run>/` beside dist/ (the server finds the demo catalogue
 * relative to its module, so the depth matters), built under another name and renamed into place
 * so that test processes running side by side never see half a bundle; bundleGlobalSetup.ts
 * removes it after the run.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { inject } from "vitest"
import { bundleServer } from "../scripts/bundle.ts"

declare module "vitest" {
  export interface ProvidedContext {
    /** Where this run's server bundle goes (bundleGlobalSetup.ts). */
    readonly serverBundleDir: string
  }
}

const PACKAGE = path.join(import.meta.dirname, "..")

let building: Promise<string> | undefined

/** The path of the run's server bundle (main.mjs), built if no test of the run built it yet. */
export const serverBundle = (): Promise<string> => (building ??= build())

const build = async (): Promise<string> => {
  const dir = inject("serverBundleDir")
  const file = path.join(dir, "main.mjs")
  if (fs.existsSync(file)) return file
  const scratch = path.join(PACKAGE, `.test-bundle-build-${process.pid}-${crypto.randomUUID()}`)
  await bundleServer(scratch)
  try {
    fs.renameSync(scratch, dir)
  } catch {
    // Another test process placed it first: use theirs.
    fs.rmSync(scratch, { recursive: true, force: true })
  }
  return file
}
