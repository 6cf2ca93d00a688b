/**
 * The plans page end to end on the Lambda shell (the shared flow of
 * adapters/test-harness/src/PlansPageFlow.ts): the handlers over DynamoDB Local behind the local
 * stand-in for API Gateway (lambdaBrowser.ts), the demo catalogue.
 * Screenshots in adapters/lambda/test-artifacts/plans/ (gitignored).
 */
import { plansPageFlow } from "@model-platform/test-harness/PlansPageFlow"
import { resolve } from "node:path"
import { startLambdaForBrowser } from "./lambdaBrowser.ts"

plansPageFlow({
  shell: "lambda, DynamoDB Local, SMTP",
  artifacts: resolve(import.meta.dirname, "../test-artifacts/plans"),
  start: startLambdaForBrowser
})
