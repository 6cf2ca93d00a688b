/**
 * The deployment entry point: cdk/bundle.ts bundles this module into `index.mjs`, and the stack's
 * functions run its exports (cdk/stack.ts HANDLERS):
 *
 *   handler        API Gateway HTTP API (payload 2.0): the answer is buffered (ApiFunction, and
 *                  AccountsFunction for the /accounts routes)
 *   streamHandler  Function URL with invoke mode RESPONSE_STREAM: the answer is written on
 *                  Lambda's response stream as it is produced (StreamFunction; Streaming.ts)
 *   watchHandler   an EventBridge schedule: one pass of the stablecoin deposit watcher
 *                  (WatchFunction; only the "evm" rail has one)
 *
 * Once per container (Lambda's init phase, at module scope), never per request: the
 * configuration is read from the environment (Config.ts), the catalogue from its SSM parameter,
 * and the platform is built over the DynamoDB stores (Handler.ts). Both exports share that one
 * platform. The init phase waits for the build (a few seconds at most), so the first request finds
 * it ready; a build that fails or takes longer does not fail the init: the first request waits for
 * it or, after a failure, answers 503 in the platform's shape and the next request builds again.
 *
 * First start: when the table has no account yet, the owner account is made with a key whose
 * secret the operator made beforehand (scripts/new-owner-key.ts) and keeps in the SecureString
 * parameter OWNER_KEY_SECRET_ID. The secret is read only then, and never logged.
 *
 * The account service (/accounts, Accounts.ts) is served when SMTP_URL is set: a function has no
 * disk for the Node server's outbox, and without mail nobody could confirm an address. Every
 * function of the stack gets the same environment, so each serves it (the HTTP API routes
 * /accounts to AccountsFunction, which runs `handler` too).
 */
import {
  configuredSigningKeys,
  DEFAULT_PLATFORM_CLIENT_ID,
  PlatformClientConfig,
  ServiceAssertionConfig,
  SimulatedNetwork,
  trustedPlatform
} from "@model-platform/core/agents"
import { SSMClient } from "@aws-sdk/client-ssm"
import { errorBody } from "@model-platform/core/http"
import type { Owner } from "@model-platform/core/accounts"
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from "aws-lambda"
import { loggingLayer, loggingSettings } from "@model-platform/core/observability"
import { parseOperatorKeys } from "@model-platform/core/operator"
import { ConfigProvider, Effect, Layer, Option, Redacted } from "effect"
import type { AccountsOptions } from "./Accounts.ts"
import { BlobStoreS3Lazy } from "./LazyBlobStoreS3.ts"
import { type LambdaConfig, LambdaConfigError, loadCatalogue, readLambdaConfig, readOwnerSecret } from "./Config.ts"
import { ENV, INIT_MARKS } from "./ConfigNames.ts"
import { readStripeSecrets } from "./Config.ts"
import { makeDocumentClient } from "@model-platform/dynamodb-stores"
import { payloadV2 } from "./Events.ts"
import { type InvocationContext, type LambdaHandler, makeHandler } from "./Handler.ts"
import { makeStreamHandler, type ResponseStream, streamifyResponse } from "./Streaming.ts"

/** How long the init phase waits for the platform (Lambda allows 10 s for the whole init). */
const INIT_WAIT_MILLIS = 8_000

/** The account service's options: with SMTP_URL (an empty one is unset), which needs SMTP_FROM. */
const accountsOptions = (config: LambdaConfig): Effect.Effect<AccountsOptions | undefined, LambdaConfigError> => {
  const url = Option.getOrUndefined(Option.filter(config.smtpUrl, (value) => Redacted.value(value) !== ""))
  const from = Option.getOrUndefined(Option.filter(config.smtpFrom, (value) => value !== ""))
  if (url === undefined) {
    console.log(`The account service is off: ${ENV.smtpUrl} is not set (a function has no disk for an outbox); /accounts answers 503`)
    return Effect.succeed(undefined)
  }
  if (from === undefined) {
    return Effect.fail(new LambdaConfigError({ message: `${ENV.smtpUrl} is set but ${ENV.smtpFrom} is not: set it to the address mail is sent from` }))
  }
  return Effect.succeed({
    accountsUrl: Option.getOrUndefined(config.accountsUrl),
    recoveryDelayMs: config.recoveryDelayMs,
    // The Node shell's SMTP sender is runtime neutral (nodemailer only): imported by its module,
    // it brings nodemailer and nothing else of that shell, in a chunk read only when SMTP_URL is set.
    emailSender: Layer.unwrap(Effect.promise(() =>
      import("@model-platform/node-http/SmtpEmailSender").then((smtp) => smtp.SmtpEmailSender({ url, from }))
    )),
    network: SimulatedNetwork.fromConfig
  })
}

