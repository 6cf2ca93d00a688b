/**
 * Orders paid through Stripe Checkout (the shared StripeCheckoutSuite) on the real Node server,
 * over PostgreSQL (a fresh database on TEST_DATABASE_URL, else the embedded one): the official
 * client against the fake Stripe, its webhooks posted to the server.
 */
import { StripeCardProcessor } from "@model-platform/stripe/StripeCardProcessor"
import { stripeCheckoutSuite } from "@model-platform/test-harness/StripeCheckoutSuite"
import { Layer, Redacted } from "effect"
import { Database } from "@model-platform/postgres-stores/database"
import { PgPlatformStores } from "@model-platform/postgres-stores"
import { freshDatabaseUrl, startNodeServer } from "./support.ts"

const database = async () => {
  const server = process.env.TEST_DATABASE_URL
  return server === undefined
    ? Database.layer({ dataDir: Database.MEMORY })
    : Database.layer({ databaseUrl: await freshDatabaseUrl(server), dataDir: "" })
}

stripeCheckoutSuite(
  `node-http, ${process.env.TEST_DATABASE_URL === undefined ? "embedded Postgres" : "PostgreSQL"}`,
  (options) =>
    StripeCardProcessor.layer({
      secretKey: Redacted.make(options.secretKey),
      webhookSecret: Redacted.make(options.webhookSecret),
      client: options.client
    }),
  async ({ catalogue, cardProcessor }) =>
    startNodeServer(catalogue, PgPlatformStores.pipe(Layer.provide(await database())), { platform: { cardProcessor } })
)
