/**
 * Claiming the owner account with a passkey (docs/accounts.md "The owner"): the claim link
 * (Owner.ts issueClaimLink, made with the owner's key) opens a page where the owner's browser
 * registers a passkey. The link is checked when the ceremony begins and consumed only once the
 * passkey verified, so a cancelled prompt can be retried with the same link, and of two browsers
 * finishing with one link exactly one claims.
 *
 * The first claim stores the owner's person (the id the owner's identity names, the owner's email,
 * the owner account) with that passkey, all at once; a later claim adds a passkey to that person
 * and, as a recovery does, ends the person's other sessions (a claim is also how an owner who lost
 * every passkey gets back in: the key is the proof, not the mailbox).
 */
import { Effect } from "effect"
import * as Time from "../kernel/Time.ts"
import { accountError } from "./AccountErrors.ts"
import type { FinishWithNameInput, RelyingParty } from "./AccountTypes.ts"
import { passkeyName } from "./Ceremonies.ts"
import type { AccountDeps } from "./Deps.ts"
import type { Identities } from "./Identities.ts"
import { ownerPersonId } from "./Owner.ts"
import { hashToken, normaliseEmail, type PasskeyRecord } from "./Records.ts"
import { signedIn } from "./Sessions.ts"
import { beginFlow, consumeFlow, registrationOptions, verifyRegistration } from "./WebAuthn.ts"

const MAKE_ANOTHER = "Make a new one with POST /identity/claim-link and a manage key of the owner account."

const claimRefusal = (reason: "unknown" | "used" | "expired") =>
  reason === "unknown"
    ? accountError("token_unknown", `This claim link cannot be used: it was used already, replaced by a newer one, or expired. ${MAKE_ANOTHER}`)
    : reason === "used"
    ? accountError("token_used", `This claim link was used already (or replaced by a newer one). ${MAKE_ANOTHER}`)
    : accountError("token_expired", `This claim link expired (a link works 24 hours). ${MAKE_ANOTHER}`)

export const makeClaims = (deps: AccountDeps, identities: Identities) => {
  const { accounts, people, sessions } = deps

  /** The owner and the outstanding claim token `token` is, or token_unknown (used, replaced, expired, never made). */
  const outstanding = Effect.fnUntraced(function*(token: string) {
    if (token.length === 0 || token.length > 256) return yield* claimRefusal("unknown")
    const owner = yield* accounts.first
    if (owner === undefined) return yield* claimRefusal("unknown")
    const personId = ownerPersonId(owner.id)
    const hash = hashToken(token)
    const found = (yield* people.listTokens(personId, "claim_owner", yield* Time.now)).find((t) => t.token_hash === hash)
    if (found === undefined) return yield* claimRefusal("unknown")
    return { owner, personId, hash, expires_at: found.expires_at }
  })

  const claimView = Effect.fn("AccountService.claimView")(function*(token: string) {
    const { expires_at, owner } = yield* outstanding(token)
    return { email: normaliseEmail(owner.email), expires_at }
  })

  const beginClaim = Effect.fn("AccountService.beginClaim")(function*(input: RelyingParty & { readonly token: string }) {
    const { hash, owner, personId } = yield* outstanding(input.token)
    const exclude = yield* people.listPasskeys(personId)
    const options = yield* registrationOptions({ rpId: input.rpId, userId: personId, userName: normaliseEmail(owner.email), exclude })
    return yield* beginFlow(people, { kind: "claim", challenge: options.challenge, subject: hash, extra: personId }, options)
  })

  /** Stores the owner's person with `passkey`, or adds it to the person a claim stored before. */
  const attach = Effect.fnUntraced(function*(owner: { readonly id: string; readonly email: string }, passkey: PasskeyRecord) {
    const taken = accountError("passkey_taken", "This passkey is registered already.")
    if ((yield* people.getPerson(passkey.person_id)) === undefined) {
      const inserted = yield* people.insertPerson(
        { id: passkey.person_id, email: normaliseEmail(owner.email), email_confirmed_at: null, account_id: owner.id, created_at: passkey.created_at },
        passkey
      )
      if (inserted._tag === "Inserted") return
      if (inserted._tag === "CredentialTaken") return yield* taken
      // Another claim stored the person meanwhile; else a person holds the owner's address.
      if ((yield* people.getPerson(passkey.person_id)) === undefined) {
        return yield* accountError(
          "email_taken",
          "Someone signed up with the owner's address before it was the owner's: change OWNER_EMAIL, or sign in as that person."
        )
      }
    }
    // The owner had a passkey: this claim may be a recovery, so the other browsers are signed out.
    yield* people.deletePersonSessions(passkey.person_id)
    const added = yield* people.addPasskey(passkey)
    if (added._tag === "CredentialTaken") return yield* taken
    if (added._tag === "UnknownPerson") return yield* Effect.die(new Error("the owner's person vanished during a claim"))
  })

  const finishClaim = Effect.fn("AccountService.finishClaim")(function*(input: FinishWithNameInput) {
    const flow = yield* consumeFlow(people, input.flow, "claim")
    const credential = yield* verifyRegistration(input.response, flow.challenge, input)
    const owner = yield* accounts.first
    if (owner === undefined || ownerPersonId(owner.id) !== flow.extra) {
      return yield* accountError("invalid_flow", "This claim was begun for another owner; open the claim link again.")
    }
    const now = yield* Time.now
    // Consumed after the passkey verified: a failed ceremony leaves the link usable.
    const consumed = yield* people.consumeToken(flow.subject, "claim_owner", now)
    if (consumed._tag === "Refused") return yield* claimRefusal(consumed.reason)
    if (consumed._tag === "Early") return yield* claimRefusal("unknown") // claim links have no delay
    yield* attach(owner, {
      ...credential,
      person_id: flow.extra,
      name: passkeyName(input.name, "Passkey"),
      created_at: now,
      last_used_at: null
    })
    yield* identities.ensureIdentity(owner.id, flow.extra)
    const person = yield* people.getPerson(flow.extra)
    if (person === undefined) return yield* Effect.die(new Error("the owner's person is not found after a claim"))
    return { session: yield* sessions.create(person.id), person: signedIn(person) }
  })

  return { claimView, beginClaim, finishClaim }
}
