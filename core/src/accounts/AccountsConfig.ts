/** What the account service needs from its shell (AccountService.ts). */
import { Config, Context, Effect, Layer, Option, Schema } from "effect"
import type { AgentApprovals } from "../agents/AgentApprovals.ts"
import { ApprovalsHttpClient, type ApprovalsHttpSettings } from "../agents/ApprovalsHttpClient.ts"
import type { TrustedService } from "../agents/ServiceAssertions.ts"

/**
 * What the account service needs from its shell. Its layer (AccountService.layer) needs this, PeopleStore, AccountStore, RateLimitStore, EmailSender, Network and ApiKeys.
 */
export interface AccountsSettings {
  /**
   * The account service's public base address (ACCOUNTS_URL), without a trailing slash: mailed
   * links are `<accountsUrl>/confirm?token=…` and `<accountsUrl>/recover?token=…`, and
   * GET /identity's manage_url is `<accountsUrl>/manage` (`<accountsUrl>/sign-up` for an account
   * no person owns).
   */
  readonly accountsUrl: string
  /** How long a recovery link waits before it works. Default 24 h. */
  readonly recoveryDelayMs?: number | undefined
  /**
   * The platform's client of the agent approvals API (docs/agents.md "Approvals"): its id and the
   * SHA-256 (hex) of its secret, which the platform sends with HTTP Basic. Unset: the API refuses
   * every call (401).
   */
  readonly platformClient?: { readonly id: string; readonly secretSha256: string } | undefined
  /**
   * The services whose service assertions (Bearer JWTs, docs/agents.md "Service assertions") the
   * agent approvals API accepts beside Basic: each issuer's name and JWKS. Unset or empty: none.
   */
  readonly trustedServices?: ReadonlyArray<TrustedService> | undefined
}

export class AccountsConfig extends Context.Service<AccountsConfig, AccountsSettings>()(
  "@model-platform/core/accounts/AccountsConfig"
) {
  /**
   * The platform's client of the agent approvals API at this account service's own address
   * (agents/ApprovalsHttpClient.ts): for a shell that serves both.
   */
  static readonly approvalsClient = (
    settings: Omit<ApprovalsHttpSettings, "accountsUrl">
  ): Layer.Layer<AgentApprovals, never, AccountsConfig> =>
    Layer.unwrap(Effect.map(AccountsConfig, (config: AccountsSettings) => ApprovalsHttpClient.layer({ ...settings, accountsUrl: config.accountsUrl })))
}

/**
 * ACCOUNTS_RECOVERY_DELAY_HOURS (docs/configuration.md), read by both shells: how long a recovery
 * link waits before it works, in hours (fractions allowed, 0 for none). Unset: the default (24 h).
 * The wait is what gives a person whose mailbox was taken the time to cancel from a signed-in page.
 */
export const RecoveryDelayConfig: Config.Config<number | undefined> = Config.schema(
  Schema.Finite.check(Schema.isBetween({ minimum: 0, maximum: 24 * 365 })),
  "ACCOUNTS_RECOVERY_DELAY_HOURS"
).pipe(
  Config.option,
  Config.map(Option.match({ onNone: () => undefined, onSome: (hours) => Math.round(hours * 60 * 60_000) }))
)
