import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["core/test/**/*.test.ts", "adapters/*/test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // No performance hints after the summary: CI's log must end with the summary line.
    experimental: { diagnostics: false }
  }
})
