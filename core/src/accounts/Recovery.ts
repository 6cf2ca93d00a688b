/**
 * Recovery when every passkey is lost (docs/accounts.md "Recovery"). The person asks with their
 * email; the mailed link works only after the delay (24 h by default), so someone who has only the
 * mailbox cannot take the account while its owner can still notice: signing in, or the cancel
 * button of a signed-in page, revokes it. Following the link (after the delay) registers a new
 * passkey; completing it ends every session of the person and every pending recovery link.
 *
 * The link is consumed when the ceremony begins, and a fresh link, usable at once until the
 * original's expiry, takes its place (BegunCeremony.link), so a failed ceremony can be retried
 * without waiting again; the finish consumes that fresh link, so a cancel up to the last moment
 * still stops it.
 */
import { Clock, Effect } from "effect"
import * as Time from "../kernel/Time.ts"
import { accountError } from "./AccountErrors.ts"
import { ACCOUNT_LIMITS, countHit } from "./AccountLimits.ts"
import type { FinishWithNameInput, PendingRecovery, RelyingParty, SessionCall } from "./AccountTypes.ts"
import { checkedEmail, passkeyName } from "./Ceremonies.ts"
import type { AccountDeps } from "./Deps.ts"
import { recoveryMail, send } from "./Mail.ts"
import { hashToken, type PasskeyRecord } from "./Records.ts"
import { signedIn } from "./Sessions.ts"
import { beginFlow, consumeFlow, newToken, registrationOptions, verifyRegistration } from "./WebAuthn.ts"

/** How long a recovery link stays usable once its delay has passed. */
export const RECOVERY_WINDOW_MS = 72 * 60 * 60_000
export const DEFAULT_RECOVERY_DELAY_MS = 24 * 60 * 60_000

const linkRefusal = (reason: "unknown" | "used" | "expired") =>
  reason === "unknown"
    ? accountError("token_unknown", "This recovery link is not known.")
    : reason === "used"
    ? accountError("token_used", "This recovery link was used, cancelled, or replaced.")
    : accountError("token_expired", "This recovery link expired; ask for a new one.")

export const makeRecovery = (deps: AccountDeps) => {
  const { email: mailer, people, rateLimits, sessions, settings } = deps

  const issueLink = Effect.fnUntraced(function*(personId: string, notBefore: number, expiresAt: string) {
    const token = yield* newToken
    yield* people.issueToken({
      token_hash: hashToken(token),
      purpose: "recover",
      subject: personId,
      data: "",
      created_at: yield* Time.now,
      not_before: Time.toTimestamp(notBefore),
      expires_at: expiresAt,
      used_at: null
    })
    return token
  })

  const requestRecovery = Effect.fn("AccountService.requestRecovery")(function*(input: {
    readonly email: string
    readonly clientAddress: string
  }) {
    const email = yield* checkedEmail(input.email)
    yield* countHit(rateLimits, ACCOUNT_LIMITS.recoveryPerAddress, input.clientAddress)
    yield* countHit(rateLimits, ACCOUNT_LIMITS.recoveryPerEmail, email)
    const person = yield* people.findPersonByEmail(email)
    if (person === undefined) return
    const now = yield* Clock.currentTimeMillis
    if ((yield* people.listTokens(person.id, "recover", Time.toTimestamp(now))).length > 0) return
    const usableFrom = now + settings.recoveryDelayMs
    const expiresAt = Time.toTimestamp(usableFrom + RECOVERY_WINDOW_MS)
    const token = yield* issueLink(person.id, usableFrom, expiresAt)
    const link = `${settings.accountsUrl}/recover?token=${token}`
    yield* send(mailer, recoveryMail(email, link, Time.toTimestamp(usableFrom), expiresAt)).pipe(
      // Unsent, the link must not block the next request.
      Effect.tapError(() => people.revokeTokens(person.id, "recover", Time.toTimestamp(now)))
    )
  })

  const beginRecovery = Effect.fn("AccountService.beginRecovery")(function*(
    input: RelyingParty & { readonly token: string }
  ) {
    if (input.token.length === 0 || input.token.length > 256) return yield* linkRefusal("unknown")
    const now = yield* Clock.currentTimeMillis
    const consumed = yield* people.consumeToken(hashToken(input.token), "recover", Time.toTimestamp(now))
    if (consumed._tag === "Refused") return yield* linkRefusal(consumed.reason)
    if (consumed._tag === "Early") {
      return yield* accountError("token_early", `This recovery link works from ${consumed.not_before} on.`, {
        not_before: consumed.not_before
      })
    }
    const personId = consumed.token.subject
    const person = yield* people.getPerson(personId)
    if (person === undefined) return yield* linkRefusal("unknown")
    const link = yield* issueLink(personId, now, consumed.token.expires_at)
    const exclude = yield* people.listPasskeys(personId)
    const options = yield* registrationOptions({ rpId: input.rpId, userId: personId, userName: person.email, exclude })
    const begun = yield* beginFlow(
      people,
      { kind: "recovery", challenge: options.challenge, subject: personId, extra: hashToken(link) },
      options
    )
    return { ...begun, link }
  })

  const finishRecovery = Effect.fn("AccountService.finishRecovery")(function*(input: FinishWithNameInput) {
    const flow = yield* consumeFlow(people, input.flow, "recovery")
    const credential = yield* verifyRegistration(input.response, flow.challenge, input)
    const now = yield* Time.now
    // The fresh link must still be there: a cancel since the begin stops the recovery.
    const link = yield* people.consumeToken(flow.extra, "recover", now)
    if (link._tag !== "Consumed") return yield* linkRefusal(link._tag === "Refused" ? link.reason : "unknown")
    const passkey: PasskeyRecord = {
      ...credential,
      person_id: flow.subject,
      name: passkeyName(input.name, "Recovered passkey"),
      created_at: now,
      last_used_at: null
    }
    const added = yield* people.addPasskey(passkey)
    if (added._tag !== "Added") return yield* accountError("passkey_taken", "This passkey is registered already.")
    yield* people.deletePersonSessions(flow.subject)
    yield* people.revokeTokens(flow.subject, "recover", now)
    const person = yield* people.getPerson(flow.subject)
    if (person === undefined) return yield* Effect.die(new Error("a recovering person is not found"))
    const session = yield* sessions.create(person.id)
    return { session, person: signedIn(person) }
  })

  const pendingRecovery = Effect.fn("AccountService.pendingRecovery")(function*(session: string) {
    const person = yield* sessions.read(session)
    const pending = yield* people.listTokens(person.id, "recover", yield* Time.now)
    const first = pending[0]
    return first === undefined
      ? undefined
      : ({ requested_at: first.created_at, usable_from: first.not_before, expires_at: first.expires_at } satisfies PendingRecovery)
  })

  const cancelRecovery = Effect.fn("AccountService.cancelRecovery")(function*(call: SessionCall) {
    const person = yield* sessions.change(call)
    yield* people.revokeTokens(person.id, "recover", yield* Time.now)
  })

  return { requestRecovery, beginRecovery, finishRecovery, pendingRecovery, cancelRecovery }
}
