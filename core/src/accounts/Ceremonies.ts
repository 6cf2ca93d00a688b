/**
 * Sign-up, confirmation and sign-in (docs/accounts.md "Ceremonies").
 *
 * Sign-up stores nothing about the person until the address is confirmed: the verified passkey
 * travels, with the email, in the confirmation link's token (kept hashed, its data holding the
 * public key, which is no secret). Following the link inserts the person and the passkey at once,
 * so an unconfirmed sign-up never holds an email, and of two pending sign-ups of one address the
 * first confirmed wins. Sign-in is discoverable: the browser names the credential, the store finds
 * the person by it.
 */
import { Clock, Effect, Schema } from "effect"
import { addressProblem } from "../kernel/EmailSender.ts"
import { generateId } from "../kernel/Ids.ts"
import * as Time from "../kernel/Time.ts"
import { type AccountError, accountError } from "./AccountErrors.ts"
import { ACCOUNT_LIMITS, countHit } from "./AccountLimits.ts"
import type { FinishInput, FinishWithNameInput, RelyingParty, SignUpInput } from "./AccountTypes.ts"
import type { AccountDeps } from "./Deps.ts"
import type { Identities } from "./Identities.ts"
import { confirmationMail, send } from "./Mail.ts"
import { hashToken, normaliseEmail, PERSON_ID_KIND, type PasskeyRecord } from "./Records.ts"
import { signedIn } from "./Sessions.ts"
import {
  assertionCredentialId,
  authenticationOptions,
  beginFlow,
  consumeFlow,
  newToken,
  registrationOptions,
  verifyAuthentication,
  verifyRegistration
} from "./WebAuthn.ts"

/** How long a confirmation link works. */
export const CONFIRM_TTL_MS = 24 * 60 * 60_000

/** What a confirmation link carries: the sign-up waiting for it. */
const PendingSignUp = Schema.Struct({
  person_id: Schema.String,
  email: Schema.String,
  credential_id: Schema.String,
  public_key: Schema.String,
  counter: Schema.Number,
  transports: Schema.Array(Schema.String),
  name: Schema.String
})
type PendingSignUp = typeof PendingSignUp.Type
const PendingJson = Schema.fromJsonString(PendingSignUp)

/** A passkey's name as given: control characters dropped, trimmed, at most 64 characters. */
export const passkeyName = (name: string | undefined, fallback: string): string => {
  const cleaned = (name ?? "").replace(/[\u0000-\u001f\u007f]/g, "").trim().slice(0, 64)
  return cleaned.length === 0 ? fallback : cleaned
}

/** The normalised email, or invalid_email. */
export const checkedEmail = (raw: string): Effect.Effect<string, AccountError> => {
  const email = normaliseEmail(raw)
  const problem = addressProblem(email)
  return problem === undefined ? Effect.succeed(email) : accountError("invalid_email", `This is not an email address: ${problem}.`)
}

const tokenRefusal = (reason: "unknown" | "used" | "expired") =>
  reason === "unknown"
    ? accountError("token_unknown", "This link is not known; use the newest link we sent.")
    : reason === "used"
    ? accountError("token_used", "This link was used already (or replaced by a newer one).")
    : accountError("token_expired", "This link expired; ask for a new one.")

