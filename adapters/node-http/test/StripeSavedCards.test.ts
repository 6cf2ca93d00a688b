/**
 * Saved cards, automatic top-ups and renewals through Stripe (the shared StripeSavedCardsSuite) on
 * the real Node server over PostgreSQL (a fresh database on TEST_DATABASE_URL, else the embedded
 * one), mail through the SMTP sender.
 */
import { FirstStart } from "@model-platform/core/accounts"
import { CardSetups } from "@model-platform/core/billing"
import { StripeCardProcessor } from "@model-platform/stripe/StripeCardProcessor"
import { createAccount } from "@model-platform/test-harness/Accounts"
import { stripeSavedCardsSuite } from "@model-platform/test-harness/StripeSavedCardsSuite"
import { Effect, Layer, ManagedRuntime, Redacted } from "effect"
import { HttpServer } from "effect/http"
import { Database } from "@model-platform/postgres-stores/database"
import { PgPlatformStores } from "@model-platform/postgres-stores"
import { serverLayer } from "../src/Server.ts"
import { SmtpEmailSender } from "../src/SmtpEmailSender.ts"
import { freshDatabaseUrl } from "./support.ts"

stripeSavedCardsSuite(
  `node-http, ${process.env.TEST_DATABASE_URL === undefined ? "embedded Postgres" : "PostgreSQL"}`,
  (options) =>
    StripeCardProcessor.layer({
      secretKey: Redacted.make(options.secretKey),
      webhookSecret: Redacted.make(options.webhookSecret),
      client: options.client
    }),
  async ({ cardProcessor, catalogue, clock, publicUrl, renewPlans, smtpUrl }) => {
    const server = process.env.TEST_DATABASE_URL
    const database = server === undefined
      ? Database.layer({ dataDir: Database.MEMORY })
      : Database.layer({ databaseUrl: await freshDatabaseUrl(server), dataDir: "" })
    const runtime = ManagedRuntime.make(serverLayer(
      {
        catalogue,
        port: 0,
        host: "127.0.0.1",
        ownerEmail: "owner@test.local",
        publicUrl,
        platform: {
          cardProcessor,
          clock,
          renewPlans,
          alertMail: SmtpEmailSender({ url: Redacted.make(smtpUrl), from: "billing@platform.test" })
        }
      },
      PgPlatformStores.pipe(Layer.provide(database))
    ))
    const [address, owner] = await runtime.runPromise(Effect.all([HttpServer.HttpServer, FirstStart]))
    if (address.address._tag === "UnixPathAddress") throw new Error("expected a TCP address")
    const url = `http://127.0.0.1:${address.address.port}`
    const setups = <A, E>(f: (setups: CardSetups["Service"]) => Effect.Effect<A, E>) =>
      runtime.runPromise(Effect.orDie(Effect.flatMap(CardSetups, f)))
    return {
      ownerSecret: owner?.key.secret ?? "",
      newAccount: () => runtime.runPromise(createAccount(`user-${crypto.randomUUID()}@test.local`)),
      fetch: (path, init) => fetch(url + path, init),
      openCardSetup: (accountId, returnUrl) => setups((s) => s.open(accountId, returnUrl)),
      completeCardSetup: (accountId, sessionId) => setups((s) => s.complete(accountId, sessionId)),
      removeCard: (accountId) => setups((s) => Effect.asVoid(s.remove(accountId))),
      close: () => runtime.dispose()
    }
  }
)
