/** vitest's global setup (vitest.config.ts): names this run's server bundle (serverBundle.ts) and removes it after. */
import * as fs from "node:fs"
import * as path from "node:path"
import type { TestProject } from "vitest/node"

export default function setup(project: TestProject) {
  const dir = path.join(import.meta.dirname, "..", `.test-bundle-${process.pid}`)
  project.provide("serverBundleDir", dir)
  return () => {
    fs.rmSync(dir, { recursive: true, force: true })
    // Scratch builds of a test process killed mid-build.
    for (const name of fs.readdirSync(path.dirname(dir))) {
      if (name.startsWith(".test-bundle-build-")) fs.rmSync(path.join(path.dirname(dir), name), { recursive: true, force: true })
    }
  }
}
