import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["core/test/**/*.test.ts", "adapters/*/test/**/*.test.ts"],
    testTimeout: 30_000,
    // Two test files at a time on the 2-core CI machine (vitest's default there is one): most files
    // wait on DynamoDB Local, PostgreSQL, s3rver or Chromium, so two overlap well.
    maxWorkers: 2,
    hookTimeout: 60_000,
    // No performance hints after the summary: CI's log must end with the summary line.
    experimental: { diagnostics: false }
  }
})
