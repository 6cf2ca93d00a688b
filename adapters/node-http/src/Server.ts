/**
 * The Node shell: serves core's routes with @effect/platform-node over the stores it is given.
 * No rule lives here; it wires layers.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { AccountsConfig, AccountService, Approvals } from "@model-platform/core/accounts"
import type { CatalogueConfig } from "@model-platform/core/catalogue"
import {
  AccountPagesSettings,
  AppRoutes,
  errorBody,
  makePlatform,
  observeRequests,
  type PlatformOptions,
  type PlatformStores,
  SERVE_OPTIONS
} from "@model-platform/core/http"
import { MAX_HEADER_BYTES } from "@model-platform/core/kernel"
import type { EmailSender } from "@model-platform/core/kernel"
import type { Network } from "@model-platform/core/agents"
import {
  accountServiceView,
  ApprovalsHttpClient,
  generateSigningKeys,
  type PlatformClient,
  randomPlatformClient,
  type SigningKeys,
  SimulatedNetwork,
  type TrustedService
} from "@model-platform/core/agents"
import { Effect, Layer, Redacted } from "effect"
import { REQUEST_ID_HEADER, requestIdOf } from "@model-platform/core/observability"
import type { CatalogueReloader } from "@model-platform/core/http"
import { Duration } from "effect"
import { HttpRouter } from "effect/http"
import { createServer, type Server, type ServerResponse, STATUS_CODES } from "node:http"
import type { Duplex } from "node:stream"
import { accountsConfigLayer, readWebAuthnBundle } from "./Accounts.ts"
import { MachineNodeHttpLayer } from "./MachineNodeHttp.ts"
import { V1Gate, V1Listener } from "./V1Listener.ts"

export type Stores = PlatformStores

export interface ServerOptions {
  readonly catalogue: CatalogueConfig
  readonly port: number
  readonly host: string
  readonly ownerEmail: string
  /**
   * At shutdown, how long the requests in flight (streams among them) have to finish once the
   * server stopped listening (SHUTDOWN_TIMEOUT_S, Shutdown.ts). Default: 20 s.
   */
  readonly shutdownTimeoutMs?: number | undefined
  /**
   * Listen with SO_REUSEPORT, so that a second server of this process can take the port over while
   * this one drains (a catalogue reload, main.ts). Linux only.
   */
  readonly reusePort?: boolean | undefined
  /**
   * The process's metric registry and gateway activity (gateway/Activity.ts PlatformMetrics),
   * when it outlives this server (the servers a reload makes share it). Default: a fresh one.
   */
  readonly processState?: Layer.Layer<never> | undefined
  /** How the operator API reloads the catalogue (main.ts). None: 501 there. */
  readonly catalogueReloader?: Layer.Layer<CatalogueReloader> | undefined
  /** PUBLIC_URL: the base of the addresses handed out (pay_url); unset, each request's own address. */
  readonly publicUrl?: string | undefined
  /** Background work and gateway settings (main.ts turns health checks and the sweeper on). */
  readonly platform?: Omit<PlatformOptions, "publicUrl"> | undefined
  /** The account service (docs/accounts.md "Pages and routes"). */
  readonly accounts?: AccountsOptions | undefined
  /**
   * The platform's client at the account service's agent approvals API (agents/PlatformClient.ts);
   * unset: a random secret for this process, which serves both.
   */
  readonly platformClient?: PlatformClient | undefined
  /**
   * The key the platform signs its calls to the account service with (service assertions,
   * PLATFORM_SIGNING_KEY) and publishes at /.well-known/jwks.json; unset: a fresh key for this
   * process, which serves both.
   */
  readonly serviceKeys?: SigningKeys | undefined
  /**
   * Whose assertions the account service accepts: PLATFORM_JWKS when configured, else the public
   * part of `serviceKeys` (ServiceAssertions.trustedPlatform).
   */
  readonly trustedServices?: ReadonlyArray<TrustedService> | undefined
}

