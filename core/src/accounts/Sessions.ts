/**
 * Sessions of the account service (docs/accounts.md "Sessions"): a random token in an HttpOnly
 * cookie (the routes set it), kept as its SHA-256; a CSRF token derived from the session token
 * (SHA-256 of a domain-separated string), so a page can always render it without the store keeping
 * it, and an attacker without the cookie cannot compute it; the store keeps its hash to check
 * against. Sessions last SESSION_TTL_MS and do not slide.
 */
import { Clock, Effect } from "effect"
import type { PeopleStore } from "./PeopleStore.ts"
import { sha256Hex } from "../kernel/Sha256.ts"
import * as Time from "../kernel/Time.ts"
import { accountError } from "./AccountErrors.ts"
import type { LiveSession, NewSession, SessionCall, SignedInPerson } from "./AccountTypes.ts"
import { hashToken, type PersonRecord } from "./Records.ts"
import { newToken } from "./WebAuthn.ts"

/** A session lasts 7 days from sign-in, whatever is done with it. */
export const SESSION_TTL_MS = 7 * 24 * 60 * 60_000

/** The CSRF token of a session token: one-way, and never equal to the stored token hash. */
export const csrfOf = (sessionToken: string): string => sha256Hex(`model-platform csrf\n${sessionToken}`)

export const signedIn = (person: PersonRecord): SignedInPerson => ({
  person_id: person.id,
  email: person.email,
  account_id: person.account_id
})

export const makeSessions = (people: PeopleStore["Service"]) => {
  const create = Effect.fnUntraced(function*(personId: string) {
    const token = yield* newToken
    const csrf = csrfOf(token)
    const now = yield* Clock.currentTimeMillis
    const expires_at = Time.toTimestamp(now + SESSION_TTL_MS)
    yield* people.createSession({
      token_hash: hashToken(token),
      person_id: personId,
      csrf_hash: hashToken(csrf),
      created_at: Time.toTimestamp(now),
      expires_at
    })
    return { token, csrf, expires_at } satisfies NewSession
  })

  /** The live session and its person, or undefined. */
  const live = Effect.fnUntraced(function*(token: string) {
    if (token.length === 0 || token.length > 256) return undefined
    const session = yield* people.getSession(hashToken(token), yield* Time.now)
    if (session === undefined) return undefined
    const person = yield* people.getPerson(session.person_id)
    if (person === undefined) return undefined
    return { session, person }
  })

  const view = Effect.fn("AccountService.session")(function*(token: string) {
    const found = yield* live(token)
    if (found === undefined) return undefined
    return { person: signedIn(found.person), csrf: csrfOf(token), expires_at: found.session.expires_at } satisfies LiveSession
  })

  const required = accountError("session_required", "Sign in first.")

  /** The signed-in person of a read, or session_required. */
  const read = Effect.fnUntraced(function*(token: string) {
    const found = yield* live(token)
    if (found === undefined) return yield* required
    return found.person
  })

  /** The signed-in person of a change, after the CSRF check, or session_required / csrf_mismatch. */
  const change = Effect.fnUntraced(function*(call: SessionCall) {
    const found = yield* live(call.session)
    if (found === undefined) return yield* required
    if (hashToken(call.csrf) !== found.session.csrf_hash) {
      return yield* accountError("csrf_mismatch", "This form is stale or was not sent by our page; reload it and try again.")
    }
    return found.person
  })

  return { create, view, read, change }
}
export type Sessions = ReturnType<typeof makeSessions>
