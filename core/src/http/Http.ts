/**
 * The whole HTTP application as one router layer, shared by every shell: the management API with
 * its OpenAPI document and docs page, the hosted checkout pages, the simulated chain's deposit
 * endpoint, the error shapes, and the fallback route. A shell provides the stores
 * (`PlatformStores`) to the use-cases (`PlatformServices`) and serves it (Node server or web
 * handler).
 */
import { ScopeTargetsFromPlans } from "../plans/ScopeTargetsFromPlans.ts"
import { AgentOwnersFromPeople } from "../accounts/AgentOwnersFromPeople.ts"
import { ApprovalRoutes } from "./ApprovalRoutes.ts"
import { JWKS_PATH, JwksRoute } from "./JwksRoute.ts"
import { PublishedJwks, type SigningKeys } from "../agents/ServiceAssertions.ts"
import { PlanRenewer, type PlanRenewerOptions } from "../billing/Renewals.ts"
import { Clock, Effect, Layer, Schema } from "effect"
import { type Redacted } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { Agents } from "../agents/Agents.ts"
import { Datasets } from "../datasets/Datasets.ts"
import { DownloadRoute, FileRouteTable, UploadRoute } from "./FileRoutes.ts"
import { Ingest } from "../fieldwork/Ingest.ts"
import { IngestRouteTable, IngestRoutes } from "./IngestRoutes.ts"
import { Projects } from "../fieldwork/Projects.ts"
import { RECORD_PAGE_PATH, RecordPageRoute } from "./pages/RecordPage.ts"
import type { BlobStore } from "../datasets/BlobStore.ts"
import { BlobStoreMemory } from "../datasets/MemoryBlobStore.ts"
import { ApiKeys } from "../keys/ApiKeys.ts"
import { Alerts } from "../billing/Alerts.ts"
import { AutoReload } from "../billing/AutoReload.ts"
import { CardSetups } from "../billing/CardSetups.ts"
import { PayLinks } from "../billing/PayLinks.ts"
import { TopUps } from "../billing/TopUp.ts"
import { BillingWatch } from "../billing/Watch.ts"
import { Catalogue } from "../catalogue/Catalogue.ts"
import type { CatalogueConfig } from "../catalogue/CatalogueConfig.ts"
import { Gateway } from "../gateway/Gateway.ts"
import type { GatewayConfig } from "../gateway/GatewayConfig.ts"
import { HealthChecker, type HealthCheckerOptions } from "../gateway/HealthChecker.ts"
import { ReservationSweeper, type ReservationSweeperOptions } from "../ledger/ReservationSweeper.ts"
import { MachineHttpLayer } from "../gateway/MachineHttp.ts"
import { Ledger } from "../ledger/Ledger.ts"
import { MAX_ID_LENGTH } from "../kernel/Limits.ts"
import { Orders } from "../payments/OrderService.ts"
import { Tickets } from "../payments/Tickets.ts"
import { AgentApprovals, ApprovalsUnavailable } from "../agents/AgentApprovals.ts"
import { CardProcessor } from "../payments/CardProcessor.ts"
import type { EmailSender } from "../kernel/EmailSender.ts"
import type { MeteringJournal } from "../gateway/MeteringJournal.ts"
import type { MachineClient } from "../gateway/MachineClient.ts"
import { Network, NetworkUnavailable } from "../agents/Network.ts"
import { StablecoinRail } from "../payments/StablecoinRail.ts"
import * as TestCardProcessor from "../payments/TestCardProcessor.ts"
import { DepositWatcher, type DepositWatchLoopOptions } from "../payments/DepositWatcher.ts"
import type { ChainReader } from "../payments/ChainReader.ts"
import type { DepositWatchStore } from "../payments/DepositWatchStore.ts"
import { CardCheckouts } from "../billing/CardCheckouts.ts"
import { CardEvents } from "../billing/CardEvents.ts"
import { Reversals } from "../payments/Reversals.ts"
import type { DocumentStores } from "../kernel/DocumentStores.ts"
import { PlatformApi } from "./Api.ts"
import { AccountRoutes } from "./AccountRoutes.ts"
import { BillingPageRoutes } from "./BillingPageRoutes.ts"
import { PlansPageRoutes } from "./PlansPageRoutes.ts"
import { CheckoutRoutes } from "./Checkout.ts"
import { docsPageRoute } from "./DocsPage.ts"
import { ErrorShapeMiddleware, fallbackRoute, SchemaErrors } from "./ErrorShape.ts"
import { INFERENCE_OPENAPI_PATH, InferenceApi } from "./InferenceApi.ts"
import { InferenceRoutes } from "./InferenceRoutes.ts"
import { PlatformHandlers } from "./Handlers.ts"
import { Idempotency } from "./Idempotency.ts"
import { onceAtStart } from "../kernel/BackgroundJobs.ts"
import { PublicAddress } from "../kernel/RequestBaseUrl.ts"
import { RequestBaseUrl } from "../kernel/RequestBaseUrl.ts"
import { RequestLimitsMiddleware } from "./RequestLimits.ts"
import { Authentication } from "./Security.ts"
import { SimulatedApi, SimulatedHandlers } from "./Simulated.ts"
import { WebhookRoutes, WebhookRouteTable } from "./Webhooks.ts"
import { HealthRoutes, Lifecycle, LIVE_PATH, READY_PATH } from "./observe/Health.ts"
import { observeRequests, RouteNoter } from "../observability/Requests.ts"
import { observeGateway } from "./observe/Calls.ts"
import { observeGatewayStore, observeJournal } from "./observe/Metering.ts"
import { observeMachineClient } from "./observe/Tracing.ts"
import { Operator } from "../operator/Operator.ts"
import { type OperatorKey, OperatorKeys } from "../operator/OperatorKeys.ts"
import { OPERATOR_PAGE_PATH, OperatorPageRoute } from "./pages/OperatorPage.ts"
import { OperatorApiRoutes } from "./OperatorRoutes.ts"
import { METRICS_PATH, MetricsAccess, MetricsRoute } from "./observe/MetricsRoute.ts"

