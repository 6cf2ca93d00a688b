/**
 * A person's platform account and their identity on the network (docs/accounts.md "Identity").
 *
 * - The account is made when the email is confirmed: a new AccountStore account with the person's
 *   email (the first-start owner's address is refused at sign-up, Ceremonies.ts). A person
 *   found without one (a process died between the steps) gets it at the next sign-in.
 * - The identity `did:svc:human:<account id>` is asked of the network then, and kept: ready, failed
 *   with the network's reason, or provisioning when the network gave no answer (asked again at
 *   every identityOf until it answers; the network is idempotent per id).
 * - The first-start owner's identity is asked at every start until it exists (Owner.ts), for a
 *   person who joins the account when the owner claims it with a passkey.
 */
import { Effect } from "effect"
import type { Identity } from "./Identity.ts"
import { type AccountId, generateId } from "../kernel/Ids.ts"
import * as Time from "../kernel/Time.ts"
import type { Network } from "../agents/Network.ts"
import type { PeopleStore } from "./PeopleStore.ts"
import type { AccountDeps } from "./Deps.ts"
import type { IdentityRecord, PersonRecord } from "./Records.ts"

/**
 * GET /identity's answer for an account from its stored identity. No identity (an account no
 * sign-up made, whose identity no start asked for: not the owner's since Owner.ts): provisioning,
 * no DID, 0 passkeys, and manage_url the account service's sign-up page.
 */
const identityView = Effect.fnUntraced(function*(
  people: PeopleStore["Service"],
  accountsUrl: string,
  accountId: AccountId,
  identity: IdentityRecord | undefined
) {
  if (identity === undefined) {
    return {
      state: "provisioning",
      did: null,
      wallet_address: null,
      error: null,
      passkeys: 0,
      can_send: false,
      manage_url: `${accountsUrl}/sign-up`
    } satisfies Identity
  }
  const passkeys = (yield* people.listPasskeys(identity.person_id)).length
  return {
    state: identity.state,
    did: identity.did,
    wallet_address: identity.wallet_address,
    error: identity.error,
    passkeys,
    can_send: identity.state === "ready" && passkeys > 0,
    manage_url: `${accountsUrl}/manage`
  } satisfies Identity
})

/** GET /identity from the store alone, without asking the network (a shell without AccountService). */
export const storedIdentity = (people: PeopleStore["Service"], accountId: AccountId, accountsUrl: string) =>
  Effect.flatMap(people.getIdentity(accountId), (identity) => identityView(people, accountsUrl, accountId, identity))

/**
 * The account's identity, asking the network when none is known or it is still provisioning; a
 * refusal is kept as failed, no answer as provisioning (asked again at the next call). Used by the
 * account service and by the first start for the owner (Owner.ts).
 */
export const askIdentity = (people: PeopleStore["Service"], network: Network["Service"]) =>
  Effect.fnUntraced(function*(accountId: AccountId, personId: string) {
    const known = yield* people.getIdentity(accountId)
    if (known !== undefined && known.state !== "provisioning") return known
    const answer = yield* network.createHumanIdentity(accountId).pipe(
      Effect.map((registration) => ({ _tag: "answered" as const, registration })),
      Effect.catchTag("NetworkUnavailable", (e) =>
        Effect.as(Effect.logWarning("network unavailable for an identity", { reason: e.reason }), {
          _tag: "unanswered" as const
        }))
    )
    if (answer._tag === "unanswered" && known !== undefined) return known
    const base = { account_id: accountId, person_id: personId, updated_at: yield* Time.now }
    const record: IdentityRecord = answer._tag === "unanswered"
      ? { ...base, state: "provisioning", did: null, wallet_address: null, error: null }
      : answer.registration.state === "ready"
      ? { ...base, state: "ready", did: answer.registration.did, wallet_address: answer.registration.wallet_address, error: null }
      : { ...base, state: "failed", did: null, wallet_address: null, error: answer.registration.error }
    yield* people.saveIdentity(record)
    return record
  })

export const makeIdentities = (deps: AccountDeps) => {
  const { accounts, network, people, settings } = deps

  /** The person with their account, made now when they have none. */
  const ensureAccount = Effect.fnUntraced(function*(person: PersonRecord) {
    if (person.account_id !== null) return { person, account: "existing" as const }
    const account = { id: yield* generateId("acct"), email: person.email, created_at: yield* Time.now }
    yield* accounts.insert(account)
    const linked = yield* people.linkAccount(person.id, account.id)
    return { person: linked ?? person, account: "created" as const }
  })

  const ensureIdentity = askIdentity(people, network)

  const identityOf = Effect.fn("AccountService.identityOf")(function*(accountId: AccountId) {
    const known = yield* people.getIdentity(accountId)
    const identity = known === undefined ? undefined : yield* ensureIdentity(accountId, known.person_id)
    return yield* identityView(people, settings.accountsUrl, accountId, identity)
  })

  return { ensureAccount, ensureIdentity, identityOf }
}
export type Identities = ReturnType<typeof makeIdentities>
