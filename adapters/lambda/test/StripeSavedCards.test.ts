/**
 * Saved cards, automatic top-ups and renewals through Stripe (the shared StripeSavedCardsSuite) on
 * the Lambda handler over DynamoDB Local, mail through the SMTP sender. The billing page's card
 * setup runs in another container on the same table, as the accounts function would run it.
 */
import { PlatformServices } from "@model-platform/core/http"
import { CardSetups } from "@model-platform/core/billing"
import { StripeCardProcessor } from "@model-platform/stripe/StripeCardProcessor"
import { stripeSavedCardsSuite } from "@model-platform/test-harness/StripeSavedCardsSuite"
import { Effect, Layer, ManagedRuntime, Redacted } from "effect"
import { DynamoPlatformStores } from "@model-platform/dynamodb-stores"
import { DynamoConfig } from "@model-platform/dynamodb-stores"
import { startLambda } from "./support.ts"

stripeSavedCardsSuite(
  "lambda (API Gateway v2), DynamoDB Local",
  (options) =>
    StripeCardProcessor.layer({
      secretKey: Redacted.make(options.secretKey),
      webhookSecret: Redacted.make(options.webhookSecret),
      client: options.client
    }),
  async ({ cardProcessor, catalogue, clock, publicUrl, renewPlans, smtpUrl }) => {
    const platform = { cardProcessor, clock, renewPlans }
    const shell = await startLambda(catalogue, { smtpUrl, publicUrl, platform })
    // Another container of the same stack, on the same table.
    const accountsFunction = ManagedRuntime.make(
      PlatformServices(catalogue, { ...platform, publicUrl }).pipe(
        Layer.provideMerge(DynamoPlatformStores),
        Layer.provide(DynamoConfig.layer(shell.dynamo))
      )
    )
    const setups = <A, E>(f: (setups: CardSetups["Service"]) => Effect.Effect<A, E>) =>
      accountsFunction.runPromise(Effect.orDie(Effect.flatMap(CardSetups, f)))
    return {
      ...shell,
      openCardSetup: (accountId, returnUrl) => setups((s) => s.open(accountId, returnUrl)),
      completeCardSetup: (accountId, sessionId) => setups((s) => s.complete(accountId, sessionId)),
      removeCard: (accountId) => setups((s) => Effect.asVoid(s.remove(accountId))),
      close: async () => {
        await accountsFunction.dispose()
        await shell.close()
      }
    }
  }
)
