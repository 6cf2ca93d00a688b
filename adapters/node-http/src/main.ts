/**
 * Starts the platform: reads the configuration, opens the database (the embedded Postgres in
 * DATA_DIR unless DATABASE_URL is set), serves the API, and on first start prints the owner key and
 * a one-time link that gives the owner account a passkey.
 */
import { NodeRuntime } from "@effect/platform-node"
import { AccountsConfig, FirstStart, issueClaimLink, RecoveryDelayConfig } from "@model-platform/core/accounts"
import { Console, Data, Effect, Layer, Option, Redacted, References } from "effect"
import cluster from "node:cluster"
import { HttpServer } from "effect/http"
import * as Path from "node:path"
import {
  configuredSigningKeys,
  DEFAULT_PLATFORM_CLIENT_ID,
  PlatformClientConfig,
  ServiceAssertionConfig,
  SimulatedNetwork,
  trustedPlatform
} from "@model-platform/core/agents"
import { type LogFormat, loggingLayer, type LoggingSettings, loggingSettings } from "@model-platform/core/observability"
import { tracingFromConfig } from "@model-platform/core/http"
import { PlatformMetrics } from "@model-platform/core/gateway"
import { parseOperatorKeys } from "@model-platform/core/operator"
import { evmOptionsFor } from "@model-platform/evm/EvmEnvironment"
import { shellCardProcessor, stripeSecretsFromEnv } from "@model-platform/stripe/StripeConfig"
import { AccountsServerConfig } from "./Accounts.ts"
import { loadCatalogue } from "./CatalogueFile.ts"
import { ServerConfig, startProblem } from "./Config.ts"
import { EmailConfig, emailSenderLayer, outboxDirectory } from "./Email.ts"
import { FileMeteringJournal } from "./FileMeteringJournal.ts"
import { Database } from "@model-platform/postgres-stores/database"
import { AccountNoticesPg, PgPlatformStores } from "@model-platform/postgres-stores"
import { BlobStoreDisk } from "./DiskBlobStore.ts"
import { listenForStopSignals, shutdownSettings, teardown } from "./Shutdown.ts"
import { serveReloadable } from "./Reload.ts"
import type { CatalogueConfig } from "@model-platform/core/catalogue"
import type { CatalogueReloader } from "@model-platform/core/http"
import { serverLayer } from "./Server.ts"
import { networkOverIpc } from "./WorkerNetwork.ts"
import { joinPrimary, listening, reloaded, requestedWorkers, runPrimary, type WorkerRole } from "./Workers.ts"

/** Writes announcements as they are (a terminal), or as JSON log lines where logs are JSON. */
const say = (format: LogFormat) => (text: string) => format === "json" ? Effect.logInfo(text) : Console.log(text)

const announce = (host: string, mail: string, format: LogFormat, worker: WorkerRole | undefined) => Effect.gen(function*() {
  const print = say(format)
  const server = yield* HttpServer.HttpServer
  const owner = yield* FirstStart
  const accounts = yield* AccountsConfig
  const address = server.address._tag === "UnixPathAddress"
    ? server.address.path
    : `http://${host.includes(":") ? `[${host}]` : host}:${server.address.port}`
  // A worker (Workers.ts): the first one announces; each tells the primary it listens.
  if (worker !== undefined) yield* listening(server.address._tag === "UnixPathAddress" ? 0 : server.address.port, address)
  if (worker?.announce === false) return
  yield* print(`Model Platform listening on ${address} (docs at ${address}/docs)`)
  yield* print(`Account service at ${accounts.accountsUrl} (sign up at ${accounts.accountsUrl}/sign-up); ${mail}`)
  if (owner !== undefined) {
    // Beside the key: where the owner attaches a passkey (to approve agents; docs/accounts.md "The owner").
    const claim = yield* Effect.orDie(issueClaimLink(owner.account.id, accounts.accountsUrl))
    yield* print(
      [
        "",
        `First start: created the owner account ${owner.account.email}.`,
        "Its API key holds every permission and is shown only this once; keep it safe:",
        "",
        `    ${owner.key.secret}`,
        "",
        `Try: curl -H "Authorization: Bearer ${owner.key.secret}" ${address}/me`,
        "",
        "To approve agents the account needs a passkey: open this one-time link in a browser",
        `(it works until ${claim.expires_at}; POST /identity/claim-link with the key makes another):`,
        "",
        `    ${claim.claim_url}`,
        ""
      ].join("\n")
    )
  }
})

