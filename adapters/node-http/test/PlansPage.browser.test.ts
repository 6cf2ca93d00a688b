/**
 * The plans page end to end on the Node server (the shared flow of
 * adapters/test-harness/src/PlansPageFlow.ts), started by nodeBrowser.ts.
 * Screenshots in adapters/node-http/test-artifacts/plans/ (gitignored).
 */
import { plansPageFlow } from "@model-platform/test-harness/PlansPageFlow"
import { resolve } from "node:path"
import { startNodeForBrowser } from "./nodeBrowser.ts"

plansPageFlow({
  shell: "node-http, PostgreSQL, SMTP",
  artifacts: resolve(import.meta.dirname, "../test-artifacts/plans"),
  start: startNodeForBrowser
})
