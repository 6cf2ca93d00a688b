/**
 * The billing page end to end on the Node server (the shared flow of
 * adapters/test-harness/src/BillingPageFlow.ts), started by nodeBrowser.ts.
 * Screenshots in adapters/node-http/test-artifacts/billing/ (gitignored).
 */
import { billingPageFlow } from "@model-platform/test-harness/BillingPageFlow"
import { resolve } from "node:path"
import { startNodeForBrowser } from "./nodeBrowser.ts"

billingPageFlow({
  shell: "node-http, PostgreSQL, SMTP",
  artifacts: resolve(import.meta.dirname, "../test-artifacts/billing"),
  start: startNodeForBrowser
})
