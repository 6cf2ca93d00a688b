/** The shared HTTP suite through the real Node server, on every store the Node shell has. */
import { MAX_HEADER_BYTES } from "@model-platform/core/kernel"
import { type AlertsSetup, billingAlertsSuite } from "@model-platform/test-harness/BillingAlertsSuite"
import { billingStatementsSuite } from "@model-platform/test-harness/BillingStatementsSuite"
import { billingUsageSuite } from "@model-platform/test-harness/BillingUsageSuite"
import { boundarySuite, nodeRawSender } from "@model-platform/test-harness/BoundarySuite"
import { checkoutOnceSuite } from "@model-platform/test-harness/CheckoutOnceSuite"
import { fixtureCatalogue } from "@model-platform/test-harness/Fixtures"
import { giftCodesSuite } from "@model-platform/test-harness/GiftCodesSuite"
import { platformHttpSuite } from "@model-platform/test-harness/HttpSuite"
import { permissionMatrixSuite } from "@model-platform/test-harness/PermissionMatrix"
import { MemoryPlatformStores } from "@model-platform/memory-stores/MemoryPlatformStores"
import { Layer, Redacted } from "effect"
import { connect } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Database } from "@model-platform/postgres-stores/database"
import { PgPlatformStores } from "@model-platform/postgres-stores"
import { SmtpEmailSender } from "../src/SmtpEmailSender.ts"
import { freshDatabaseUrl, startNodeServer } from "./support.ts"

platformHttpSuite("node-http, memory stores", () => startNodeServer(fixtureCatalogue, MemoryPlatformStores))

platformHttpSuite("node-http, embedded Postgres", () =>
  startNodeServer(fixtureCatalogue, PgPlatformStores.pipe(Layer.provide(Database.layer({ dataDir: Database.MEMORY })))))

billingUsageSuite("node-http, memory stores", () => startNodeServer(fixtureCatalogue, MemoryPlatformStores))

billingUsageSuite("node-http, embedded Postgres", () =>
  startNodeServer(fixtureCatalogue, PgPlatformStores.pipe(Layer.provide(Database.layer({ dataDir: Database.MEMORY })))))

billingStatementsSuite("node-http, memory stores", () => startNodeServer(fixtureCatalogue, MemoryPlatformStores))

billingStatementsSuite("node-http, embedded Postgres", () =>
  startNodeServer(fixtureCatalogue, PgPlatformStores.pipe(Layer.provide(Database.layer({ dataDir: Database.MEMORY })))))

/** Alert mail over the suite's SMTP server. */
const alertMail = ({ smtpUrl }: AlertsSetup) => ({
  platform: { alertMail: SmtpEmailSender({ url: Redacted.make(smtpUrl), from: "billing@platform.test" }) }
})

billingAlertsSuite("node-http, memory stores", (setup) => startNodeServer(setup.catalogue, MemoryPlatformStores, alertMail(setup)))

billingAlertsSuite("node-http, embedded Postgres", (setup) =>
  startNodeServer(setup.catalogue, PgPlatformStores.pipe(Layer.provide(Database.layer({ dataDir: Database.MEMORY }))), alertMail(setup)))

checkoutOnceSuite("node-http, embedded Postgres", (platform) =>
  startNodeServer(fixtureCatalogue, PgPlatformStores.pipe(Layer.provide(Database.layer({ dataDir: Database.MEMORY }))), { platform }))

permissionMatrixSuite("node-http, embedded Postgres", () =>
  startNodeServer(fixtureCatalogue, PgPlatformStores.pipe(Layer.provide(Database.layer({ dataDir: Database.MEMORY })))))

giftCodesSuite("node-http, embedded Postgres", () =>
  startNodeServer(fixtureCatalogue, PgPlatformStores.pipe(Layer.provide(Database.layer({ dataDir: Database.MEMORY })))))

