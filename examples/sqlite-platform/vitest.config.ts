import { defineConfig } from "vitest/config"

export default defineConfig({
  // No performance hints after the summary (as the workspace's config: CI's log stays readable).
  test: { include: ["test/**/*.test.ts"], testTimeout: 30_000, experimental: { diagnostics: false } }
})
