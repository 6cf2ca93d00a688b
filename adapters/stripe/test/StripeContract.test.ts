/**
 * The card processor contract on Stripe: the official client against the fake Stripe of the test
 * harness (a person saves a card on its hosted setup page, over HTTP), and against Stripe's own
 * test mode when STRIPE_SECRET_KEY holds a test key (skipped otherwise, as in CI): there a person's
 * card is one of Stripe's test payment methods attached to the account's customer.
 */
import type { SaveCardOutcome } from "@model-platform/core/payments"
import { cardProcessorContract } from "@model-platform/contract-kit/CardProcessorContract"
import { startFakeStripe } from "@model-platform/test-harness/FakeStripe"
import { DocumentStoresMemory } from "@model-platform/memory-stores/MemoryDocuments"
import { Effect, Layer, Redacted } from "effect"
import { expect } from "vitest"
import { StripeCardProcessor } from "../src/StripeCardProcessor.ts"
import { makeStripeCustomers } from "../src/StripeCustomers.ts"
import { savedCardOf } from "../src/StripeResults.ts"

const declined = (message: string): SaveCardOutcome => ({ _tag: "Declined", reason: "card_declined", message })

cardProcessorContract("Stripe, the official client on the fake Stripe", {
  pages: "processor",
  start: async () => {
    const fake = await startFakeStripe()
    const processor = await Effect.runPromise(
      StripeCardProcessor.make({
        secretKey: Redacted.make(fake.secretKey),
        webhookSecret: Redacted.make("whsec_unused"),
        client: fake.clientOptions
      }).pipe(Effect.provide(DocumentStoresMemory))
    )
    const saveCard = async (accountId: string, number: string): Promise<SaveCardOutcome> => {
      const session = await Effect.runPromise(processor.openCardSetup({ account_id: accountId, return_url: "http://127.0.0.1:9/accounts/billing/card" }))
      const page = await fake.completeCheckout(session.checkout_url, number)
      if (page._tag === "Refused") return declined(`the setup page refused the card (${page.status})`)
      expect(page.location).toBe(`http://127.0.0.1:9/accounts/billing/card?session_id=${session.session_id}`)
      const result = await Effect.runPromise(processor.checkoutResult(session.session_id))
      if (result._tag !== "CardSaved") return declined(`the setup session came to ${result._tag}`)
      expect(result.account_id).toBe(accountId)
      return { _tag: "Saved", ...result.card }
    }
    return { processor, saveCard, chargesMade: async () => fake.all("charge").length, stop: fake.close }
  }
})

/** Stripe's test payment methods for the test card numbers (docs.stripe.com/testing). */
const TEST_PAYMENT_METHODS: Record<string, string> = {
  "4242424242424242": "pm_card_visa",
  "4000000000000002": "pm_card_visa_chargeDeclined",
  "4000000000000341": "pm_card_chargeCustomerFail",
  "4000002760003184": "pm_card_authenticationRequired",
  "4000002500003155": "pm_card_authenticationRequiredOnSetup"
}

const testKey = process.env.STRIPE_SECRET_KEY
cardProcessorContract("Stripe, in Stripe's test mode (STRIPE_SECRET_KEY)", {
  pages: "processor",
  skip: testKey === undefined || !testKey.startsWith("sk_test_"),
  start: async () => {
    const options = { secretKey: Redacted.make(testKey ?? ""), webhookSecret: Redacted.make("whsec_unused") }
    const client = StripeCardProcessor.stripeClient(options)
    const stores = await Effect.runPromise(Effect.scoped(Layer.build(DocumentStoresMemory)))
    const processor = await Effect.runPromise(Effect.provide(StripeCardProcessor.make(options), stores))
    const customers = await Effect.runPromise(
      Effect.provide(makeStripeCustomers(() => Effect.die(new Error("the processor makes customers"))), stores)
    )
    const saveCard = async (accountId: string, number: string): Promise<SaveCardOutcome> => {
      // The account's customer, made as a checkout would make it.
      await Effect.runPromise(processor.openCardSetup({ account_id: accountId, return_url: "https://example.com/billing" }))
      const customer = await Effect.runPromise(customers.find(accountId))
      try {
        const method = await client.paymentMethods.attach(TEST_PAYMENT_METHODS[number] ?? "pm_card_visa", { customer: customer! })
        return { _tag: "Saved", ...savedCardOf(method) }
      } catch (error) {
        return declined(String(error))
      }
    }
    return { processor, saveCard, stop: async () => undefined }
  }
})