export const makeCeremonies = (deps: AccountDeps, identities: Identities) => {
  const { email: mailer, people, rateLimits, sessions, settings } = deps

  /**
   * The first-start owner's address cannot be signed up with (docs/accounts.md "Ceremonies"): a
   * sign-up proves only that its confirmation link was followed, and a stranger's sign-up whose
   * link the owner followed would put the stranger's passkey on the owner's account and credits.
   */
  const refuseOwnerEmail = Effect.fnUntraced(function*(email: string) {
    const owner = yield* deps.accounts.first
    if (owner !== undefined && normaliseEmail(owner.email) === email) {
      return yield* accountError(
        "email_taken",
        "This address is the platform owner's, made at first start and used with its API key: sign up with another address."
      )
    }
  })

  const beginSignUp = Effect.fn("AccountService.beginSignUp")(function*(input: SignUpInput) {
    const email = yield* checkedEmail(input.email)
    yield* countHit(rateLimits, ACCOUNT_LIMITS.signUpPerAddress, input.clientAddress)
    if ((yield* people.findPersonByEmail(email)) !== undefined) {
      return yield* accountError("email_taken", "An account with this email exists: sign in instead.")
    }
    yield* refuseOwnerEmail(email)
    const personId = yield* generateId(PERSON_ID_KIND)
    const options = yield* registrationOptions({ rpId: input.rpId, userId: personId, userName: email, exclude: [] })
    return yield* beginFlow(people, { kind: "sign_up", challenge: options.challenge, subject: email, extra: personId }, options)
  })

  /** Issues a confirmation link for a pending sign-up and mails it. */
  const mailConfirmation = Effect.fnUntraced(function*(pending: PendingSignUp) {
    yield* countHit(rateLimits, ACCOUNT_LIMITS.confirmationPerEmail, pending.email)
    const token = yield* newToken
    const now = yield* Clock.currentTimeMillis
    const expires_at = Time.toTimestamp(now + CONFIRM_TTL_MS)
    yield* people.issueToken({
      token_hash: hashToken(token),
      purpose: "confirm_email",
      subject: pending.email,
      data: Schema.encodeSync(PendingJson)(pending),
      created_at: Time.toTimestamp(now),
      not_before: Time.toTimestamp(now),
      expires_at,
      used_at: null
    })
    const link = `${settings.accountsUrl}/confirm?token=${token}`
    yield* send(mailer, confirmationMail(pending.email, link, expires_at)).pipe(
      // A link nobody received must not stay usable.
      Effect.tapError(() => people.consumeToken(hashToken(token), "confirm_email", Time.toTimestamp(now)))
    )
  })

  const finishSignUp = Effect.fn("AccountService.finishSignUp")(function*(input: FinishWithNameInput) {
    const flow = yield* consumeFlow(people, input.flow, "sign_up")
    const credential = yield* verifyRegistration(input.response, flow.challenge, input)
    if ((yield* people.findPersonByEmail(flow.subject)) !== undefined) {
      return yield* accountError("email_taken", "An account with this email exists: sign in instead.")
    }
    if ((yield* people.findPasskey(credential.credential_id)) !== undefined) {
      return yield* accountError("passkey_taken", "This passkey is registered already.")
    }
    const pending: PendingSignUp = {
      person_id: flow.extra,
      email: flow.subject,
      ...credential,
      name: passkeyName(input.name, "Passkey")
    }
    yield* mailConfirmation(pending)
    return { person_id: pending.person_id, email: pending.email }
  })

  const resendConfirmation = Effect.fn("AccountService.resendConfirmation")(function*(input: {
    readonly email: string
    readonly clientAddress: string
  }) {
    const email = normaliseEmail(input.email)
    yield* countHit(rateLimits, ACCOUNT_LIMITS.signUpPerAddress, input.clientAddress)
    const now = yield* Time.now
    const outstanding = yield* people.listTokens(email, "confirm_email", now)
    const newest = outstanding[outstanding.length - 1]
    if (newest === undefined || (yield* people.findPersonByEmail(email)) !== undefined) return
    const pending = yield* Schema.decodeUnknownEffect(PendingJson)(newest.data).pipe(Effect.orDie)
    yield* people.revokeTokens(email, "confirm_email", now)
    yield* mailConfirmation(pending)
  })

  const confirmEmail = Effect.fn("AccountService.confirmEmail")(function*(input: { readonly token: string }) {
    if (input.token.length === 0 || input.token.length > 256) return yield* tokenRefusal("unknown")
    const now = yield* Time.now
    const consumed = yield* people.consumeToken(hashToken(input.token), "confirm_email", now)
    if (consumed._tag === "Refused") return yield* tokenRefusal(consumed.reason)
    if (consumed._tag === "Early") return yield* tokenRefusal("unknown") // confirmation links have no delay
    const pending = yield* Schema.decodeUnknownEffect(PendingJson)(consumed.token.data).pipe(Effect.orDie)
    yield* refuseOwnerEmail(pending.email)
    const passkey: PasskeyRecord = {
      credential_id: pending.credential_id,
      person_id: pending.person_id,
      public_key: pending.public_key,
      counter: pending.counter,
      transports: pending.transports,
      name: pending.name,
      created_at: now,
      last_used_at: null
    }
    const inserted = yield* people.insertPerson(
      { id: pending.person_id, email: pending.email, email_confirmed_at: now, account_id: null, created_at: now },
      passkey
    )
    if (inserted._tag === "EmailTaken") {
      return yield* accountError("email_taken", "Another sign-up of this address was confirmed first: sign in with its passkey.")
    }
    if (inserted._tag === "CredentialTaken") {
      return yield* accountError("passkey_taken", "This passkey is registered already.")
    }
    const person = yield* people.getPerson(pending.person_id)
    if (person === undefined) return yield* Effect.die(new Error("a person just inserted is not found"))
    const made = yield* identities.ensureAccount(person)
    yield* identities.ensureIdentity(made.person.account_id!, made.person.id)
    const session = yield* sessions.create(person.id)
    return {
      session,
      person: signedIn(made.person)
    }
  })

  const beginSignIn = Effect.fn("AccountService.beginSignIn")(function*(
    input: RelyingParty & { readonly clientAddress: string }
  ) {
    yield* countHit(rateLimits, ACCOUNT_LIMITS.signInPerAddress, input.clientAddress)
    const options = yield* authenticationOptions(input.rpId)
    return yield* beginFlow(people, { kind: "sign_in", challenge: options.challenge, subject: "", extra: "" }, options)
  })

  const finishSignIn = Effect.fn("AccountService.finishSignIn")(function*(input: FinishInput) {
    const flow = yield* consumeFlow(people, input.flow, "sign_in")
    const credentialId = yield* assertionCredentialId(input.response)
    const passkey = yield* people.findPasskey(credentialId)
    if (passkey === undefined) {
      return yield* accountError(
        "unknown_passkey",
        "This passkey is not registered here. If you just signed up, follow the link in the confirmation mail first."
      )
    }
    const owner = yield* people.getPerson(passkey.person_id)
    if (owner === undefined) return yield* Effect.die(new Error("a passkey's person is not found"))
    // Counted before the signature is checked: failed attempts are the ones to slow down.
    yield* countHit(rateLimits, ACCOUNT_LIMITS.signInPerEmail, owner.email)
    const counter = yield* verifyAuthentication(input.response, flow.challenge, input, passkey)
    const now = yield* Time.now
    yield* people.recordPasskeyUse(passkey.credential_id, counter, now)
    const made = yield* identities.ensureAccount(owner)
    // Whoever can sign in has not lost their passkeys: a pending recovery is someone else's.
    yield* people.revokeTokens(owner.id, "recover", now)
    const session = yield* sessions.create(owner.id)
    return { session, person: signedIn(made.person) }
  })

  return { beginSignUp, finishSignUp, resendConfirmation, confirmEmail, beginSignIn, finishSignIn }
}