export interface AccountsOptions {
  /** ACCOUNTS_URL; unset: PUBLIC_URL + /accounts, else http://localhost:<port>/accounts (Accounts.ts). */
  readonly accountsUrl?: string | undefined
  /** How mail leaves (Email.ts emailSenderLayer: SMTP or the outbox). */
  readonly emailSender: Layer.Layer<EmailSender, unknown>
  /** How long a recovery link waits before it works (AccountsConfig; default 24 h). */
  readonly recoveryDelayMs?: number | undefined
  /** Where identities live. Default: the simulated network. */
  readonly network?: Layer.Layer<Network, unknown> | undefined
}

/**
 * The platform listening on host:port, with the owner created on first start. Provides the
 * HttpServer (its address), FirstStart (the owner key to print, once), and the use-cases and
 * stores it serves (for an operator's command or a test run in the same process).
 */
export const serverLayer = <E, R>(options: ServerOptions, stores: Layer.Layer<Stores, E, R>) =>
  // The key is made before the layers, so the platform signs with the very key the account service trusts.
  Layer.unwrap(Effect.map(
    options.serviceKeys === undefined ? generateSigningKeys : Effect.succeed(options.serviceKeys),
    (keys) => serverLayerWith(options, keys, stores)
  ))

const serverLayerWith = <E, R>(options: ServerOptions, keys: SigningKeys, stores: Layer.Layer<Stores, E, R>) => {
  // One server, shared by the routes, the /v1 listener and the account service's default address (its port).
  const gate = new V1Gate()
  const nodeServer = NodeHttpServer.layer(makeNodeServer(gate), {
    port: options.port,
    host: options.host,
    ...(options.reusePort === true ? { reusePort: true } : {}),
    ...(options.shutdownTimeoutMs === undefined ? {} : { gracefulShutdownTimeout: Duration.millis(options.shutdownTimeoutMs) })
  })
  const client = options.platformClient ?? randomPlatformClient()
  // The platform's name in its assertions is its client id at the account service.
  const signer = { iss: client.id, keys }
  const accountsConfig = accountsConfigLayer({
    accountsUrl: options.accounts?.accountsUrl,
    recoveryDelayMs: options.accounts?.recoveryDelayMs,
    publicUrl: options.publicUrl,
    host: options.host,
    platformClient: accountServiceView(client),
    trustedServices: options.trustedServices ?? [{ iss: client.id, jwks: keys.publicJwks }]
  }).pipe(Layer.provide(nodeServer))
  // One network for the account service (identities, agents) and the platform (serving nodes).
  const network = (options.accounts?.network ?? SimulatedNetwork.layer()).pipe(Layer.orDie)
  const platform: PlatformOptions = {
    // The platform asks the account service here for agent approvals, over HTTP as any client would.
    agentApprovals: AccountsConfig.approvalsClient({ clientId: client.id, clientSecret: Redacted.value(client.secret), signer }).pipe(
      Layer.provide(accountsConfig),
      Layer.orDie
    ),
    network,
    ...options.platform,
    // Machines are called over node:http (keep-alive Agent): far less CPU per call than fetch.
    machineClient: options.platform?.machineClient ?? MachineNodeHttpLayer,
    publicUrl: options.publicUrl,
    serviceKeys: keys,
    // Billing alerts go out the way the account service's mail does (SMTP or the outbox).
    alertMail: options.platform?.alertMail ?? options.accounts?.emailSender
  }
  const pages = Layer.sync(AccountPagesSettings, () => ({ webauthnBundle: readWebAuthnBundle(), platformUrl: options.publicUrl }))
  // The inference calls go to a plain listener (V1Listener.ts); it is released after the router's
  // server, so that calls in flight at a shutdown have the server's shutdown timeout too.
  const http = HttpRouter.serve(AppRoutes, { ...SERVE_OPTIONS, disableListenLog: true, middleware: (app) => observeRequests(app) }).pipe(
    Layer.provide(pages),
    Layer.provideMerge(V1Listener.layer(gate)),
    Layer.provideMerge(nodeServer)
  )
  // Without its options (a test of the API alone) the account service is not served: 503 pages.
  const accounts = options.accounts === undefined
    ? accountsConfig
    : Layer.mergeAll(AccountService.layer, Approvals.layer).pipe(
      Layer.provide(Layer.mergeAll(options.accounts.emailSender, network)),
      Layer.provideMerge(accountsConfig)
    )
  return makePlatform({
    catalogue: options.catalogue,
    stores,
    options: platform,
    owner: { email: options.ownerEmail },
    beside: http.pipe(Layer.provideMerge(accounts)),
    // The process's metrics when they outlive this server (a reload), else its own.
    metrics: options.processState,
    under: options.catalogueReloader
  })
}

