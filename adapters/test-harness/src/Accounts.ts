/**
 * Another account beside the owner, for tests that need two (a gift ticket redeemed by someone
 * else). The platform has no sign-up endpoint yet, so a shell's test support makes one directly
 * with its stores, as a sign-up would: an account and a key holding every permission.
 */
import { normaliseEmail, PeopleStore } from "@model-platform/core/accounts"
import { AccountStore, ApiKeys, PermissionValues } from "@model-platform/core/keys"
import { generateId, Time } from "@model-platform/core/kernel"
import { Effect } from "effect"

/** Creates an account and returns the secret of its key (every permission). */
export const createAccount = Effect.fn("test.createAccount")(function*(email: string) {
  const accounts = yield* AccountStore
  const account = { id: yield* generateId("acct"), email, created_at: yield* Time.now }
  yield* accounts.insert(account)
  const key = yield* (yield* ApiKeys).issue(account.id, { name: "test", permissions: PermissionValues })
  return key.secret
})

/**
 * The person behind an account, as a sign-up leaves them: `per_<account id>`, the account's email,
 * and one stand-in passkey (no key pair: nothing signs in with it), so the account can propose
 * agents (a proposal needs a passkey to approve it, docs/agents.md).
 */
export const standInPerson = Effect.fn("test.standInPerson")(function*(accountId: string, email: string) {
  const now = yield* Time.now
  const personId = `per_${accountId}`
  const inserted = yield* (yield* PeopleStore).insertPerson(
    { id: personId, email: normaliseEmail(email), email_confirmed_at: now, account_id: accountId, created_at: now },
    { credential_id: `cred_${accountId}`, person_id: personId, public_key: "", counter: 0, transports: [], name: "stand-in", created_at: now, last_used_at: null }
  )
  if (inserted._tag !== "Inserted") return yield* Effect.die(new Error(`the stand-in person of ${accountId}: ${inserted._tag}`))
  return personId
})

/**
 * As createAccount, and the account has a ready identity (`did:svc:human:<account id>`, a person
 * `per_<account id>` with a passkey behind it), as after a sign-up: the account can propose agents.
 */
export const createAccountWithIdentity = Effect.fn("test.createAccountWithIdentity")(function*(email: string) {
  const secret = yield* createAccount(email)
  const caller = yield* (yield* ApiKeys).authenticate(secret)
  const accountId = caller.account.id
  yield* (yield* PeopleStore).saveIdentity({
    account_id: accountId,
    person_id: yield* standInPerson(accountId, email),
    state: "ready",
    did: `did:svc:human:${accountId}`,
    wallet_address: `0x${"0".repeat(40)}`,
    error: null,
    updated_at: yield* Time.now
  })
  return secret
})
