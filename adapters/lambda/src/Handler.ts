/**
 * The Lambda shell: core's platform (`makePlatform`: the use-cases over the DynamoDB stores, the
 * first start and, when configured, the account service of Accounts.ts) served as a web handler
 * (`platformWebHandler`) behind the payload 2.0 event processor of Events.ts. No route, rule or
 * validation lives here.
 *
 * The application is built once per container: `makeHandler` starts building it at once (during
 * the Lambda init phase, when it is called at module scope) and every invocation awaits that same
 * build. A build that failed (DynamoDB unreachable at a cold start) is forgotten, so the next
 * invocation builds again instead of failing for the container's whole life.
 */
import { accountServiceView, type PlatformClient, randomPlatformClient, SimulatedNetwork } from "@model-platform/core/agents"
import type { SigningKeys, TrustedService } from "@model-platform/core/agents"
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context as LambdaContext } from "aws-lambda"
import type { Owner } from "@model-platform/core/accounts"
import type { CatalogueConfig } from "@model-platform/core/catalogue"
import { errorBody, makePlatform, type PlatformOptions, type PlatformStores, platformWebHandler } from "@model-platform/core/http"
import { DepositWatcher, type WatchReport } from "@model-platform/core/payments"
import { JobsStart } from "@model-platform/core/kernel"
import { Effect, Layer } from "effect"
import { EmfWriter } from "@model-platform/core/observability"
import { Metric } from "effect"
import { type AccountsOptions, accountsLayer, agentApprovalsOf } from "./Accounts.ts"
import { DynamoConfig, type DynamoSettings } from "@model-platform/dynamodb-stores"
import { DynamoPlatformStores } from "@model-platform/dynamodb-stores"
import { payloadV2 } from "./Events.ts"

export type Stores = PlatformStores

export type HandlerOptions = {
  readonly catalogue: CatalogueConfig
  /** Email of the owner account created when no account exists yet. */
  readonly ownerEmail: string
  /**
   * PUBLIC_URL: the base of the addresses the platform hands out (a card checkout's pay_url).
   * Unset: the domain API Gateway or the Function URL answered the request on
   * (requestContext.domainName, set by AWS; never the client's Host header).
   */
  readonly publicUrl?: string | undefined
  /**
   * Background work and gateway settings (lambda.ts turns health checks and the reservation
   * sweeper on). The gateway always settles inline here: a Lambda may be frozen as soon as its
   * response is sent, so metering must finish before.
   */
  readonly platform?: Omit<PlatformOptions, "publicUrl"> | undefined
  /**
   * The owner key's secret, made beforehand by the operator (`scripts/new-owner-key.ts`) and read
   * from a secret store only when no account exists yet: the owner's key is then made with it
   * (core's `ensureOwnerWithSecret`) instead of with a fresh secret nobody could see.
   */
  readonly ownerSecret?: Effect.Effect<string, unknown>
  /**
   * How long before the invocation's deadline a request still running is interrupted: its
   * finalizers run and the client gets a 504 in the platform's shape, where Lambda would otherwise
   * freeze the process mid-request and API Gateway answer with its own error. Default 1000 ms.
   */
  readonly deadlineMarginMillis?: number
  /**
   * The loggers and level (core observability/Logging.ts: lambda.ts reads LOG_FORMAT, json by
   * default, and LOG_LEVEL). Unset: Effect's default logger.
   */
  readonly logging?: Layer.Layer<never> | undefined
  /**
   * Write the platform's metrics as CloudWatch embedded metric format lines after each invocation
   * (core observability/Emf.ts), in this namespace. Unset: none (GET /metrics still answers).
   */
  readonly emfNamespace?: string | undefined
  /**
   * The account service (Accounts.ts): served under /accounts with this. Without it (a test of the
   * API alone, or no SMTP_URL in lambda.ts) every /accounts page answers 503.
   */
  readonly accounts?: AccountsOptions | undefined
  /**
   * The platform's client at the agent approvals API (agents/PlatformClient.ts): the same in every
   * function of the stack (PLATFORM_CLIENT_SECRET), since the API function calls the accounts
   * function over HTTP. Unset: a random secret per container, so approvals work only where one
   * container serves both (tests).
   */
  readonly platformClient?: PlatformClient | undefined
  /**
   * The key the platform signs its calls to the account service with (service assertions,
   * PLATFORM_SIGNING_KEY: the same in every function) and publishes at /.well-known/jwks.json.
   * Unset: the calls carry HTTP Basic; no key is made per container, since another function,
   * with another key, would answer them.
   */
  readonly serviceKeys?: SigningKeys | undefined
  /**
   * Whose assertions the account service accepts: PLATFORM_JWKS when configured, else the public
   * part of `serviceKeys` (ServiceAssertions.trustedPlatform); none without either.
   */
  readonly trustedServices?: ReadonlyArray<TrustedService> | undefined
} & (
  /** The DynamoDB table and client of the stores (production). */
  | { readonly dynamo: DynamoSettings }
  /** Other stores (tests of the shell itself). */
  | { readonly stores: Layer.Layer<Stores, unknown> }
)