export const OPENAPI_PATH = "/openapi.json"
export const DOCS_PATH = "/docs"

/**
 * The router's settings, for every shell's `HttpRouter.serve` / `toWebHandler`: a path parameter
 * as long as the longest id (Limits.ts), where the router's default would stop at 100 characters.
 */
export const ROUTER_CONFIG = { maxParamLength: MAX_ID_LENGTH }

/**
 * How every shell serves AppRoutes (`HttpRouter.serve` / `toWebHandler`): the router's settings,
 * without Effect's request logger; each shell adds `middleware: (app) => observeRequests(app)`
 * (observability/Requests.ts: request id, access line, HTTP metric), written at the call so that
 * the app's requirements are inferred there.
 */
export const SERVE_OPTIONS = { disableLogger: true, routerConfig: ROUTER_CONFIG } as const

export { observeRequests }

/** Every store the platform needs (http/PlatformStores.ts); each shell provides them all. */
export type { PlatformStores } from "./PlatformStores.ts"

export interface PlatformOptions {
  /**
   * The platform's public base URL (PUBLIC_URL), for the addresses it hands out (a card checkout's
   * pay_url). Unset: the address the shell says the request was sent to, else a loopback Host, else
   * none and such a request is refused (PublicUrl.ts).
   */
  readonly publicUrl?: string | undefined
  /**
   * The request's absolute URL is the shell's, not the client's: a web handler whose shell builds
   * it (Lambda: from API Gateway's requestContext.domainName). Unset: only a loopback Host is
   * trusted for links (a Node server's request line may carry any absolute URL a client writes).
   */
  readonly requestUrlFromShell?: boolean | undefined
  /** The inference gateway's settings (docs/gateway.md); Lambda sets settleInline. */
  readonly gateway?: Partial<GatewayConfig> | undefined
  /**
   * Poll the machines' health (docs/gateway.md "Health") and route by it. Off unless set: without
   * it the catalogue's initial health stands and the gateway's cooldown alone routes around
   * failing machines.
   */
  readonly healthCheck?: Partial<HealthCheckerOptions> | undefined
  /** Expire reservations whose call never came back (ReservationSweeper.ts). Off unless set. */
  readonly sweepReservations?: Partial<ReservationSweeperOptions> | undefined
  /**
   * The platform's time source, when not the system's: tests move it forward (a plan's period
   * ending, a reservation expiring). Each shell provides it under everything it builds.
   */
  readonly clock?: Clock.Clock | undefined
  /** Renew card plans whose period has ended (billing/Renewals.ts). Off unless set. */
  readonly renewPlans?: Partial<PlanRenewerOptions> | undefined
  /**
   * How the gateway and the health checker talk to machines. Default: `fetch` (MachineHttp.ts,
   * any runtime; Lambda keeps it); the Node shell gives its node:http client (MachineNodeHttp.ts).
   */
  readonly machineClient?: Layer.Layer<MachineClient> | undefined
  /**
   * Where the gateway journals the calls it answered until they are metered, so that a process
   * killed in between is billed at its next start (docs/gateway.md "Metering that survives
   * faults"). None: a kill between answer and metering loses that metering.
   */
  readonly meteringJournal?: Layer.Layer<MeteringJournal> | undefined
  /**
   * How billing alerts are emailed to accounts that turned alert_email on (docs/billing.md
   * "Alerts"): the shell's sender (SMTP or the outbox). None: alerts are only listed.
   */
  readonly alertMail?: Layer.Layer<EmailSender, unknown> | undefined
  /**
   * The account service's agent approvals, as the platform reaches them (docs/agents.md: the
   * shells' ApprovalsHttpClient, or the account service in the same process). None: every
   * approval call answers ApprovalsUnavailable (POST /agents: 503 approvals_unavailable; reads
   * answer agents as stored).
   */
  readonly agentApprovals?: Layer.Layer<AgentApprovals> | undefined
  /**
   * The network, for the nodes serving agents (docs/agents.md). None: no node serves agents
   * (POST /agents: 409 no_serving_nodes).
   */
  readonly network?: Layer.Layer<Network> | undefined
  /**
   * The key the platform signs its service assertions with (docs/agents.md "Service
   * assertions"): its public part is published at /.well-known/jwks.json. The shell gives the same
   * key to its ApprovalsHttpClient. None: an empty JWKS.
   */
  readonly serviceKeys?: SigningKeys | undefined
  /**
   * Where dataset files and fieldwork takes are kept (docs/datasets.md): the Node server's disk,
   * the Lambda shell's S3 bucket. None: in memory, gone when the process ends (tests; a shell
   * that falls back to it says so).
   */
  readonly blobs?: Layer.Layer<BlobStore> | undefined
  /** The largest fieldwork take the shell can receive, when less than 12 MiB (Lambda's request limit). */
  readonly maxTakeBytes?: number | undefined
  /**
   * METRICS_TOKEN: a client sending `Authorization: Bearer <token>` may read GET /metrics from
   * anywhere (http/observe/MetricsRoute.ts). None: loopback clients only.
   */
  readonly metricsToken?: Redacted.Redacted<string> | undefined
  /**
   * OPERATOR_KEYS: the operators' keys (names and hashes) the operator API and page answer
   * (operator/OperatorKeys.ts). None: the operator API answers 403 operator_api_off.
   */
  readonly operatorKeys?: ReadonlyArray<OperatorKey> | undefined
  /**
   * The card processor, when core does not make it: the shell's Stripe when the catalogue names
   * "stripe" (adapters/stripe; it keeps each account's customer in the document store), or a test's
   * processor watching the charges it makes. Unset: the catalogue's `payments.card.processor`
   * ("test" or null; "stripe" without it stops the start).
   */
  readonly cardProcessor?: Layer.Layer<CardProcessor, never, DocumentStores> | undefined
  /**
   * The "evm" stablecoin rail's pieces, which the shell makes from the environment
   * (adapters/evm/src/EvmEnvironment.ts): the rail handing out deposit addresses, and the chain
   * reader of the deposit watcher (payments/DepositWatcher.ts, then provided as DepositWatcher).
   * Required when the catalogue's payments.stablecoin.processor is "evm".
   */
  readonly evm?: {
    readonly rail: Layer.Layer<StablecoinRail, never, DepositWatchStore>
    readonly reader: Layer.Layer<ChainReader>
  } | undefined
  /** Run the deposit watcher every intervalMs in this process (the Node server). Off unless set, or without `evm`. */
  readonly watchDeposits?: Partial<DepositWatchLoopOptions> | undefined
}

