/** The card processor contract on the built-in test processor (its cards typed into the platform's form). */
import { TestCardProcessor } from "@model-platform/core/payments"
import { Effect } from "effect"
import { cardProcessorContract } from "@model-platform/contract-kit/CardProcessorContract"

cardProcessorContract("the test processor", {
  pages: "platform",
  start: async () => {
    const processor = TestCardProcessor.make({ baseUrl: "" })
    return {
      processor,
      saveCard: (accountId, number) => Effect.runPromise(processor.saveCard(accountId, { number, exp_month: 12, exp_year: 2034, cvc: "123" })),
      stop: async () => undefined
    }
  }
})