/**
 * The node:http server: its parser refuses a request line and headers over MAX_HEADER_BYTES (431)
 * before the platform sees the request, so those refusals, and a request that is not HTTP at all,
 * are answered here in the platform's JSON error shape instead of Node's empty ones.
 */
const makeNodeServer = (gate: V1Gate) => () =>
  closingPromptly(gate.install(createServer({ maxHeaderSize: MAX_HEADER_BYTES }).on("clientError", answerClientError)))

/**
 * Node's `close` stops listening and waits for the open connections, but a keep-alive connection
 * that becomes idle later stays open and takes the next request. While this server closes (a
 * shutdown, or a reload handing over to a new server, Reload.ts), an answer not yet begun tells its
 * client to close the connection, and idle connections are closed as they become idle: a client
 * then connects again, to the server in use.
 */
const closingPromptly = (server: Server): Server => {
  const answering = new Set<ServerResponse>()
  // Every request, the /v1 listener's too (it takes its requests before the "request" listeners).
  const emit = server.emit.bind(server) as (event: string, ...args: Array<unknown>) => boolean
  server.emit = ((event: string, ...args: Array<unknown>) => {
    if (event === "request" || event === "checkContinue") {
      const response = args[1] as ServerResponse
      if (!server.listening) response.shouldKeepAlive = false
      answering.add(response)
      response.once("close", () => answering.delete(response))
    }
    return emit(event, ...args)
  }) as Server["emit"]
  const close = server.close.bind(server)
  server.close = (callback?: (error?: Error) => void) => {
    for (const response of answering) if (!response.headersSent) response.shouldKeepAlive = false
    const idle = setInterval(() => server.closeIdleConnections(), 50)
    server.once("close", () => clearInterval(idle))
    return close(callback)
  }
  return server
}

const answerClientError = (error: Error & { readonly code?: string; readonly rawPacket?: Buffer }, socket: Duplex) => {
  // As Node's own handler: nothing to answer on a connection the client already closed.
  if (error.code === "ECONNRESET" || !socket.writable) return socket.destroy()
  const [status, message] = error.code === "HPE_HEADER_OVERFLOW"
    ? [431, `The request line and headers are larger than ${MAX_HEADER_BYTES} bytes.`] as const
    : error.code === "ERR_HTTP_REQUEST_TIMEOUT"
    ? [408, "The request did not arrive in time."] as const
    : [400, "The request is not valid HTTP."] as const
  // The path picks the surface's shape (/v1: inference); the request line is what arrived first.
  const target = /^[A-Z]+ (\S+)/.exec(error.rawPacket?.toString("latin1") ?? "")?.[1] ?? "/"
  const body = JSON.stringify(errorBody(target.split("?")[0] ?? "/", status, message))
  // Every answer has a request id (observability/Requests.ts); this request never reached the platform.
  const requestId = Effect.runSync(requestIdOf(undefined))
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json\r\n` +
      `${REQUEST_ID_HEADER}: ${requestId}\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`
  )
}