/** The platform's clock (PlatformOptions.clock), to provide under everything a shell builds. */
export const clockLayer = (options: PlatformOptions | undefined): Layer.Layer<never> =>
  options?.clock === undefined ? Layer.empty : Layer.succeed(Clock.Clock, options.clock)

/** The catalogue names a payment processor this platform does not have: startup stops. */
export class PlatformConfigError extends Schema.TaggedError<PlatformConfigError>()("PlatformConfigError", {
  message: Schema.String
}) {}

type Payments = CatalogueConfig["payments"]

/** A port for a method that is not set up: Orders refuses the method before ever calling it. */
const notSetUp = (method: string) => () => Effect.die(new Error(`${method} payments are not set up`))

/** The card processor the catalogue names (`payments.card.processor`). */
export const cardProcessorLayer = (
  payments: Payments,
  publicUrl: string | undefined
): Layer.Layer<CardProcessor, PlatformConfigError> => {
  if (payments.card === null) {
    return Layer.succeed(CardProcessor, {
      processor: "none",
      pages: "platform",
      createSession: notSetUp("card"),
      charge: notSetUp("card"),
      saveCard: notSetUp("card"),
      chargeSaved: notSetUp("card"),
      openCardSetup: notSetUp("card"),
      checkoutResult: notSetUp("card"),
      verifyEvent: notSetUp("card")
    })
  }
  if (payments.card.processor === "test") {
    // One instance: it remembers the idempotency keys of charges. Pages are under the request's base (CheckoutRequest.base_url).
    return Layer.succeed(CardProcessor, TestCardProcessor.make({ baseUrl: publicUrl ?? "" }))
  }
  return Layer.effect(
    CardProcessor,
    Effect.fail(new PlatformConfigError({
      message: payments.card.processor === "stripe"
        ? `The catalogue's payments.card.processor is "stripe", which the shell provides (PlatformOptions.cardProcessor) ` +
          `from STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET (docs/payments.md "Going live with Stripe").`
        : `The catalogue's payments.card.processor is "${payments.card.processor}", which this platform does not have; ` +
          `use "test" (the built-in test processor), "stripe" or null.`
    }))
  )
}

