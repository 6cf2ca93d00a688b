/**
 * The Node server as a browser meets it, for the browser tests (Accounts.browser.test.ts,
 * BillingPage.browser.test.ts): PostgreSQL (a fresh database on TEST_DATABASE_URL, else the
 * embedded PGlite), the demo catalogue pointed at the flow's reference machine, mail through the
 * SMTP sender. The browser opens http://localhost:<port> (passkeys need a secure context).
 */
import { FirstStart } from "@model-platform/core/accounts"
import { type FlowSetup, flowCatalogue, type PlatformUnderTest } from "@model-platform/test-harness/BrowserWorld"
import { Effect, Layer, ManagedRuntime, Redacted } from "effect"
import { HttpServer } from "effect/http"
import { readFileSync } from "node:fs"
import { resolve } from "node:path"
import { Database } from "../src/postgres/Database.ts"
import { PgPlatformStores } from "../src/postgres/PgPlatformStores.ts"
import { serverLayer } from "../src/Server.ts"
import { SmtpEmailSender } from "../src/SmtpEmailSender.ts"
import { freshDatabaseUrl } from "./support.ts"

const demo = readFileSync(resolve(import.meta.dirname, "../catalogue.demo.json"), "utf8")

/** Starts the platform for a browser flow (AccountsBrowserFlow.ts FlowSetup). */
export const startNodeForBrowser = async ({ clock, machineUrl, recoveryDelayMs, smtpUrl }: FlowSetup): Promise<PlatformUnderTest> => {
  const catalogue = flowCatalogue(demo, machineUrl)
  const serverUrl = process.env.TEST_DATABASE_URL
  const database = serverUrl === undefined
    ? Database.layer({ dataDir: Database.MEMORY })
    : Database.layer({ databaseUrl: await freshDatabaseUrl(serverUrl), dataDir: "" })
  const runtime = ManagedRuntime.make(
    serverLayer(
      {
        catalogue,
        port: 0,
        host: "127.0.0.1",
        ownerEmail: "owner@test.local",
        platform: { clock },
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