/** The server cannot start as configured (Config.ts startProblem). */
class StartRefused extends Data.TaggedError("StartRefused")<{ readonly message: string }> {}

/** How this process serves: alone (`worker` undefined) or as one of a primary's workers (Workers.ts). */
interface Role {
  /** The processes asked for (--workers, WORKERS). */
  readonly requested: number
  readonly worker?: WorkerRole | undefined
}

const main = (logging: LoggingSettings, role: Role) => Effect.gen(function*() {
  const config = yield* ServerConfig
  const problem = startProblem(config.host, Option.getOrUndefined(config.publicUrl))
  if (problem !== undefined) return yield* Effect.fail(new StartRefused({ message: problem }))
  if (role.worker === undefined && role.requested > 1) {
    // PGlite runs inside the process that opened it, and one data directory takes one process.
    yield* Effect.logWarning(
      `${role.requested} server processes were asked for (--workers or WORKERS), but the embedded database serves one process: ` +
        "serving from this one. Set DATABASE_URL to a PostgreSQL server to run several (docs/operations.md \"Several processes\")."
    )
  }
  const shutdown = yield* shutdownSettings
  const operatorKeys = yield* parseOperatorKeys(config.operatorKeys)
  const catalogue = yield* loadCatalogue(config.catalogueFile)
  // The payment rails' secrets and chains are read at start, for the catalogue the server starts
  // with: a reload that changes `payments` needs a restart (docs/operations.md "Reloading the catalogue").
  // The "evm" stablecoin rail: its chains' RPC URLs and xpubs from the variables the catalogue names.
  const evm = evmOptionsFor(catalogue.payments, process.env)
  if ("problems" in evm) {
    return yield* Effect.fail(new StartRefused({ message: `The "evm" stablecoin rail cannot start: ${evm.problems.join("; ")}.` }))
  }
  // payments.card.processor "stripe": STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET (docs/payments.md).
  const cardProcessor = yield* shellCardProcessor(catalogue, stripeSecretsFromEnv)
  const databaseOptions = { databaseUrl: Option.getOrUndefined(config.databaseUrl), dataDir: config.dataDir }
  const database = Database.layer(databaseOptions)
  const email = yield* EmailConfig
  const accountsUrl = (yield* AccountsServerConfig).accountsUrl
  // Without SMTP, an operator confirms a sign-up from the outbox: say where it is.
  const mail = Option.isSome(email.smtpUrl)
    ? "mail is sent through SMTP_URL"
    : `mail is written to the outbox ${Path.resolve(outboxDirectory(email))} (open the newest file to follow its link)`
  // Service assertions: PLATFORM_SIGNING_KEY, else a fresh key for this process (Server.ts).
  const platformClient = yield* PlatformClientConfig
  const assertions = yield* ServiceAssertionConfig
  const serviceKeys = yield* configuredSigningKeys(assertions.signingKey)
  const trustedServices = Option.isSome(assertions.jwks)
    ? yield* trustedPlatform(platformClient?.id ?? DEFAULT_PLATFORM_CLIENT_ID, serviceKeys, assertions.jwks)
    : undefined
  const recoveryDelayMs = yield* RecoveryDelayConfig

  // What outlives a catalogue reload (Reload.ts), built once: the database, the metering journal,
  // the network, the metrics.
  // On a PostgreSQL server, every process hears at once of a change to an account's tier, billing
  // settings, agents or plans (PgAccountNotices.ts), and keeps those until then; the embedded
  // database has no connection to spare for the listener.
  const stores = yield* Layer.build(
    (Database.onServer(databaseOptions) ? Layer.merge(PgPlatformStores, AccountNoticesPg) : PgPlatformStores).pipe(Layer.provide(database))
  )
  // An in-memory database (tests) keeps no journal unless one is named.
  const journal = Option.isNone(config.meteringJournalDir) && config.dataDir === Database.MEMORY
    ? undefined
    : yield* Layer.build(FileMeteringJournal.layer({
      directory: Option.getOrElse(config.meteringJournalDir, () => Path.join(config.dataDir, "metering"))
    }))
  // With workers, the one simulated network is the primary's (WorkerNetwork.ts).
  const network = yield* Layer.build(role.worker === undefined ? SimulatedNetwork.fromConfig : networkOverIpc)
  const processState = yield* Layer.build(PlatformMetrics)
  yield* listenForStopSignals

  const server = (catalogue: CatalogueConfig, port: number, catalogueReloader: Layer.Layer<CatalogueReloader>) =>
    serverLayer(
      {
        catalogue,
        port,
        host: config.host,
        shutdownTimeoutMs: shutdown.timeoutMs,
        reusePort: true,
        processState: Layer.succeedContext(processState),
        catalogueReloader,
        ownerEmail: config.ownerEmail,
        publicUrl: Option.getOrUndefined(config.publicUrl),
        platform: {
          // GET /metrics for clients elsewhere with this token (an empty one is none).
          metricsToken: Option.getOrUndefined(Option.filter(config.metricsToken, (token) => Redacted.value(token) !== "")),
          operatorKeys,
          healthCheck: {},
          sweepReservations: {},
          // Card plans renewed at their period's end (billing/Renewals.ts).
          renewPlans: {},
          // Stablecoin deposits on EVM chains, watched every 15 s (payments/DepositWatcher.ts).
          evm: evm.evm,
          watchDeposits: {},
          cardProcessor,
          // An in-memory database (tests) keeps its blobs in memory too unless a directory is named.
          blobs: Option.isNone(config.blobDir) && config.dataDir === Database.MEMORY
            ? undefined
            : BlobStoreDisk(Option.getOrElse(config.blobDir, () => Path.join(config.dataDir, "blobs"))),
          meteringJournal: journal === undefined ? undefined : Layer.succeedContext(journal),
          gateway: { creditLeases: config.creditLeases }
        },
        accounts: {
          accountsUrl: Option.getOrUndefined(accountsUrl),
          recoveryDelayMs,
          emailSender: emailSenderLayer(email),
          network: Layer.succeedContext(network)
        },
        // The agent approvals API's client: configured, or a random secret for this process.
        platformClient,
        serviceKeys,
        trustedServices
      },
      Layer.succeedContext(stores)
    )
  return yield* serveReloadable({
    initial: catalogue,
    // PORT, at the first start; a reload takes over the port in use.
    server: (next, port, reloader) => server(next, port === 0 ? config.port : port, reloader),
    load: loadCatalogue(config.catalogueFile),
    started: announce(config.host, mail, logging.format, role.worker),
    shutdown,
    reloadedByApi: role.worker === undefined ? undefined : reloaded
  })
}).pipe(Effect.scoped)