/** The stablecoin rail the catalogue names (`payments.stablecoin.processor`); "evm" is the shell's (PlatformOptions.evm). */
export const stablecoinRailLayer = <R = never>(
  payments: Payments,
  evm?: Layer.Layer<StablecoinRail, never, R> | undefined
): Layer.Layer<StablecoinRail, PlatformConfigError, R> => {
  if (payments.stablecoin === null) {
    return Layer.succeed(StablecoinRail, { processor: "none", depositAddress: notSetUp("stablecoin") })
  }
  if (payments.stablecoin.processor === "simulated") return StablecoinRail.layerSimulated
  if (payments.stablecoin.processor === "evm" && evm !== undefined) return evm
  return Layer.effect(
    StablecoinRail,
    Effect.fail(new PlatformConfigError({
      message: payments.stablecoin.processor === "evm"
        ? `The catalogue's payments.stablecoin.processor is "evm", but this shell was given no EVM settings.`
        : `The catalogue's payments.stablecoin.processor is "${payments.stablecoin.processor}", which this platform does not have; ` +
          `use "simulated" (the built-in simulated chain), "evm" or null.`
    }))
  )
}

/** AgentApprovals when no account service is configured: every call answers ApprovalsUnavailable. */
export const NoAgentApprovals: Layer.Layer<AgentApprovals> = Layer.succeed(AgentApprovals, {
  create: () => Effect.fail(new ApprovalsUnavailable({ reason: "no account service is configured for agent approvals" })),
  read: () => Effect.fail(new ApprovalsUnavailable({ reason: "no account service is configured for agent approvals" }))
})

/** The Network when none is configured: no node serves agents, and nothing else answers. */
export const NoNetwork: Layer.Layer<Network> = Layer.succeed(Network, {
  network: "none",
  createHumanIdentity: () => Effect.fail(new NetworkUnavailable({ reason: "no network is configured" })),
  servingNodes: Effect.succeed([]),
  registerAgent: () => Effect.fail(new NetworkUnavailable({ reason: "no network is configured" })),
  revokeAgent: () => Effect.fail(new NetworkUnavailable({ reason: "no network is configured" })),
  issueAgentKey: () => Effect.fail(new NetworkUnavailable({ reason: "no network is configured" }))
})

