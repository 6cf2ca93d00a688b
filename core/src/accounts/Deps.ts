/** What every part of the account service works with, gathered once by its layer (AccountServiceLive.ts). */
import type { ApiKeys } from "../keys/ApiKeys.ts"
import type { AccountStore } from "../keys/AccountStore.ts"
import type { EmailSender } from "../kernel/EmailSender.ts"
import type { Network } from "../agents/Network.ts"
import type { PeopleStore } from "./PeopleStore.ts"
import type { RateLimitStore } from "../kernel/RateLimitStore.ts"
import type { Sessions } from "./Sessions.ts"

export interface AccountDeps {
  readonly people: PeopleStore["Service"]
  readonly accounts: AccountStore["Service"]
  readonly rateLimits: RateLimitStore["Service"]
  readonly email: EmailSender["Service"]
  readonly network: Network["Service"]
  readonly apiKeys: ApiKeys["Service"]
  /** AccountsConfig with its defaults: accountsUrl without a trailing slash. */
  readonly settings: { readonly accountsUrl: string; readonly recoveryDelayMs: number }
  readonly sessions: Sessions
}