// LOG_FORMAT (pretty unless json) and LOG_LEVEL, for everything the server writes (docs/operations.md "Logs").
// A stop signal drains the server and exits 0 (Shutdown.ts).
// OTEL_EXPORTER_OTLP_ENDPOINT: traces exported over OTLP (docs/operations.md "Traces"), flushed at exit.
// A worker's lines carry its pid.
const serve = (role: Role) =>
  NodeRuntime.runMain(
    Effect.flatMap(loggingSettings("pretty"), (logging) =>
      main(logging, role).pipe(Effect.provide(Layer.mergeAll(
        loggingLayer(logging),
        tracingFromConfig,
        role.worker === undefined ? Layer.empty : Layer.succeed(References.CurrentLogAnnotations, { pid: process.pid })
      )))),
    { teardown }
  )

// --workers N or WORKERS=N on a PostgreSQL server: a primary and N workers (Workers.ts).
const requested = requestedWorkers(process.argv.slice(2), process.env)
if (cluster.isWorker) {
  serve({ requested: 1, worker: await joinPrimary() })
} else if ("problem" in requested) {
  console.error(requested.problem)
  process.exitCode = 1
} else if (requested.workers > 1 && (process.env.DATABASE_URL ?? "").trim() !== "") {
  const json = (process.env.LOG_FORMAT ?? "").trim().toLowerCase() === "json"
  await runPrimary(requested.workers, (text) =>
    console.log(json ? JSON.stringify({ time: new Date().toISOString(), level: "info", message: text, pid: process.pid }) : text))
} else {
  serve({ requested: requested.workers })
}
