/**
 * The first-start owner end to end on the Lambda handlers over DynamoDB Local (the shared flow of
 * adapters/test-harness/src/OwnerBrowserFlow.ts), started by lambdaBrowser.ts: the owner key the
 * API function's first start made asks it for a claim link (a function has no terminal to print
 * one on), and the accounts functions serve the claim page. Screenshots in
 * adapters/lambda/test-artifacts/owner/ (gitignored).
 */
import { ownerBrowserFlow } from "@model-platform/test-harness/OwnerBrowserFlow"
import { resolve } from "node:path"
import { startLambdaForBrowser } from "./lambdaBrowser.ts"

ownerBrowserFlow({
  shell: "lambda, DynamoDB Local, SMTP",
  artifacts: resolve(import.meta.dirname, "../test-artifacts/owner"),
  start: startLambdaForBrowser
})
