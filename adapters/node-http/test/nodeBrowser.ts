/**
 * The Node server as a browser meets it, for the browser tests (Accounts.browser.test.ts,
 * BillingPage.browser.test.ts): PostgreSQL (a fresh database on TEST_DATABASE_URL, else the
 * embedded PGlite), the demo catalogue pointed at the flow's reference machine, mail through the
 * SMTP sender. The browser opens http://localhost:<port> (passkeys need a secure context).
 */
import { FirstStart } from "@model-platform/core/accounts"
import type { PlatformOptions } from "@model-platform/core/http"
import type { CatalogueConfig } from "@model-platform/core/catalogue"
import { type FlowSetup, flowCatalogue, type PlatformUnderTest } from "@model-platform/test-harness/BrowserWorld"
import { Effect, Layer, ManagedRuntime, Redacted } from "effect"
import { HttpServer } from "effect/http"
import { readFileSync } from "node:fs"
import { type AddressInfo, createServer as createNetServer } from "node:net"
import { resolve } from "node:path"
import { Database } from "@model-platform/postgres-stores/database"
import { PgPlatformStores } from "@model-platform/postgres-stores"
import { serverLayer } from "../src/Server.ts"
import { SmtpEmailSender } from "../src/SmtpEmailSender.ts"
import { freshDatabaseUrl } from "./support.ts"

const demo = readFileSync(resolve(import.meta.dirname, "../catalogue.demo.json"), "utf8")

/** What a flow may add: another card processor (Stripe), the catalogue changed for it, plans renewing. */
export interface BrowserExtras {
  readonly catalogue?: (catalogue: CatalogueConfig) => CatalogueConfig
  readonly cardProcessor?: PlatformOptions["cardProcessor"]
  readonly renewPlans?: PlatformOptions["renewPlans"]
}

/** A free port on 127.0.0.1, for a server whose PUBLIC_URL must be known before it listens. */
const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const probe = createNetServer().listen(0, "127.0.0.1", () => {
      const port = (probe.address() as AddressInfo).port
      probe.close(() => resolve(port))
    }).on("error", reject)
  })

/** Starts the platform for a browser flow (AccountsBrowserFlow.ts FlowSetup). */
export const startNodeForBrowser = async (
  { clock, machineUrl, recoveryDelayMs, smtpUrl }: FlowSetup,
  extras: BrowserExtras = {}
): Promise<PlatformUnderTest> => {
  const catalogue = (extras.catalogue ?? ((c) => c))(flowCatalogue(demo, machineUrl))
  // With another processor, the links mailed by background work (PayLinks) need PUBLIC_URL: the port is chosen first.
  const port = extras.cardProcessor === undefined ? 0 : await freePort()
  const serverUrl = process.env.TEST_DATABASE_URL
  const database = serverUrl === undefined
    ? Database.layer({ dataDir: Database.MEMORY })
    : Database.layer({ databaseUrl: await freshDatabaseUrl(serverUrl), dataDir: "" })
  const runtime = ManagedRuntime.make(
    serverLayer(
      {
        catalogue,
        port,
        host: "127.0.0.1",
        ownerEmail: "owner@test.local",
        ...(port === 0 ? {} : { publicUrl: `http://localhost:${port}` }),
        platform: {
          clock,
          ...(extras.cardProcessor === undefined ? {} : { cardProcessor: extras.cardProcessor }),
          ...(extras.renewPlans === undefined ? {} : { renewPlans: extras.renewPlans })
        },
        accounts: {
          recoveryDelayMs,
          emailSender: SmtpEmailSender({ url: Redacted.make(smtpUrl), from: "Model Platform <no-reply@test.local>" })
        }
      },
      PgPlatformStores.pipe(Layer.provide(database))
    )
  )
  const [server, owner] = await runtime.runPromise(Effect.all([Effect.service(HttpServer.HttpServer), Effect.service(FirstStart)]))
  if (server.address._tag === "UnixPathAddress") throw new Error("expected a TCP address")
  return {
    url: `http://127.0.0.1:${server.address.port}`,
    accounts: `http://localhost:${server.address.port}/accounts`,
    ownerSecret: owner?.key.secret,
    stop: () => runtime.dispose()
  }
}
