/**
 * The account service in the Lambda shell (docs/accounts.md "Pages and routes", docs/lambda.md
 * "The account service"): AccountService over the DynamoDB people store, its address
 * (AccountsConfig), and what its pages load (AccountPagesSettings: the @simplewebauthn/browser
 * bundle, the platform's address for the "call a model" examples).
 *
 * The Node shell's modules are reused rather than copied: the WebAuthn bundle's location
 * (node-http/src/Accounts.ts) here, the SMTP sender (node-http/src/SmtpEmailSender.ts, runtime
 * neutral) in lambda.ts. Importing only those modules keeps the rest of the Node shell (its
 * server, PostgreSQL) out of the function's bundle.
 */
import { AccountsConfig, AccountService, Approvals } from "@model-platform/core/accounts"
import { ApprovalsHttpClient, SimulatedNetwork } from "@model-platform/core/agents"
import type { Network, PlatformClient, ServiceSigner, TrustedService } from "@model-platform/core/agents"
import type { PlatformOptions } from "@model-platform/core/http"
import { ACCOUNTS_BASE, AccountPagesSettings } from "@model-platform/core/http"
import type { EmailSender } from "@model-platform/core/kernel"
import { readWebAuthnBundle } from "@model-platform/node-http/Accounts"
import { Effect, Layer, Redacted } from "effect"
import { existsSync, readFileSync } from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { LambdaConfigError } from "./Config.ts"
import { ENV } from "./ConfigNames.ts"

export interface AccountsOptions {
  /**
   * ACCOUNTS_URL: the account service's public address (mailed links, passkeys' RP ID, the origin
   * POSTs must come from). Unset: PUBLIC_URL + /accounts. A function has no address of its own to
   * fall back on, as the Node server has its listening port: with neither, the build fails.
   */
  readonly accountsUrl?: string | undefined
  /** How mail leaves: SMTP on Lambda (lambda.ts), a memory outbox in tests. */
  readonly emailSender: Layer.Layer<EmailSender, unknown>
  /** How long a recovery link waits before it works (default 24 h). */
  readonly recoveryDelayMs?: number | undefined
  /** Where identities live. Default: the simulated network. */
  readonly network?: Layer.Layer<Network, unknown> | undefined
}

/** The name cdk/bundle.ts gives the WebAuthn bundle beside index.mjs. */
export const WEBAUTHN_BUNDLE_FILE = "simplewebauthn-browser.umd.min.js"

/**
 * The text of @simplewebauthn/browser's UMD bundle: beside this module's code when it runs from
 * the deployment bundle (a function has no node_modules), else from node_modules (tests).
 */
export const readBundledWebAuthn = (): string => {
  const beside = Path.join(Path.dirname(fileURLToPath(import.meta.url)), WEBAUTHN_BUNDLE_FILE)
  return existsSync(beside) ? readFileSync(beside, "utf8") : readWebAuthnBundle()
}

const withoutTrailingSlash = (url: string) => url.replace(/\/+$/, "")

/** ACCOUNTS_URL, else PUBLIC_URL + /accounts, else a configuration error naming both. */
export const accountsUrlOf = (accountsUrl: string | undefined, publicUrl: string | undefined): string | LambdaConfigError =>
  accountsUrl !== undefined && accountsUrl !== ""
    ? withoutTrailingSlash(accountsUrl)
    : publicUrl !== undefined && publicUrl !== ""
    ? withoutTrailingSlash(publicUrl) + ACCOUNTS_BASE
    : new LambdaConfigError({
      message: `the account service needs its public address: set ${ENV.accountsUrl} ` +
        `(e.g. https://<api domain>/accounts) or ${ENV.publicUrl} (it is then <${ENV.publicUrl}>/accounts)`
    })

/**
 * AccountService with AccountsConfig and AccountPagesSettings, over the platform's services and
 * stores (AccountService.layer's requirements). Fails at build when no address is configured.
 */
export const accountsLayer = (
  options: AccountsOptions,
  publicUrl: string | undefined,
  platformClient: { readonly id: string; readonly secretSha256: string },
  /** Whose service assertions the agent approvals API accepts (Handler.ts: the platform's key). */
  trustedServices: ReadonlyArray<TrustedService> = []
) =>
  Layer.unwrap(Effect.gen(function*() {
    const accountsUrl = accountsUrlOf(options.accountsUrl, publicUrl)
    if (accountsUrl instanceof LambdaConfigError) return yield* accountsUrl
    const config = Layer.succeed(AccountsConfig, { accountsUrl, recoveryDelayMs: options.recoveryDelayMs, platformClient, trustedServices })
    // Read once per container, at build: the pages serve it from memory.
    const pages = Layer.sync(AccountPagesSettings, () => ({ webauthnBundle: readBundledWebAuthn(), platformUrl: publicUrl }))
    return Layer.mergeAll(
      Layer.mergeAll(AccountService.layer, Approvals.layer).pipe(
        Layer.provide(Layer.mergeAll(options.emailSender, options.network ?? SimulatedNetwork.layer())),
        Layer.provideMerge(config)
      ),
      pages
    )
  }))

/**
 * What the platform needs to ask the account service for agent approvals: its client over HTTP at
 * the account service's address (another function of the stack, reached as any client would), and
 * the network (`options.network`: the same value the account service is built with). With a
 * signer (PLATFORM_SIGNING_KEY) its calls carry service assertions, else HTTP Basic.
 */
export const agentApprovalsOf = (
  options: AccountsOptions,
  publicUrl: string | undefined,
  client: PlatformClient,
  signer?: ServiceSigner | undefined
): Pick<PlatformOptions, "agentApprovals" | "network"> => {
  const accountsUrl = accountsUrlOf(options.accountsUrl, publicUrl)
  return {
    network: (options.network ?? SimulatedNetwork.layer()).pipe(Layer.orDie),
    ...(accountsUrl instanceof LambdaConfigError
      ? {}
      : {
        agentApprovals: ApprovalsHttpClient.layer({ accountsUrl, clientId: client.id, clientSecret: Redacted.value(client.secret), signer })
      })
  }
}