/**
 * Completes the fulfilment of paid orders a crash cut short (Orders.healPaid), once at start
 * (kernel/BackgroundJobs.ts). A failure is logged, never fatal: the next replay of a completion
 * finishes the order too.
 */
const HealPaidOrders = Layer.effectDiscard(onceAtStart(
  Effect.flatMap(Orders, (orders) => orders.healPaid).pipe(
    Effect.tap((healed) => healed > 0 ? Effect.logInfo(`completed the fulfilment of ${healed} paid order(s)`) : Effect.void),
    Effect.catchCause((cause) => Effect.logWarning("could not complete interrupted order fulfilments", cause))
  )
))

/** ApiKeys with what a key's plan or rental scope names read from the plan store (keys/ScopeTargets.ts). */
export const ApiKeysLive = ApiKeys.layer.pipe(Layer.provide(ScopeTargetsFromPlans))

/** The use-cases over a catalogue; they need the stores (PlatformStores). Shells build this once. */
export const PlatformServices = (config: CatalogueConfig, options: PlatformOptions = {}) => {
  const rails = Layer.mergeAll(
    options.cardProcessor ?? cardProcessorLayer(config.payments, options.publicUrl),
    stablecoinRailLayer(config.payments, options.evm?.rail)
  )
  // Where the links it hands out point (PublicUrl.ts).
  const publicAddress = Layer.succeed(PublicAddress, { publicUrl: options.publicUrl, requestUrlFromShell: options.requestUrlFromShell })
  const money = Layer.mergeAll(Orders.layer, Tickets.layer).pipe(
    Layer.provide(Layer.mergeAll(rails, publicAddress)),
    Layer.provideMerge(Ledger.layer)
  )
  // Alerts and automatic top-ups (docs/billing.md), told by the gateway when balances change.
  const alerts = Alerts.layer.pipe(Layer.provide(options.alertMail ?? Layer.empty))
  // A failed off-session charge mails a link to pay it on-session (billing/PayLinks.ts).
  const payLinks = PayLinks.layer.pipe(Layer.provide(Layer.mergeAll(rails, publicAddress, options.alertMail ?? Layer.empty)))
  const topUps = TopUps.layer.pipe(Layer.provideMerge(alerts), Layer.provide(Layer.mergeAll(rails, money, payLinks)))
  const billing = AutoReload.layer.pipe(Layer.provideMerge(BillingWatch.layer), Layer.provideMerge(topUps), Layer.provide(rails))
  // A processor's own checkout and card pages and its webhook (docs/payments.md); the processor
  // itself too, for the routes that ask whose pages take the card.
  const cardPayments = CardEvents.layer.pipe(
    Layer.provideMerge(Layer.mergeAll(CardCheckouts.layer, Reversals.layer)),
    Layer.provideMerge(CardSetups.layer),
    Layer.provideMerge(rails),
    Layer.provide(Layer.mergeAll(money, billing))
  )
  const health = options.healthCheck === undefined ? Layer.empty : HealthChecker.layer(config, options.healthCheck)
  // The gateway, its calls and its metering observed (http/observe/Calls.ts, Metering.ts).
  const gateway = observeGateway(Gateway.layer(options.gateway).pipe(Layer.provide(observeGatewayStore))).pipe(
    Layer.provideMerge(health),
    // Each attempt at a machine a client span, its traceparent sent on (http/observe/Tracing.ts).
    Layer.provideMerge(observeMachineClient(options.machineClient ?? MachineHttpLayer)),
    Layer.provide(options.meteringJournal === undefined ? Layer.empty : observeJournal(options.meteringJournal)),
    Layer.provide(Layer.mergeAll(ApiKeysLive, money, billing))
  )
  const sweeper = options.sweepReservations === undefined
    ? Layer.empty
    : ReservationSweeper.layer(options.sweepReservations).pipe(Layer.provide(money))
  // The "evm" rail's deposit watcher (docs/payments.md "Stablecoin on an EVM chain"), and its loop.
  const watching = (() => {
    if (options.evm === undefined || config.payments.stablecoin?.processor !== "evm") return Layer.empty
    const watcher = DepositWatcher.layer.pipe(Layer.provide(options.evm.reader), Layer.provide(money))
    return options.watchDeposits === undefined ? watcher : DepositWatcher.loop(options.watchDeposits).pipe(Layer.provideMerge(watcher))
  })()
  const renewer = options.renewPlans === undefined
    ? Layer.empty
    : PlanRenewer.layer(options.renewPlans).pipe(Layer.provide(Layer.mergeAll(money, rails, alerts, payLinks)))
  // Agents (docs/agents.md): approvals at the account service, serving nodes from the network.
  const network = options.network ?? NoNetwork
  const agents = Agents.layer({ publicUrl: options.publicUrl }).pipe(
    Layer.provide(Layer.mergeAll(ApiKeysLive, options.agentApprovals ?? NoAgentApprovals, network, AgentOwnersFromPeople))
  )
  // Datasets and Fieldwork (docs/datasets.md, docs/fieldwork.md) over the blob store.
  const blobs = options.blobs ?? BlobStoreMemory
  const datasets = Datasets.layer.pipe(Layer.provide(blobs))
  const fieldwork = Layer.mergeAll(Projects.layer, Ingest.layer({ publicUrl: options.publicUrl, maxTakeBytes: options.maxTakeBytes }), Datasets.sweeper).pipe(
    Layer.provideMerge(datasets)
  )
  const jwks = options.serviceKeys === undefined ? Layer.empty : Layer.succeed(PublishedJwks, options.serviceKeys.publicJwks)
  // The network is handed on too: the first start asks it for the owner's identity (Bootstrap.ts).
  return Layer.mergeAll(
    ApiKeysLive,
    money,
    cardPayments,
    billing,
    gateway,
    sweeper,
    renewer,
    agents,
    network,
    fieldwork,
    jwks,
    publicAddress,
    watching,
    // Whether the platform is draining (readiness, http/observe/Health.ts), who reads /metrics.
    Lifecycle.layer,
    MetricsAccess.layer(options.metricsToken),
    // The operator console (operator/): its keys, and its use-cases over the platform's.
    OperatorKeys.layer(options.operatorKeys ?? []),
    Operator.layer.pipe(Layer.provide(Layer.mergeAll(ApiKeysLive, money, gateway))),
    HealPaidOrders.pipe(Layer.provide(money))
  ).pipe(
    Layer.provideMerge(Catalogue.layer(config))
  )
}

