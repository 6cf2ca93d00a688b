/**
 * Accounts for people end to end on the Lambda shell (the shared flow of
 * adapters/test-harness/src/AccountsBrowserFlow.ts): the handlers over a fresh table on DynamoDB
 * Local, mail through the SMTP sender lambda.ts uses, the demo catalogue.
 *
 * Chromium reaches the functions through the local stand-in for API Gateway of lambdaBrowser.ts,
 * routed as cdk/stack.ts routes: the accounts function has two containers taking turns, so no step
 * of a ceremony or a session may live in one container's memory. Screenshots in
 * adapters/lambda/test-artifacts/accounts/ (gitignored).
 */
import { accountsBrowserFlow } from "@model-platform/test-harness/AccountsBrowserFlow"
import { resolve } from "node:path"
import { startLambdaForBrowser } from "./lambdaBrowser.ts"

accountsBrowserFlow({
  shell: "lambda, DynamoDB Local, SMTP",
  artifacts: resolve(import.meta.dirname, "../test-artifacts/accounts"),
  start: startLambdaForBrowser
})
