import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["core/test/**/*.test.ts", "adapters/*/test/**/*.test.ts"],
    // One DynamoDB Local for the run, borrowed by every DynamoDB test; one server bundle for the
    // tests that start the server as a process.
    globalSetup: ["adapters/dynamodb-stores/test/dynamoGlobalSetup.ts", "adapters/node-http/test/bundleGlobalSetup.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // No performance hints after the summary: CI's log must end with the summary line.
    experimental: { diagnostics: false }
  }
})
