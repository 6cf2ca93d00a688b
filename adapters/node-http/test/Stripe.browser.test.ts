/**
 * Card payments through Stripe end to end on the Node server (the shared flow of
 * adapters/test-harness/src/StripeBrowserFlow.ts): PostgreSQL, mail through SMTP, the official
 * client against the fake Stripe started once for this file. Screenshots in
 * adapters/node-http/test-artifacts/stripe/ (gitignored).
 */
import { StripeCardProcessor } from "@model-platform/stripe/StripeCardProcessor"
import { stripeBrowserFlow, withStripeCards } from "@model-platform/test-harness/StripeBrowserFlow"
import { Redacted } from "effect"
import { resolve } from "node:path"
import { startNodeForBrowser } from "./nodeBrowser.ts"

stripeBrowserFlow({
  shell: "node-http, PostgreSQL, SMTP",
  artifacts: resolve(import.meta.dirname, "../test-artifacts/stripe"),
  processorFor: (options) =>
    StripeCardProcessor.layer({
      secretKey: Redacted.make(options.secretKey),
      webhookSecret: Redacted.make(options.webhookSecret),
      client: options.client
    }),
  start: ({ cardProcessor, ...setup }) =>
    startNodeForBrowser(setup, { catalogue: withStripeCards, cardProcessor, renewPlans: { intervalMs: 500 } })
})