/** The part of Lambda's context the handler reads. */
export type InvocationContext = Pick<LambdaContext, "getRemainingTimeInMillis">

export interface LambdaHandler {
  (event: APIGatewayProxyEventV2, context?: InvocationContext): Promise<APIGatewayProxyStructuredResultV2>
  /**
   * The same invocation, answered as the platform's web `Response` (its body not read yet): what
   * the streaming handler writes on a Function URL's response stream (Streaming.ts). The build,
   * the 503, 400 and 504 answers and the deadline are the handler's.
   */
  readonly respond: (event: APIGatewayProxyEventV2, context?: InvocationContext) => Promise<Response>
  /**
   * What the first start did in this container: the owner and its key with the secret when this
   * build created them, undefined when an owner already existed. Rejects when the build failed.
   */
  readonly firstStart: () => Promise<Owner | undefined>
  /**
   * One pass of the deposit watcher (the "evm" rail, payments/DepositWatcher.ts): what the scheduled
   * WatchFunction runs. [] when the platform has no watcher (another rail).
   */
  readonly watchDeposits: () => Promise<ReadonlyArray<WatchReport>>
  /**
   * The end of an invocation, once its answer is written (the buffered handler calls it after each
   * invocation; a streaming one once its response is written): writes what the metrics recorded
   * since the last time as EMF lines on standard output, when `emfNamespace` is set, and lets the
   * background jobs start, on a later turn of the event loop, after the answer is handed back.
   */
  readonly finishInvocation: () => Promise<void>
  /** Releases the application's layers (tests; on Lambda the container is simply frozen). */
  readonly dispose: () => Promise<void>
}

interface App {
  readonly owner: Owner | undefined
  readonly fetch: (request: Request) => Promise<Response>
  readonly watchDeposits: () => Promise<ReadonlyArray<WatchReport>>
  /** The platform's metrics now (its registry's snapshot). */
  readonly metrics: () => ReadonlyArray<Metric.Metric.Snapshot>
  readonly dispose: () => Promise<void>
}

const DEFAULT_DEADLINE_MARGIN_MILLIS = 1_000

/** The largest fieldwork take a Lambda function can receive (docs/fieldwork.md "On Lambda"). */
export const LAMBDA_MAX_TAKE_BYTES = 4 * 1024 * 1024

/** Builds the web application over the stores, running the first start once. */
const buildApp = async (options: HandlerOptions, stores: Layer.Layer<Stores, unknown>, jobsStart: Effect.Effect<void>): Promise<App> => {
  const { catalogue, ownerEmail, ownerSecret } = options
  const client = options.platformClient ?? randomPlatformClient()
  // One network value for the account service and the platform (one instance per container).
  const accountsOptions = options.accounts === undefined
    ? undefined
    : { ...options.accounts, network: options.accounts.network ?? SimulatedNetwork.layer() }
  const keys = options.serviceKeys
  // The platform's name in its assertions is its client id at the account service.
  const signer = keys === undefined ? undefined : { iss: client.id, keys }
  const trusted = options.trustedServices ?? (keys === undefined ? [] : [{ iss: client.id, jwks: keys.publicJwks }])
  const approvals = accountsOptions === undefined ? undefined : agentApprovalsOf(accountsOptions, options.publicUrl, client, signer)
  const platform = {
    ...(approvals === undefined ? {} : approvals),
    ...options.platform,
    publicUrl: options.publicUrl,
    // The request's URL is built from API Gateway's requestContext.domainName (Events.ts), which
    // AWS sets to the domain it answered on: a link may be built on it (PublicUrl.ts).
    requestUrlFromShell: true,
    serviceKeys: keys,
    gateway: { ...options.platform?.gateway, settleInline: true },
    // A function's request is at most 6 MB, a binary body base64 in it: 4 MiB of take fits.
    maxTakeBytes: options.platform?.maxTakeBytes ?? LAMBDA_MAX_TAKE_BYTES,
    // Billing alerts go out the way the account service's mail does.
    alertMail: options.platform?.alertMail ?? options.accounts?.emailSender
  }
  const accounts = accountsOptions === undefined ? Layer.empty : accountsLayer(accountsOptions, options.publicUrl, accountServiceView(client), trusted)
  const web = await platformWebHandler(makePlatform({
    catalogue,
    stores,
    options: platform,
    owner: { email: ownerEmail, secret: ownerSecret },
    beside: accounts,
    under: Layer.merge(options.logging ?? Layer.empty, Layer.succeed(JobsStart, jobsStart))
  }))
  return {
    owner: web.owner,
    fetch: web.handler,
    watchDeposits: () =>
      web.runtime.runPromise(Effect.flatMap(Effect.serviceOption(DepositWatcher), (watcher) =>
        watcher._tag === "Some" ? watcher.value.pass : Effect.succeed([]))),
    metrics: () => Metric.snapshotUnsafe(web.context),
    dispose: web.dispose
  }
}

