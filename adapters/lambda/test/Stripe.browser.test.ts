/**
 * Card payments through Stripe end to end on the Lambda shell (the shared flow of
 * adapters/test-harness/src/StripeBrowserFlow.ts): the handlers over DynamoDB Local behind the
 * local stand-in for API Gateway (lambdaBrowser.ts), mail through SMTP, the official client against
 * the fake Stripe started once for this file. Screenshots in adapters/lambda/test-artifacts/stripe/
 * (gitignored).
 */
import { StripeCardProcessor } from "@model-platform/stripe/StripeCardProcessor"
import { stripeBrowserFlow, withStripeCards } from "@model-platform/test-harness/StripeBrowserFlow"
import { Redacted } from "effect"
import { resolve } from "node:path"
import { startLambdaForBrowser } from "./lambdaBrowser.ts"

stripeBrowserFlow({
  shell: "lambda, DynamoDB Local, SMTP",
  artifacts: resolve(import.meta.dirname, "../test-artifacts/stripe"),
  processorFor: (options) =>
    StripeCardProcessor.layer({
      secretKey: Redacted.make(options.secretKey),
      webhookSecret: Redacted.make(options.webhookSecret),
      client: options.client
    }),
  start: ({ cardProcessor, ...setup }) =>
    startLambdaForBrowser(setup, { catalogue: withStripeCards, cardProcessor, renewPlans: { intervalMs: 500 } })
})
