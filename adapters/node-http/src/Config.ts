/** The Node server's configuration, from environment variables (docs/configuration.md). */
import { isLoopbackHost } from "@model-platform/core/http"
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
   * hands out (a card checkout's pay_url). Unset: a request's Host when it is a loopback address;
   * required when HOST is not one (`startProblem`).
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
  /**
   * Who may read GET /metrics besides clients on this machine: `Authorization: Bearer <token>`
   * (docs/operations.md "Metrics"). A secret: never logged.
   */
  metricsToken: Config.Redacted("METRICS_TOKEN").pipe(Config.option),
  /**
   * The operators' keys: `name:sha256-hex` entries, as `./platform admin new-key <name>` prints them
   * (docs/operations.md "The operator console"). Unset: the operator API is off.
   */
  operatorKeys: Config.String("OPERATOR_KEYS").pipe(Config.withDefault("")),
  /**
   * Admit a key's calls from credit leases (docs/performance.md "Credit leases"): only where account
   * notices are live, a PostgreSQL server (DATABASE_URL). Off by default.
   */
  creditLeases: Config.Boolean("CREDIT_LEASES").pipe(Config.withDefault(false)),
  /** Email of the owner account created at first start. */
  ownerEmail: Config.String("OWNER_EMAIL").pipe(Config.withDefault("owner@localhost"))
})

/**
 * Why the server must not start with this HOST and PUBLIC_URL, or undefined. Listening where other
 * machines reach it (HOST not a loopback address) without PUBLIC_URL, it would have nothing to
 * build its links on but the Host header a client writes (core/src/http/PublicUrl.ts).
 */
export const startProblem = (host: string, publicUrl: string | undefined): string | undefined => {
  if (publicUrl !== undefined && publicUrl !== "") {
    let url: URL | undefined
    try {
      url = new URL(publicUrl)
    } catch {
      url = undefined
    }
    return url !== undefined && (url.protocol === "https:" || url.protocol === "http:")
      ? undefined
      : `PUBLIC_URL must be an absolute http(s) URL such as https://platform.example.com; it is ${JSON.stringify(publicUrl.slice(0, 200))}.`
  }
  if (isLoopbackHost(host)) return undefined
  return `HOST is ${JSON.stringify(host)}, which other machines can reach, and PUBLIC_URL is not set: the server would have ` +
    "nothing to build the links it hands out (pay_url, return_to) on but the Host header a client writes. " +
    "Set PUBLIC_URL to the address people reach the server at (e.g. https://platform.example.com), " +
    "or listen on a loopback address (HOST=127.0.0.1, the default)."
}