const jsonResponse = (status: number, body: unknown): Response => Response.json(body, { status })

const pathOf = (event: APIGatewayProxyEventV2): string => event.rawPath || "/"

/** The Lambda handler for API Gateway HTTP API (payload 2.0) and Function URL events. */
export const makeHandler = (options: HandlerOptions): LambdaHandler => {
  const stores: Layer.Layer<Stores, unknown> = "dynamo" in options
    ? DynamoPlatformStores.pipe(Layer.provide(DynamoConfig.layer(options.dynamo)))
    : options.stores
  const margin = options.deadlineMarginMillis ?? DEFAULT_DEADLINE_MARGIN_MILLIS

  // The background jobs' first pass waits for the end of the container's first invocation, so
  // neither the init phase nor the first answer carries their reads (core's
  // kernel/BackgroundJobs.ts; docs/lambda.md "Background jobs after the first invocation").
  let openJobs = () => {}
  const jobsOpened = new Promise<void>((resolve) => (openJobs = resolve))
  let jobsLetGo = false
  let building: Promise<App> | undefined
  const app = (): Promise<App> =>
    building ??= buildApp(options, stores, Effect.promise(() => jobsOpened)).catch((error: unknown) => {
      building = undefined
      throw error
    })
  // Start at once: at module scope this runs in Lambda's init phase. A failure here is reported
  // by the first invocation, which tries again.
  app().catch(() => undefined)

  const respond = async (event: APIGatewayProxyEventV2, context?: InvocationContext): Promise<Response> => {
    if (!payloadV2.accepts(event)) {
      throw new Error("Unsupported event: this handler serves API Gateway HTTP API (payload 2.0) and Function URL events")
    }
    let platform: App
    try {
      platform = await app()
    } catch (error) {
      console.error("The platform could not start", error)
      return jsonResponse(503, errorBody(pathOf(event), 503, "The platform could not start; try again shortly."))
    }
    const budget = context === undefined ? undefined : context.getRemainingTimeInMillis() - margin
    const signal = budget === undefined ? undefined : budget > 0 ? AbortSignal.timeout(budget) : AbortSignal.abort()
    let request: Request
    try {
      request = payloadV2.toRequest(event, signal === undefined ? {} : { signal })
    } catch (error) {
      if (!(error instanceof TypeError)) throw error
      return jsonResponse(400, errorBody(pathOf(event), 400, `The request could not be read: ${error.message}`))
    }
    const response = await platform.fetch(request)
    // The deadline interrupted the request (the web handler answers 499, as for a client gone).
    if (response.status === 499 && signal?.aborted === true) {
      return jsonResponse(504, errorBody(pathOf(event), 504, "The request did not finish within the time limit."))
    }
    return response
  }

  const emf = options.emfNamespace === undefined ? undefined : new EmfWriter(options.emfNamespace)
  const finishInvocation = async () => {
    // Once, on a timer, not at once: the jobs' first pass (SDK code not compiled yet) doubled the
    // first answer's time when it ran before the runtime had the answer.
    if (!jobsLetGo) {
      jobsLetGo = true
      setTimeout(openJobs, 0)
    }
    if (emf === undefined || building === undefined) return
    const built = await building.catch(() => undefined)
    if (built === undefined) return
    // oxlint-disable-next-line no-console
    for (const line of emf.lines(built.metrics(), Date.now())) console.log(line)
  }

  const handler = async (
    event: APIGatewayProxyEventV2,
    context?: InvocationContext
  ): Promise<APIGatewayProxyStructuredResultV2> => {
    const result = await payloadV2.toResult(await respond(event, context))
    await finishInvocation()
    return result
  }

  return Object.assign(handler, {
    respond,
    finishInvocation,
    firstStart: () => app().then((built) => built.owner),
    watchDeposits: () => app().then((built) => built.watchDeposits()).finally(openJobs),
    dispose: async () => {
      const current = building
      building = undefined
      if (current !== undefined) await (await current.catch(() => undefined))?.dispose()
    }
  })
}
