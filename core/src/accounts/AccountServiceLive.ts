/** The account service made of its parts (AccountService.layer): ceremonies, passkeys, recovery, claims, identities. */
import { Effect } from "effect"
import { ApiKeys } from "../keys/ApiKeys.ts"
import { AccountStore } from "../keys/AccountStore.ts"
import { EmailSender } from "../kernel/EmailSender.ts"
import { Network } from "../agents/Network.ts"
import { PeopleStore } from "./PeopleStore.ts"
import { RateLimitStore } from "../kernel/RateLimitStore.ts"
import { AccountsConfig } from "./AccountsConfig.ts"
import type { AccountServiceShape, SessionCall } from "./AccountTypes.ts"
import { makeCeremonies } from "./Ceremonies.ts"
import { makeClaims } from "./Claims.ts"
import type { AccountDeps } from "./Deps.ts"
import { makeIdentities } from "./Identities.ts"
import { makePasskeys } from "./Passkeys.ts"
import { DEFAULT_RECOVERY_DELAY_MS, makeRecovery } from "./Recovery.ts"
import { hashToken } from "./Records.ts"
import { makeSessions } from "./Sessions.ts"

export const makeAccountService = Effect.gen(function*() {
  const config = yield* AccountsConfig
  const people = yield* PeopleStore
  const deps: AccountDeps = {
    people,
    accounts: yield* AccountStore,
    rateLimits: yield* RateLimitStore,
    email: yield* EmailSender,
    network: yield* Network,
    apiKeys: yield* ApiKeys,
    settings: {
      accountsUrl: config.accountsUrl.replace(/\/+$/, ""),
      recoveryDelayMs: config.recoveryDelayMs ?? DEFAULT_RECOVERY_DELAY_MS
    },
    sessions: makeSessions(people)
  }
  const identities = makeIdentities(deps)
  const sessions = deps.sessions
  const signOut = Effect.fn("AccountService.signOut")(function*(call: SessionCall) {
    yield* sessions.change(call)
    yield* people.deleteSession(hashToken(call.session))
  })
  return {
    ...makeCeremonies(deps, identities),
    ...makePasskeys(deps, identities),
    ...makeRecovery(deps),
    ...makeClaims(deps, identities),
    session: sessions.view,
    signOut,
    identityOf: identities.identityOf
  } satisfies AccountServiceShape
})
