/**
 * Orders paid through Stripe Checkout (the shared StripeCheckoutSuite) on the in-process shell,
 * over memory stores: the official client against the fake Stripe, webhooks over HTTP.
 */
import { startInProcess } from "@model-platform/test-harness/InProcess"
import { stripeCheckoutSuite, type StripeProcessorFor } from "@model-platform/test-harness/StripeCheckoutSuite"
import { Redacted } from "effect"
import { StripeCardProcessor } from "../src/StripeCardProcessor.ts"

export const processorFor: StripeProcessorFor = (options) =>
  StripeCardProcessor.layer({
    secretKey: Redacted.make(options.secretKey),
    webhookSecret: Redacted.make(options.webhookSecret),
    client: options.client
  })

stripeCheckoutSuite("in-process (memory)", processorFor, ({ catalogue, cardProcessor }) => startInProcess(catalogue, undefined, { cardProcessor }))
