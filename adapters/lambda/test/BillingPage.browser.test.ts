/**
 * The billing page end to end on the Lambda shell (the shared flow of
 * adapters/test-harness/src/BillingPageFlow.ts): the handlers over DynamoDB Local behind the local
 * stand-in for API Gateway (lambdaBrowser.ts), mail through the SMTP sender, the demo catalogue.
 * Screenshots in adapters/lambda/test-artifacts/billing/ (gitignored).
 */
import { billingPageFlow } from "@model-platform/test-harness/BillingPageFlow"
import { resolve } from "node:path"
import { startLambdaForBrowser } from "./lambdaBrowser.ts"

billingPageFlow({
  shell: "lambda, DynamoDB Local, SMTP",
  artifacts: resolve(import.meta.dirname, "../test-artifacts/billing"),
  start: startLambdaForBrowser
})
