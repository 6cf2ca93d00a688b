/**
 * Starts the platform: reads the configuration, opens the database (the embedded Postgres in
 * DATA_DIR unless DATABASE_URL is set), serves the API, and on first start prints the owner key.
 */
import { NodeRuntime } from "@effect/platform-node"
import { FirstStart } from "@model-platform/core/Bootstrap"
import { Console, Effect, Layer, Option } from "effect"
import { HttpServer } from "effect/http"
import * as Path from "node:path"
import { loadCatalogue } from "./CatalogueFile.ts"
import { ServerConfig } from "./Config.ts"
import { FileMeteringJournal } from "./FileMeteringJournal.ts"
import { Database } from "./postgres/Database.ts"
import { PgPlatformStores } from "./postgres/PgPlatformStores.ts"
import { serverLayer } from "./Server.ts"

const announce = (host: string) => Effect.gen(function*() {
  const server = yield* HttpServer.HttpServer
  const owner = yield* FirstStart
  const address = server.address._tag === "UnixPathAddress"
    ? server.address.path
    : `http://${host.includes(":") ? `[${host}]` : host}:${server.address.port}`
  yield* Console.log(`Model Platform listening on ${address} (docs at ${address}/docs)`)
  if (owner !== undefined) {
    yield* Console.log(
      [
        "",
        `First start: created the owner account ${owner.account.email}.`,
        "Its API key holds every permission and is shown only this once; keep it safe:",
        "",
        `    ${owner.key.secret}`,
        "",
        `Try: curl -H "Authorization: Bearer ${owner.key.secret}" ${address}/me`,
        ""
      ].join("\n")
    )
  }
})

const main = Effect.gen(function*() {
  const config = yield* ServerConfig
  const catalogue = yield* loadCatalogue(config.catalogueFile)
  const database = Database.layer({ databaseUrl: Option.getOrUndefined(config.databaseUrl), dataDir: config.dataDir })
  const server = serverLayer(
    {
      catalogue,
      port: config.port,
      host: config.host,
      ownerEmail: config.ownerEmail,
      publicUrl: Option.getOrUndefined(config.publicUrl),
      platform: {
        healthCheck: {},
        sweepReservations: {},
        // An in-memory database (tests) keeps no journal unless one is named.
        meteringJournal: Option.isNone(config.meteringJournalDir) && config.dataDir === Database.MEMORY
          ? undefined
          : FileMeteringJournal.layer({
            directory: Option.getOrElse(config.meteringJournalDir, () => Path.join(config.dataDir, "metering"))
          })
      }
    },
    PgPlatformStores.pipe(Layer.provide(database))
  )
  return yield* Layer.launch(Layer.effectDiscard(announce(config.host)).pipe(Layer.provideMerge(server)))
})

NodeRuntime.runMain(main)
