/**
 * Port: where the account service keeps people (accounts for people, issue 15): the person, their
 * passkeys, their sessions, and the one-time tokens of the ceremonies (core/src/accounts/Records.ts
 * holds the records). The ceremonies (sign-up, confirmation, sign-in, passkey management,
 * recovery) are built on it; every rule that must hold under concurrency is kept here, in one
 * store step, so it holds across processes: an email and a credential id belong to one person, a
 * person's last passkey is never removed, a token is consumed once.
 *
 * Invariant: a person has at least one passkey from the moment they exist (insertPerson takes the
 * first one) until they are gone. Time is passed in (`at`), never read by a store, so tests move
 * it; an expired session or token is never returned, whether or not the store has deleted it yet.
 * Store failures are defects, as in every port; the expected refusals are results.
 */
import { Context, type Effect } from "effect"
import {
  type IdentityRecord,
  normaliseEmail,
  type OneTimeTokenRecord,
  type PasskeyRecord,
  type PersonRecord,
  type SessionRecord,
  type TokenPurpose
} from "./Records.ts"
import type { Timestamp } from "../kernel/Time.ts"
import type { AccountId } from "../kernel/Ids.ts"

export type InsertPersonResult =
  | { readonly _tag: "Inserted" }
  /** Another person has this (normalised) email. */
  | { readonly _tag: "EmailTaken" }
  /** The passkey's credential id is already registered (to anyone). */
  | { readonly _tag: "CredentialTaken" }

export type AddPasskeyResult =
  | { readonly _tag: "Added" }
  | { readonly _tag: "CredentialTaken" }
  | { readonly _tag: "UnknownPerson" }

export type RemovePasskeyResult =
  | { readonly _tag: "Removed" }
  /** No such passkey of this person (another person's passkey is not found either). */
  | { readonly _tag: "NotFound" }
  /** It is the person's only passkey: kept. */
  | { readonly _tag: "LastPasskey" }

export type ConsumeTokenResult =
  | { readonly _tag: "Consumed"; readonly token: OneTimeTokenRecord }
  /**
   * unknown: no such token for this purpose (a token of another purpose is unknown here);
   * used: consumed before; expired: at or after expires_at.
   */
  | { readonly _tag: "Refused"; readonly reason: "unknown" | "used" | "expired" }
  /** Before not_before (recovery's delay): nothing is consumed; usable from `not_before` on. */
  | { readonly _tag: "Early"; readonly not_before: Timestamp }

export class PeopleStore extends Context.Service<PeopleStore, {
  // people

  /**
   * Inserts a person with their first passkey (whose person_id is the person's), all or nothing.
   * The email must be normalised; the person id is new (a duplicate id is a defect).
   */
  readonly insertPerson: (person: PersonRecord, passkey: PasskeyRecord) => Effect.Effect<InsertPersonResult>
  readonly getPerson: (personId: string) => Effect.Effect<PersonRecord | undefined>
  /** By normalised email. */
  readonly findPersonByEmail: (email: string) => Effect.Effect<PersonRecord | undefined>
  /**
   * Sets email_confirmed_at once (a confirmed email keeps its first time). Returns the person as
   * it is afterwards, or undefined when unknown.
   */
  readonly confirmEmail: (personId: string, at: Timestamp) => Effect.Effect<PersonRecord | undefined>
  /**
   * Sets account_id once, only while it is null: a person owns one account. Returns the person as
   * it is afterwards (account_id is the first one linked: the caller compares), or undefined.
   */
  readonly linkAccount: (personId: string, accountId: AccountId) => Effect.Effect<PersonRecord | undefined>

  // passkeys

  /** Adds a passkey to an existing person (passkey.person_id). */
  readonly addPasskey: (passkey: PasskeyRecord) => Effect.Effect<AddPasskeyResult>
  /** The person's passkeys, oldest first (passkeys created in the same millisecond in any order). */
  readonly listPasskeys: (personId: string) => Effect.Effect<ReadonlyArray<PasskeyRecord>>
  /** By credential id (sign-in with a discoverable credential names only the credential). */
  readonly findPasskey: (credentialId: string) => Effect.Effect<PasskeyRecord | undefined>
  /**
   * Records a verified sign-in: counter and last_used_at each move forward only (the greater of
   * the stored and the given value is kept). Returns the passkey afterwards, or undefined.
   */
  readonly recordPasskeyUse: (
    credentialId: string,
    counter: number,
    at: Timestamp
  ) => Effect.Effect<PasskeyRecord | undefined>
  /**
   * Removes one of the person's passkeys, atomically refusing to remove their last one: however
   * many removals run at once, at least one passkey stays.
   */
  readonly removePasskey: (personId: string, credentialId: string) => Effect.Effect<RemovePasskeyResult>

  // sessions

