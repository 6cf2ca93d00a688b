/**
 * Orders paid through Stripe Checkout (the shared StripeCheckoutSuite) on the Lambda handler over
 * DynamoDB Local: the official client against the fake Stripe, its webhooks posted to the handler
 * through a local HTTP address.
 */
import { StripeCardProcessor } from "@model-platform/stripe/StripeCardProcessor"
import { stripeCheckoutSuite } from "@model-platform/test-harness/StripeCheckoutSuite"
import { Redacted } from "effect"
import { startLambda } from "./support.ts"

stripeCheckoutSuite(
  "lambda (API Gateway v2), DynamoDB Local",
  (options) =>
    StripeCardProcessor.layer({
      secretKey: Redacted.make(options.secretKey),
      webhookSecret: Redacted.make(options.webhookSecret),
      client: options.client
    }),
  ({ catalogue, cardProcessor }) => startLambda(catalogue, { platform: { cardProcessor } })
)
