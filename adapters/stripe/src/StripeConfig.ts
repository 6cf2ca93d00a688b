/**
 * How a shell turns on Stripe (docs/payments.md "Going live with Stripe"): when the catalogue's
 * `payments.card.processor` is "stripe", the shell reads the two secrets (the Node server from
 * STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET, the Lambda functions from SSM SecureString
 * parameters) and hands core this processor (PlatformOptions.cardProcessor). The secrets are
 * checked for their form only, and never shown in an error or a log line.
 */
import type { CatalogueConfig } from "@model-platform/core/catalogue"
import type { CardProcessor } from "@model-platform/core/payments"
import type { DocumentStores } from "@model-platform/core/kernel"
import { Config, Data, Effect, type Layer, Redacted } from "effect"
import { layer, type StripeProcessorOptions } from "./StripeCardProcessor.ts"

/** The environment variables of the Node server. */
export const STRIPE_ENV = { secretKey: "STRIPE_SECRET_KEY", webhookSecret: "STRIPE_WEBHOOK_SECRET" } as const

export interface StripeSecrets {
  readonly secretKey: Redacted.Redacted<string>
  readonly webhookSecret: Redacted.Redacted<string>
}

/** Stripe is named but cannot be set up: the message names what is missing, never a value. */
export class StripeConfigError extends Data.TaggedError("StripeConfigError")<{ readonly message: string }> {}

const StripeEnvConfig = Config.all({
  secretKey: Config.Redacted(STRIPE_ENV.secretKey),
  webhookSecret: Config.Redacted(STRIPE_ENV.webhookSecret)
})

/** The secrets from the environment (the Node server). */
export const stripeSecretsFromEnv: Effect.Effect<StripeSecrets, StripeConfigError> = Effect.gen(function*() {
  return yield* StripeEnvConfig
}).pipe(
  Effect.mapError(() =>
    new StripeConfigError({
      message: `payments.card.processor is "stripe": set ${STRIPE_ENV.secretKey} (sk_live_… or sk_test_…) and ` +
        `${STRIPE_ENV.webhookSecret} (the webhook endpoint's whsec_… signing secret)`
    })
  )
)

/** Why the secrets cannot be Stripe's, or undefined: a secret key is sk_… or rk_…, a signing secret whsec_…. */
export const secretsProblem = (secrets: StripeSecrets, names: { readonly secretKey: string; readonly webhookSecret: string }): string | undefined => {
  const key = Redacted.value(secrets.secretKey).trim()
  const signing = Redacted.value(secrets.webhookSecret).trim()
  if (!/^(sk|rk)_(live|test)_\S+$/.test(key)) return `${names.secretKey} is not a Stripe secret key (sk_live_…, sk_test_…, or a restricted rk_…)`
  if (!/^whsec_\S+$/.test(signing)) return `${names.webhookSecret} is not a webhook signing secret (whsec_…)`
  return undefined
}

/**
 * The card processor a shell hands core for this catalogue: Stripe with `secrets` (read only
 * then) when the catalogue names it, else undefined (core's own: the test processor or none).
 */
export const shellCardProcessor = <E>(
  catalogue: CatalogueConfig,
  secrets: Effect.Effect<StripeSecrets, E>,
  names: { readonly secretKey: string; readonly webhookSecret: string } = STRIPE_ENV,
  client?: StripeProcessorOptions["client"]
): Effect.Effect<Layer.Layer<CardProcessor, never, DocumentStores> | undefined, E | StripeConfigError> =>
  catalogue.payments.card?.processor !== "stripe"
    ? Effect.succeed(undefined)
    : Effect.flatMap(secrets, (read) => {
      const problem = secretsProblem(read, names)
      if (problem !== undefined) return Effect.fail(new StripeConfigError({ message: problem }))
      const trimmed = {
        secretKey: Redacted.make(Redacted.value(read.secretKey).trim()),
        webhookSecret: Redacted.make(Redacted.value(read.webhookSecret).trim())
      }
      return Effect.succeed(layer({ ...trimmed, ...(client === undefined ? {} : { client }) }))
    })