/** The Node server with a sender that puts the request target on the socket as given. */
const withRawSender = async (started: ReturnType<typeof startNodeServer>) => {
  const shell = await started
  return { ...shell, raw: nodeRawSender(shell.url) }
}

boundarySuite("node-http, embedded Postgres", () =>
  withRawSender(startNodeServer(fixtureCatalogue, PgPlatformStores.pipe(Layer.provide(Database.layer({ dataDir: Database.MEMORY }))))))

/** Bytes on a socket, and what came back before the server closed it. */
const overSocket = (url: string, bytes: string) =>
  new Promise<string>((resolve, reject) => {
    const { hostname, port } = new URL(url)
    const socket = connect(Number(port), hostname, () => socket.write(bytes, "latin1"))
    let answer = ""
    socket.on("data", (chunk) => (answer += chunk.toString("utf8")))
    socket.on("close", () => resolve(answer))
    socket.on("error", reject)
  })

describe("node-http: requests Node's parser refuses are answered in the surface's shape", () => {
  let shell: Awaited<ReturnType<typeof startNodeServer>>
  beforeAll(async () => {
    shell = await startNodeServer(fixtureCatalogue, MemoryPlatformStores)
  })
  afterAll(async () => {
    await shell?.close()
  })
  const bodyOf = (answer: string) => JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4))
  it("a NUL byte in the request line -> 400 invalid_request in the platform shape", async () => {
    const answer = await overSocket(shell.url, "GET /orders/\u0000x HTTP/1.1\r\nHost: a\r\n\r\n")
    expect(answer).toMatch(/^HTTP\/1\.1 400 /)
    expect(bodyOf(answer)).toEqual({ error: { code: "invalid_request", message: expect.any(String) } })
  })
  it("headers over the limit under /v1 -> 431 in the inference shape", async () => {
    const answer = await overSocket(shell.url, `GET /v1/models HTTP/1.1\r\nHost: a\r\nX-Padding: ${"a".repeat(MAX_HEADER_BYTES)}\r\n\r\n`)
    expect(answer).toMatch(/^HTTP\/1\.1 431 /)
    expect(bodyOf(answer)).toEqual({ error: { message: expect.any(String), type: "invalid_request_error", code: "headers_too_large" } })
  })
})

const serverUrl = process.env.TEST_DATABASE_URL
describe.skipIf(serverUrl === undefined)("on a PostgreSQL server (TEST_DATABASE_URL)", () => {
  platformHttpSuite("node-http, PostgreSQL server", async () =>
    startNodeServer(
      fixtureCatalogue,
      PgPlatformStores.pipe(Layer.provide(Database.layer({ databaseUrl: await freshDatabaseUrl(serverUrl!), dataDir: "" })))
    ))
  billingUsageSuite("node-http, PostgreSQL server", async () =>
    startNodeServer(
      fixtureCatalogue,
      PgPlatformStores.pipe(Layer.provide(Database.layer({ databaseUrl: await freshDatabaseUrl(serverUrl!), dataDir: "" })))
    ))
  billingStatementsSuite("node-http, PostgreSQL server", async () =>
    startNodeServer(
      fixtureCatalogue,
      PgPlatformStores.pipe(Layer.provide(Database.layer({ databaseUrl: await freshDatabaseUrl(serverUrl!), dataDir: "" })))
    ))
  billingAlertsSuite("node-http, PostgreSQL server", async (setup) =>
    startNodeServer(
      setup.catalogue,
      PgPlatformStores.pipe(Layer.provide(Database.layer({ databaseUrl: await freshDatabaseUrl(serverUrl!), dataDir: "" }))),
      alertMail(setup)
    ))
  boundarySuite("node-http, PostgreSQL server", async () =>
    withRawSender(startNodeServer(
      fixtureCatalogue,
      PgPlatformStores.pipe(Layer.provide(Database.layer({ databaseUrl: await freshDatabaseUrl(serverUrl!), dataDir: "" })))
    )))
})