  /** Creates a session; its token_hash is new (a duplicate is a defect). */
  readonly createSession: (session: SessionRecord) => Effect.Effect<void>
  /** The session, unless it is unknown or expired at `at` (expires_at <= at). */
  readonly getSession: (tokenHash: string, at: Timestamp) => Effect.Effect<SessionRecord | undefined>
  /** Sign-out; deleting an unknown session does nothing. */
  readonly deleteSession: (tokenHash: string) => Effect.Effect<void>
  /**
   * Deletes every session of the person (recovery, "sign out everywhere"): when it returns, no
   * session created before it was called is returned again. Answers how many were deleted.
   */
  readonly deletePersonSessions: (personId: string) => Effect.Effect<number>

  // one-time tokens

  /** Issues a token (used_at null); its token_hash is new (a duplicate is a defect). */
  readonly issueToken: (token: OneTimeTokenRecord) => Effect.Effect<void>
  /**
   * Consumes the token for `purpose` at `at`, atomically: it must be unused, at or after
   * not_before and before expires_at; then used_at becomes `at` and the token is answered. Of any
   * number of concurrent consumptions of one token, exactly one is Consumed.
   */
  readonly consumeToken: (tokenHash: string, purpose: TokenPurpose, at: Timestamp) => Effect.Effect<ConsumeTokenResult>
  /**
   * The tokens of `purpose` issued about `subject` that are still outstanding at `at` (unused, not
   * expired; possibly not usable yet), oldest first: a pending recovery the person may cancel. A
   * token with an empty subject is never listed.
   */
  readonly listTokens: (
    subject: string,
    purpose: TokenPurpose,
    at: Timestamp
  ) => Effect.Effect<ReadonlyArray<OneTimeTokenRecord>>
  /**
   * Revokes every outstanding token of `purpose` about `subject` (cancelling a recovery, or the
   * older links when a new one is sent): each gets used_at = `at`, so consuming it afterwards
   * answers `used`. Per token, a revocation and a consumption racing: exactly one takes it.
   * Answers how many were revoked. A token with an empty subject is never revoked this way.
   */
  readonly revokeTokens: (subject: string, purpose: TokenPurpose, at: Timestamp) => Effect.Effect<number>

  // identities

  /**
   * Keeps an account's identity as the network last answered (insert or replace, by account_id).
   * Written at confirmation and again only while it is provisioning, so the last write wins.
   */
  readonly saveIdentity: (identity: IdentityRecord) => Effect.Effect<void>
  /** The identity of a platform account, or undefined (none made yet). */
  readonly getIdentity: (accountId: AccountId) => Effect.Effect<IdentityRecord | undefined>
}>()("@model-platform/core/accounts/PeopleStore") {}

/** Whether a token is outstanding at `at`: unused and not expired (it may not be usable yet). */
export const isOutstanding = (token: OneTimeTokenRecord, at: Timestamp): boolean =>
  token.used_at === null && at < token.expires_at

/** Why a token cannot be consumed at `at`, or undefined when it can. Pure, shared by the stores. */
export const consumeRefusal = (
  token: OneTimeTokenRecord | undefined,
  purpose: TokenPurpose,
  at: Timestamp
): Exclude<ConsumeTokenResult, { readonly _tag: "Consumed" }> | undefined => {
  if (token === undefined || token.purpose !== purpose) return { _tag: "Refused", reason: "unknown" }
  if (token.used_at !== null) return { _tag: "Refused", reason: "used" }
  if (token.expires_at <= at) return { _tag: "Refused", reason: "expired" }
  if (at < token.not_before) return { _tag: "Early", not_before: token.not_before }
  return undefined
}

/**
 * Why a new person and their first passkey break the port's rules (a defect), or undefined. An
 * email that is not normalised is refused here, so a ceremony that forgot to normalise cannot
 * make two people of one address. Pure, shared by the stores.
 */
export const personProblem = (person: PersonRecord, passkey: PasskeyRecord): string | undefined => {
  if (person.email !== normaliseEmail(person.email) || person.email.length === 0) {
    return "the email must be non-empty and normalised (Records.normaliseEmail)"
  }
  if (passkey.person_id !== person.id) return "the passkey belongs to another person"
  return passkeyProblem(passkey)
}

/** Why a passkey breaks the port's rules (a defect), or undefined. Pure, shared by the stores. */
export const passkeyProblem = (passkey: PasskeyRecord): string | undefined =>
  passkey.credential_id.length === 0 ? "the credential id must be non-empty" : counterProblem(passkey.counter)

/** Why a signature counter is not one (a defect), or undefined: it is an unsigned 32-bit integer. */
export const counterProblem = (counter: number): string | undefined =>
  Number.isSafeInteger(counter) && counter >= 0 && counter <= 0xffff_ffff
    ? undefined
    : `the counter must be an unsigned 32-bit integer, got ${counter}`
