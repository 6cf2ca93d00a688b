/**
 * The account service in the Node shell (docs/accounts.md "Pages and routes"): its address
 * (ACCOUNTS_URL, default the platform's address + /accounts), the @simplewebauthn/browser bundle
 * the pages load (read here from node_modules: core reads no files), and the outside systems it
 * needs (the email sender of Email.ts, the simulated network).
 */
import { AccountsConfig } from "@model-platform/core/accounts"
import { ACCOUNTS_BASE } from "@model-platform/core/http"
import type { TrustedService } from "@model-platform/core/agents"
import { Config, Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import { existsSync, readFileSync } from "node:fs"
import { createRequire } from "node:module"
import * as Path from "node:path"

export const AccountsServerConfig = Config.all({
  /**
   * The account service's public address, e.g. https://platform.example.com/accounts: mailed links
   * and GET /identity's manage_url start with it, and passkeys are bound to its host name (the
   * WebAuthn RP ID). Unset: PUBLIC_URL + /accounts, else http://localhost:<port>/accounts.
   */
  accountsUrl: Config.String("ACCOUNTS_URL").pipe(Config.option)
})

const isPackageRoot = (dir: string): boolean => {
  const file = Path.join(dir, "package.json")
  return existsSync(file) && (JSON.parse(readFileSync(file, "utf8")) as { name?: string }).name === "@simplewebauthn/browser"
}

/**
 * Where @simplewebauthn/browser's UMD bundle (global `SimpleWebAuthnBrowser`) is in node_modules.
 * The Lambda shell imports this too: its bundler copies the file beside the function's code.
 */
export const webAuthnBundleFile = (): string => {
  // The package exports only its entry points: find its directory from the entry, then the bundle.
  const entry = createRequire(import.meta.url).resolve("@simplewebauthn/browser")
  let dir = Path.dirname(entry)
  while (!isPackageRoot(dir) && Path.dirname(dir) !== dir) dir = Path.dirname(dir)
  return Path.join(dir, "dist", "bundle", "index.umd.min.js")
}

/** The text of @simplewebauthn/browser's UMD bundle, from node_modules. */
export const readWebAuthnBundle = (): string => readFileSync(webAuthnBundleFile(), "utf8")

const LOOPBACK_OR_ANY = new Set(["127.0.0.1", "::1", "0.0.0.0", "::", "localhost", ""])

/**
 * The account service's address when ACCOUNTS_URL is unset: PUBLIC_URL + /accounts, else this
 * server's own address. A loopback or wildcard host becomes `localhost`: browsers make passkeys
 * only in a secure context, which http://localhost is and http://127.0.0.1 is not (no IP can be an
 * RP ID).
 */
export const defaultAccountsUrl = (options: {
  readonly publicUrl?: string | undefined
  readonly host: string
  readonly port: number
}): string => {
  if (options.publicUrl !== undefined && options.publicUrl !== "") return options.publicUrl.replace(/\/+$/, "") + ACCOUNTS_BASE
  const host = LOOPBACK_OR_ANY.has(options.host) ? "localhost" : options.host.includes(":") ? `[${options.host}]` : options.host
  return `http://${host}:${options.port}${ACCOUNTS_BASE}`
}

/** AccountsConfig from the configured URL, or from the address the server is listening on. */
export const accountsConfigLayer = (options: {
  readonly accountsUrl?: string | undefined
  readonly recoveryDelayMs?: number | undefined
  readonly publicUrl?: string | undefined
  readonly host: string
  /** The platform's client at the agent approvals API (its secret's SHA-256 only). */
  readonly platformClient?: { readonly id: string; readonly secretSha256: string } | undefined
  /** Whose service assertions the agent approvals API accepts (the platform's key). */
  readonly trustedServices?: ReadonlyArray<TrustedService> | undefined
}): Layer.Layer<AccountsConfig, never, HttpServer.HttpServer> =>
  Layer.effect(
    AccountsConfig,
    Effect.map(HttpServer.HttpServer, (server) => ({
      recoveryDelayMs: options.recoveryDelayMs,
      platformClient: options.platformClient,
      trustedServices: options.trustedServices,
      accountsUrl: options.accountsUrl !== undefined && options.accountsUrl !== ""
        ? options.accountsUrl.replace(/\/+$/, "")
        : defaultAccountsUrl({
          publicUrl: options.publicUrl,
          host: options.host,
          port: server.address._tag === "UnixPathAddress" ? 0 : server.address.port
        })
    }))
  )
