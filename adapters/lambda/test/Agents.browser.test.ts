/**
 * Agents end to end on the Lambda handlers over DynamoDB Local (the shared flow of
 * adapters/test-harness/src/AgentsBrowserFlow.ts), started by lambdaBrowser.ts: the platform's
 * function reaches the accounts function's approvals API over HTTP, as in the stack.
 * Screenshots in adapters/lambda/test-artifacts/agents/ (gitignored).
 */
import { agentsBrowserFlow } from "@model-platform/test-harness/AgentsBrowserFlow"
import { resolve } from "node:path"
import { startLambdaForBrowser } from "./lambdaBrowser.ts"

agentsBrowserFlow({
  shell: "lambda, DynamoDB Local, SMTP",
  artifacts: resolve(import.meta.dirname, "../test-artifacts/agents"),
  start: startLambdaForBrowser
})
