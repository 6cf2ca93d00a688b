/**
 * The records of the account service (accounts for people, issue 15): a person, their passkeys,
 * their sessions, and the one-time tokens of the ceremonies (email confirmation, recovery,
 * WebAuthn challenges). Each record is a Schema written once here; the stores derive from it
 * their row and item decoders (PgPeopleStore, DynamoPeopleStore) and the types they speak.
 *
 * Secrets never appear: a session token, its CSRF token and a one-time token are kept as their
 * SHA-256 hex (`hashToken`), and looked up by it. Timestamps are core's ISO strings with
 * milliseconds, compared as strings (their fixed width makes that the order of time).
 */
import { Schema } from "effect"
import { sha256Hex } from "../kernel/Sha256.ts"
import { Timestamp } from "../kernel/Time.ts"

/** A person's id, their `sub` at the account service: `per_` and 128 random bits (kernel/Ids.ts generateId). */
export const PERSON_ID_KIND = "per"

/** An email as stored and looked up: trimmed, lower-case (the whole address, local part included). */
export const normaliseEmail = (email: string): string => email.trim().toLowerCase()

/** The stored form of a session token, CSRF token or one-time token: hex SHA-256 of its UTF-8. */
export const hashToken = (token: string): string => sha256Hex(token)

export const PersonRecord = Schema.Struct({
  /** `per_...`, the `sub`. */
  id: Schema.String,
  /** Normalised (normaliseEmail); unique among people. */
  email: Schema.String,
  /** Set once, when the confirmation link is followed. */
  email_confirmed_at: Schema.NullOr(Timestamp),
  /** The platform account this person owns; null until it is made. Set once. */
  account_id: Schema.NullOr(Schema.String),
  created_at: Timestamp
})
export type PersonRecord = typeof PersonRecord.Type

/** A WebAuthn signature counter: an unsigned 32-bit integer (0 when the authenticator keeps none). */
export const SignCount = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 0xffff_ffff }))

/**
 * A passkey: what @simplewebauthn's `registrationInfo.credential` holds ({id, publicKey, counter},
 * the key as base64url) plus its transports, the name the person gave it, and its use.
 */
export const PasskeyRecord = Schema.Struct({
  /** base64url credential id; unique across people (it is how sign-in finds the person). */
  credential_id: Schema.String,
  person_id: Schema.String,
  /** base64url COSE public key. */
  public_key: Schema.String,
  counter: SignCount,
  /** AuthenticatorTransportFuture values ("internal", "hybrid", "usb"...), as the browser reported them. */
  transports: Schema.Array(Schema.String),
  name: Schema.String,
  created_at: Timestamp,
  /** Never moves backwards. */
  last_used_at: Schema.NullOr(Timestamp)
})
export type PasskeyRecord = typeof PasskeyRecord.Type

export const SessionRecord = Schema.Struct({
  /** hashToken of the cookie's value; unique. */
  token_hash: Schema.String,
  person_id: Schema.String,
  /** hashToken of the session's CSRF token (forms send it, the store keeps only its hash). */
  csrf_hash: Schema.String,
  created_at: Timestamp,
  /** The session is gone from this instant on (the stores never return it again). */
  expires_at: Timestamp
})
export type SessionRecord = typeof SessionRecord.Type

/** What a one-time token is for; a token is only ever consumed for its own purpose. */
export const TokenPurposeValues = ["confirm_email", "recover", "webauthn_challenge", "claim_owner"] as const
export const TokenPurpose = Schema.Literals(TokenPurposeValues)
export type TokenPurpose = typeof TokenPurpose.Type

export const OneTimeTokenRecord = Schema.Struct({
  /** hashToken of the token sent (in a link, a cookie); unique. */
  token_hash: Schema.String,
  purpose: TokenPurpose,
  /**
   * Whom it is about: a person id (for claim_owner, the owner's person id, Owner.ts, before that
   * person exists), or an email (sign-up before the person exists); may be empty.
   */
  subject: Schema.String,
  /** What the ceremony needs back (a WebAuthn challenge); "" when nothing. */
  data: Schema.String,
  created_at: Timestamp,
  /** Not usable before this instant (recovery's delay); created_at when usable at once. */
  not_before: Timestamp,
  /** Not usable from this instant on. */
  expires_at: Timestamp,
  /** Set when consumed; a token is consumed once. */
  used_at: Schema.NullOr(Timestamp)
})
export type OneTimeTokenRecord = typeof OneTimeTokenRecord.Type

/** The state of a person's identity on the network (Identity.ts: GET /identity). */
export const IdentityRecordState = Schema.Literals(["provisioning", "ready", "failed"])

/**
 * A platform account's human identity on the network, as the network last answered: kept so
 * GET /identity answers from the store (a refusal included), and found by the account's id.
 */
export const IdentityRecord = Schema.Struct({
  /** The platform account (the DID's id); unique. */
  account_id: Schema.String,
  person_id: Schema.String,
  state: IdentityRecordState,
  /** Set when ready. */
  did: Schema.NullOr(Schema.String),
  wallet_address: Schema.NullOr(Schema.String),
  /** The network's reason when failed. */
  error: Schema.NullOr(Schema.String),
  updated_at: Timestamp
})
export type IdentityRecord = typeof IdentityRecord.Type
