/** The Node server's configuration, from environment variables (docs/configuration.md). */
import { Config } from "effect"
import { DEMO_CATALOGUE } from "./CatalogueFile.ts"

export const ServerConfig = Config.all({
  /** Port to listen on; 0 picks a free one. */
  port: Config.Int("PORT").pipe(Config.withDefault(8080)),
  host: Config.String("HOST").pipe(Config.withDefault("127.0.0.1")),
  /** A PostgreSQL server; without it the embedded Postgres in DATA_DIR is used. */
  databaseUrl: Config.String("DATABASE_URL").pipe(Config.option),
  dataDir: Config.String("DATA_DIR").pipe(Config.withDefault(".data")),
  catalogueFile: Config.String("CATALOGUE_FILE").pipe(Config.withDefault(DEMO_CATALOGUE)),
  /**
   * The platform's public base URL, e.g. https://platform.example.com: the base of the addresses it
   * hands out (a card checkout's pay_url). Unset: the address each request was sent to.
   */
  publicUrl: Config.String("PUBLIC_URL").pipe(Config.option),
  /**
   * Where each process journals the calls it answered until they are metered (docs/gateway.md
   * "Metering that survives faults"); several processes may share it. Default DATA_DIR/metering.
   */
  meteringJournalDir: Config.String("METERING_JOURNAL_DIR").pipe(Config.option),
  /**
   * Where dataset files and fieldwork takes are kept on disk (docs/datasets.md); several
   * processes may share it. Default DATA_DIR/blobs.
   */
  blobDir: Config.String("BLOB_DIR").pipe(Config.option),
  /** Email of the owner account created at first start. */
  ownerEmail: Config.String("OWNER_EMAIL").pipe(Config.withDefault("owner@localhost"))
})
