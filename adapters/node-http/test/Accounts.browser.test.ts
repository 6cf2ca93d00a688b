/**
 * Accounts for people end to end on the Node server (the shared flow of
 * adapters/test-harness/src/AccountsBrowserFlow.ts), started by nodeBrowser.ts.
 * Screenshots in adapters/node-http/test-artifacts/accounts/ (gitignored).
 */
import { accountsBrowserFlow } from "@model-platform/test-harness/AccountsBrowserFlow"
import { resolve } from "node:path"
import { startNodeForBrowser } from "./nodeBrowser.ts"

accountsBrowserFlow({
  shell: "node-http, PostgreSQL, SMTP",
  artifacts: resolve(import.meta.dirname, "../test-artifacts/accounts"),
  start: startNodeForBrowser
})
