/**
 * Agents end to end on the Node server (the shared flow of adapters/test-harness/src/AgentsBrowserFlow.ts),
 * started by nodeBrowser.ts. Screenshots in adapters/node-http/test-artifacts/agents/ (gitignored).
 */
import { agentsBrowserFlow } from "@model-platform/test-harness/AgentsBrowserFlow"
import { resolve } from "node:path"
import { startNodeForBrowser } from "./nodeBrowser.ts"

agentsBrowserFlow({
  shell: "node-http, PostgreSQL, SMTP",
  artifacts: resolve(import.meta.dirname, "../test-artifacts/agents"),
  start: startNodeForBrowser
})
