/**
 * The deployed functions' configuration (docs/lambda.md, "Configuration"): environment variables
 * set by the CDK stack, plus two SSM parameters read through them:
 *
 * - the catalogue, a String parameter holding the catalogue JSON, read at every cold start and
 *   decoded by core's `parseCatalogue`;
 * - the owner key, a SecureString parameter holding the owner's `mpk_` secret (made beforehand with
 *   `scripts/new-owner-key.ts`), read only at the first start, when the table has no account yet;
 * - with a catalogue whose card processor is "stripe", Stripe's secret key and webhook signing
 *   secret, two SecureString parameters read at every cold start (docs/payments.md "Going live
 *   with Stripe").
 *
 * The names of the variables and the default parameter names live in ConfigNames.ts, which the
 * CDK stack imports too, so the functions and the stack cannot disagree.
 */
import { GetParameterCommand, type SSMClient } from "@aws-sdk/client-ssm"
import { type CatalogueConfig, parseCatalogue } from "@model-platform/core/catalogue"
import { RecoveryDelayConfig } from "@model-platform/core/accounts"
import { looksLikeSecret } from "@model-platform/core/keys"
import { Config, Effect, Schema } from "effect"
import { Redacted } from "effect"
import {
  DEFAULT_CATALOGUE_PARAMETER,
  DEFAULT_OWNER_KEY_PARAMETER,
  DEFAULT_STRIPE_SECRET_KEY_PARAMETER,
  DEFAULT_STRIPE_WEBHOOK_SECRET_PARAMETER,
  ENV
} from "./ConfigNames.ts"

export const LambdaConfig = Config.all({
  tableName: Config.String(ENV.table),
  /** Not used by any route yet: the blob store joins the platform with the features that use it. */
  bucketName: Config.String(ENV.bucket).pipe(Config.option),
  catalogueParameter: Config.String(ENV.catalogueParameter).pipe(Config.withDefault(DEFAULT_CATALOGUE_PARAMETER)),
  ownerEmail: Config.String(ENV.ownerEmail),
  ownerKeySecretId: Config.String(ENV.ownerKeySecretId).pipe(Config.withDefault(DEFAULT_OWNER_KEY_PARAMETER)),
  stripeSecretKeyParameter: Config.String(ENV.stripeSecretKeyParameter).pipe(Config.withDefault(DEFAULT_STRIPE_SECRET_KEY_PARAMETER)),
  stripeWebhookSecretParameter: Config.String(ENV.stripeWebhookSecretParameter).pipe(
    Config.withDefault(DEFAULT_STRIPE_WEBHOOK_SECRET_PARAMETER)
  ),
  publicUrl: Config.String(ENV.publicUrl).pipe(Config.option),
  accountsUrl: Config.String(ENV.accountsUrl).pipe(Config.option),
  smtpUrl: Config.Redacted(ENV.smtpUrl).pipe(Config.option),
  smtpFrom: Config.String(ENV.smtpFrom).pipe(Config.option),
  metricsToken: Config.Redacted(ENV.metricsToken).pipe(Config.option),
  metricsNamespace: Config.String(ENV.metricsNamespace).pipe(Config.withDefault("ModelPlatform")),
  operatorKeys: Config.String(ENV.operatorKeys).pipe(Config.withDefault("")),
  /** ACCOUNTS_RECOVERY_DELAY_HOURS, the rule both shells read (core/src/accounts/AccountsConfig.ts). */
  recoveryDelayMs: RecoveryDelayConfig
})
export type LambdaConfig = Config.Success<typeof LambdaConfig>

/** The configuration could not be read: a missing parameter, a malformed value... Never holds a secret. */
export class LambdaConfigError extends Schema.TaggedError<LambdaConfigError>()("LambdaConfigError", {
  message: Schema.String
}) {}

/** The configuration from the environment; a variable missing or invalid is named in the error. */
export const readLambdaConfig: Effect.Effect<LambdaConfig, LambdaConfigError> = Effect.gen(function*() {
  return yield* LambdaConfig
}).pipe(
  Effect.mapError((error) =>
    new LambdaConfigError({ message: `an environment variable is missing or invalid: ${error.message}` })
  )
)

/** The reason of an SDK failure, without anything the request carried. */
const describe = (error: unknown): string =>
  error instanceof Error ? `${error.name}: ${error.message}` : String(error)

const getParameter = (ssm: SSMClient, name: string, decrypt: boolean) =>
  Effect.tryPromise({
    try: (signal) => ssm.send(new GetParameterCommand({ Name: name, WithDecryption: decrypt }), { abortSignal: signal }),
    catch: (error) => new LambdaConfigError({ message: `cannot read the SSM parameter ${name}: ${describe(error)}` })
  }).pipe(
    Effect.flatMap((output) =>
      output.Parameter?.Value === undefined
        ? Effect.fail(new LambdaConfigError({ message: `the SSM parameter ${name} has no value` }))
        : Effect.succeed(output.Parameter.Value)
    )
  )

/** The catalogue from its SSM parameter, decoded and validated by core. */
export const loadCatalogue = Effect.fn("Config.loadCatalogue")(function*(ssm: SSMClient, name: string) {
  const text = yield* getParameter(ssm, name, false)
  return yield* parseCatalogue(text).pipe(
    Effect.mapError((error) => new LambdaConfigError({ message: `the catalogue in ${name} is invalid: ${error.message}` }))
  )
}) satisfies (ssm: SSMClient, name: string) => Effect.Effect<CatalogueConfig, LambdaConfigError>

/**
 * The owner key's secret from its SecureString parameter (decrypted by SSM). Surrounding whitespace
 * is dropped (a value stored from a file keeps its newline); the rest must look like a key secret.
 * Neither the value nor any part of it is ever put in an error or a log line.
 */
export const readOwnerSecret = Effect.fn("Config.readOwnerSecret")(function*(ssm: SSMClient, name: string) {
  const value = (yield* getParameter(ssm, name, true)).trim()
  if (!looksLikeSecret(value)) {
    return yield* new LambdaConfigError({
      message: `the SSM parameter ${name} does not hold an owner key secret (mpk_ and 43 base64url characters): ` +
        "make one with adapters/lambda/scripts/new-owner-key.ts"
    })
  }
  return value
})

/**
 * Stripe's two secrets from their SecureString parameters (decrypted by SSM), for
 * StripeConfig.shellCardProcessor, which checks their form. Never logged, never in an error.
 */
export const readStripeSecrets = (ssm: SSMClient, secretKeyParameter: string, webhookSecretParameter: string) =>
  Effect.map(
    Effect.all([getParameter(ssm, secretKeyParameter, true), getParameter(ssm, webhookSecretParameter, true)]),
    ([secretKey, webhookSecret]) => ({ secretKey: Redacted.make(secretKey), webhookSecret: Redacted.make(webhookSecret) })
  ).pipe(Effect.withSpan("Config.readStripeSecrets"))