const startPlatform = Effect.gen(function*() {
  const config = yield* readLambdaConfig
  const ssm = new SSMClient({})
  const catalogue = yield* loadCatalogue(ssm, config.catalogueParameter)
  performance.mark(INIT_MARKS.catalogue)
  const ownerSecret = Effect.suspend(() => {
    console.log(
      `First start: the table has no account yet; creating the owner account ${config.ownerEmail} ` +
        `with the key secret kept in the SSM parameter ${config.ownerKeySecretId}`
    )
    return readOwnerSecret(ssm, config.ownerKeySecretId)
  })
  const accounts = yield* accountsOptions(config)
  // payments.card.processor "stripe": its secrets from their SecureString parameters (docs/payments.md).
  // Stripe's client is imported only then: a cold start without it reads 240 KB less.
  const cardProcessor = catalogue.payments.card?.processor !== "stripe" ? undefined : yield* Effect.flatMap(
    Effect.promise(() => import("@model-platform/stripe/StripeConfig")),
    ({ shellCardProcessor }) =>
      shellCardProcessor(
        catalogue,
        readStripeSecrets(ssm, config.stripeSecretKeyParameter, config.stripeWebhookSecretParameter),
        { secretKey: `the SSM parameter ${config.stripeSecretKeyParameter}`, webhookSecret: `the SSM parameter ${config.stripeWebhookSecretParameter}` }
      )
  ).pipe(Effect.mapError((error) => error._tag === "StripeConfigError" ? new LambdaConfigError({ message: error.message }) : error))
  const platformClient = yield* PlatformClientConfig
  // Service assertions: PLATFORM_SIGNING_KEY (the same in every function), else HTTP Basic.
  const assertions = yield* ServiceAssertionConfig
  const serviceKeys = yield* configuredSigningKeys(assertions.signingKey).pipe(
    Effect.mapError((error) => new LambdaConfigError({ message: error.message }))
  )
  const trustedServices = yield* trustedPlatform(platformClient?.id ?? DEFAULT_PLATFORM_CLIENT_ID, serviceKeys, assertions.jwks).pipe(
    Effect.mapError((error) => new LambdaConfigError({ message: error.message }))
  )
  // The "evm" stablecoin rail: its chains' RPC URLs and xpubs from the variables the catalogue names.
  // viem is imported only for that rail (340 KB a cold start would read otherwise).
  const evm = catalogue.payments.stablecoin?.processor !== "evm"
    ? { evm: undefined }
    : (yield* Effect.promise(() => import("@model-platform/evm/EvmEnvironment"))).evmOptionsFor(catalogue.payments, process.env)
  if ("problems" in evm) {
    return yield* new LambdaConfigError({ message: `The "evm" stablecoin rail cannot start: ${evm.problems.join("; ")}` })
  }
  if (Option.isNone(config.bucketName)) {
    yield* Effect.logWarning(`${ENV.bucket} is not set: dataset files and fieldwork takes are kept in this container's memory and lost`)
  }
  // JSON log lines by default: CloudWatch Logs Insights reads their fields (docs/operations.md "Logs").
  const logging = loggingLayer(yield* loggingSettings("json").pipe(
    Effect.mapError((error) => new LambdaConfigError({ message: error.message }))
  ))
  return makeHandler({
    catalogue,
    logging,
    // The metrics as CloudWatch embedded metric format lines after each invocation.
    emfNamespace: config.metricsNamespace,
    accounts,
    ownerEmail: config.ownerEmail,
    publicUrl: Option.getOrUndefined(config.publicUrl),
    ownerSecret,
    // The renewal job runs while a container is thawed, as the sweeper does (billing/Renewals.ts).
    platform: {
      metricsToken: Option.getOrUndefined(Option.filter(config.metricsToken, (token) => Redacted.value(token) !== "")),
      operatorKeys: yield* parseOperatorKeys(config.operatorKeys).pipe(
        Effect.mapError((error) => new LambdaConfigError({ message: error.message }))
      ),
      healthCheck: {},
      sweepReservations: {},
      renewPlans: {},
      // Deposits on EVM chains: WatchFunction passes on a schedule (watchHandler below).
      evm: evm.evm,
      cardProcessor,
      // Dataset files and fieldwork takes in the stack's bucket (docs/datasets.md).
      blobs: Option.isSome(config.bucketName) ? BlobStoreS3Lazy(config.bucketName.value) : undefined
    },
    // The same in every function (PLATFORM_CLIENT_SECRET): the API function asks the accounts function.
    platformClient,
    serviceKeys,
    trustedServices,
    dynamo: { tableName: config.tableName, client: makeDocumentClient() }
  })
})

