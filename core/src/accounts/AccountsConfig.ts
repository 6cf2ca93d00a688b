/** What the account service needs from its shell (AccountService.ts). */
import { Context } from "effect"

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
}

export class AccountsConfig extends Context.Service<AccountsConfig, AccountsSettings>()(
  "@model-platform/core/accounts/AccountsConfig"
) {}