const Middleware = Layer.mergeAll(Authentication.layer, Idempotency.layer, SchemaErrors.layer)

const ApiRoutes = HttpApiBuilder.layer(PlatformApi, { openapiPath: OPENAPI_PATH }).pipe(
  Layer.provide(PlatformHandlers),
  Layer.provide(Middleware)
)

const SimulatedRoutes = HttpApiBuilder.layer(SimulatedApi).pipe(
  Layer.provide(SimulatedHandlers),
  Layer.provide(Middleware)
)

const RootRoute = HttpRouter.add(
  "GET",
  "/",
  HttpServerResponse.jsonUnsafe({ name: "Model Platform", openapi: OPENAPI_PATH, docs: DOCS_PATH, inference: "/v1" })
)

/** Every route of the platform; needs PlatformServices, the stores and HttpServer services. */
export const AppRoutes = Layer.mergeAll(
  ApiRoutes,
  SimulatedRoutes,
  CheckoutRoutes,
  WebhookRoutes,
  AccountRoutes,
  ApprovalRoutes,
  JwksRoute,
  BillingPageRoutes,
  PlansPageRoutes,
  docsPageRoute(PlatformApi, DOCS_PATH),
  RootRoute,
  HealthRoutes,
  MetricsRoute,
  OperatorApiRoutes,
  OperatorPageRoute,
  InferenceRoutes,
  IngestRoutes,
  RecordPageRoute,
  UploadRoute,
  DownloadRoute,
  fallbackRoute([PlatformApi, SimulatedApi, InferenceApi, IngestRouteTable, FileRouteTable, WebhookRouteTable], [
    OPENAPI_PATH,
    DOCS_PATH,
    INFERENCE_OPENAPI_PATH,
    JWKS_PATH,
    RECORD_PAGE_PATH,
    LIVE_PATH,
    READY_PATH,
    METRICS_PATH,
    OPERATOR_PAGE_PATH
  ]),
  ErrorShapeMiddleware,
  RequestLimitsMiddleware,
  // Last: the innermost middleware, which sees the route that answered (observability/Requests.ts).
  RouteNoter
)