let platform: Promise<LambdaHandler> | undefined

/** The container's one platform; a start that failed is forgotten, so the next call starts again. */
const currentPlatform = (): Promise<LambdaHandler> =>
  // The environment as it is now (Effect's default provider keeps the first one it saw).
  platform ??= Effect.runPromise(Effect.provideService(startPlatform, ConfigProvider.ConfigProvider, ConfigProvider.fromEnv()))
    .catch((error: unknown) => {
      platform = undefined
      throw error
    })

/** Ids only: the key's secret never reaches a log. */
const announceOwner = (owner: Owner | undefined) => {
  if (owner === undefined) return
  console.log(
    `First start: created the owner account ${owner.account.id} (${owner.account.email}) ` +
      `and its key ${owner.key.id} (${owner.key.prefix}...), with the secret from the SSM parameter`
  )
}

/** An invocation answered as the platform's web Response (both exports use it). */
const respond = async (event: APIGatewayProxyEventV2, context?: InvocationContext): Promise<Response> => {
  if (!payloadV2.accepts(event)) {
    throw new Error("Unsupported event: this handler serves API Gateway HTTP API (payload 2.0) and Function URL events")
  }
  let current: LambdaHandler
  try {
    current = await currentPlatform()
  } catch (error) {
    console.error("The platform could not start", error)
    const body = errorBody(event.rawPath || "/", 503, "The platform could not start; try again shortly.")
    return Response.json(body, { status: 503 })
  }
  return current.respond(event, context)
}

/** The end of an invocation, once its answer is written (Handler.ts finishInvocation). */
const finishInvocation = () =>
  (platform ?? Promise.reject(new Error("not started"))).then((current) => current.finishInvocation(), () => undefined)

/** API Gateway HTTP API (payload format 2.0): the answer is buffered. */
export const handler = async (
  event: APIGatewayProxyEventV2,
  context?: InvocationContext
): Promise<APIGatewayProxyStructuredResultV2> => {
  const result = await payloadV2.toResult(await respond(event, context))
  await finishInvocation()
  return result
}

const streaming = makeStreamHandler(respond)

/** Function URL with invoke mode RESPONSE_STREAM: the answer is streamed as it is produced. */
export const streamHandler = streamifyResponse(async (event: APIGatewayProxyEventV2, stream: ResponseStream, context?: InvocationContext) => {
  await streaming(event, stream, context)
  await finishInvocation()
})

/**
 * EventBridge's schedule (WatchFunction): one pass of the deposit watcher, its reports logged. A
 * pass that fails throws, so the invocation shows as an error; the next scheduled one starts over.
 */
export const watchHandler = async (): Promise<{ readonly reports: ReadonlyArray<unknown> }> => {
  const current = await currentPlatform()
  const reports = await current.watchDeposits()
  for (const report of reports) console.log(JSON.stringify({ message: "deposit watcher pass", ...report }))
  return { reports }
}

// ---- init phase ----------------------------------------------------------------------------
performance.mark(INIT_MARKS.evaluated)
const warmUp = async () => {
  const current = await currentPlatform()
  announceOwner(await current.firstStart())
  performance.mark(INIT_MARKS.ready)
}
let waited: ReturnType<typeof setTimeout> | undefined
await Promise.race([
  warmUp().catch((error: unknown) => {
    console.error("The platform could not start during init; the first request tries again", error)
  }),
  new Promise<void>((resolve) => {
    waited = setTimeout(resolve, INIT_WAIT_MILLIS)
  })
])
clearTimeout(waited)
