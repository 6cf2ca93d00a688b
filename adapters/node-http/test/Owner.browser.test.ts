/**
 * The first-start owner end to end on the Node server (the shared flow of
 * adapters/test-harness/src/OwnerBrowserFlow.ts), started by nodeBrowser.ts, which hands over the
 * owner key its first start made. Screenshots in adapters/node-http/test-artifacts/owner/ (gitignored).
 */
import { ownerBrowserFlow } from "@model-platform/test-harness/OwnerBrowserFlow"
import { resolve } from "node:path"
import { startNodeForBrowser } from "./nodeBrowser.ts"

ownerBrowserFlow({
  shell: "node-http, PostgreSQL, SMTP",
  artifacts: resolve(import.meta.dirname, "../test-artifacts/owner"),
  start: startNodeForBrowser
})
