/** The inputs and outputs of the account service (AccountService.ts), and the shape of the service. */
import type { Effect } from "effect"
import type { AccountError } from "./AccountErrors.ts"
import type { Identity } from "./Identity.ts"
import type { CreatedKey } from "../keys/Keys.ts"
import type { Timestamp } from "../kernel/Time.ts"
import type { AccountId } from "../kernel/Ids.ts"

// ---- inputs and outputs ---------------------------------------------------------------------

/** Where a WebAuthn ceremony runs: the account service's origin and RP ID, as the route sees them. */
export interface RelyingParty {
  /** e.g. "http://localhost:8788" or "https://accounts.example.com". */
  readonly origin: string
  /** The host name without port, e.g. "localhost". */
  readonly rpId: string
}

/**
 * WebAuthn options for the browser, as @simplewebauthn/browser's startRegistration /
 * startAuthentication take them (`{optionsJSON}`): JSON, sent to the page as they are.
 */
export type WebAuthnOptions = Readonly<Record<string, unknown>>

/** A ceremony begun: its flow token (back with the finish) and the browser's options. */
export interface BegunCeremony {
  readonly flow: string
  readonly options: WebAuthnOptions
  /** When the flow stops being accepted. */
  readonly expires_at: Timestamp
}

/** A new session: `token` goes in the HttpOnly cookie, `csrf` in every form of its pages. */
export interface NewSession {
  readonly token: string
  readonly csrf: string
  /** Sessions do not slide: the cookie's Max-Age/Expires. */
  readonly expires_at: Timestamp
}

/** The signed-in person, as pages show them. */
export interface SignedInPerson {
  readonly person_id: string
  readonly email: string
  /** The platform account; null only in the instant between confirmation and the link (never seen in practice). */
  readonly account_id: AccountId | null
}

/** A live session: who, and the CSRF token its forms must carry (derived from the session token). */
export interface LiveSession {
  readonly person: SignedInPerson
  readonly csrf: string
  readonly expires_at: Timestamp
}

/** A passkey as the manage page lists it (never the public key). */
export interface PasskeyView {
  readonly credential_id: string
  readonly name: string
  readonly transports: ReadonlyArray<string>
  readonly created_at: Timestamp
  readonly last_used_at: Timestamp | null
}

/** A recovery waiting for its delay (the manage page shows it with a cancel button). */
export interface PendingRecovery {
  readonly requested_at: Timestamp
  /** The link works from this instant on. */
  readonly usable_from: Timestamp
  readonly expires_at: Timestamp
}

export interface SignUpInput extends RelyingParty {
  readonly email: string
  readonly clientAddress: string
}

export interface FinishInput extends RelyingParty {
  readonly flow: string
  /** The browser's JSON (RegistrationResponseJSON or AuthenticationResponseJSON), unchecked: the service checks it. */
  readonly response: unknown
}

export interface FinishWithNameInput extends FinishInput {
  /** The name the person gives the passkey (default "Passkey"); trimmed, at most 64 characters. */
  readonly name?: string | undefined
}

/** A state-changing call of a signed-in person. */
export interface SessionCall {
  readonly session: string
  readonly csrf: string
}

// ---- the service's shape (AccountService.ts) -----------------------------------------------

export interface AccountServiceShape {
  /**
   * Sign-up, step 1: registration options for a new passkey of `email` (resident key required,
   * user verification preferred, "none" attestation). Nothing about the person is stored yet, so an
   * abandoned sign-up leaves only an expiring flow. Refused: invalid_email, email_taken (a
   * confirmed person holds it), rate_limited (per address and per email).
   */
  readonly beginSignUp: (input: SignUpInput) => Effect.Effect<BegunCeremony, AccountError>
  /**
   * Sign-up, step 2: verifies the new passkey and mails the confirmation link (24 h, Ceremonies.CONFIRM_TTL_MS). The
   * person is NOT stored yet: the pending registration (email, passkey) travels in the link's
   * token, and the person exists from the moment the link is followed. So an unconfirmed sign-up
   * holds no email (nobody can squat an address), and until then the passkey signs nobody in.
   * Refused: invalid_flow, verification_failed, passkey_taken, email_taken, invalid_email,
   * email_unavailable (nothing kept: start again).
   */
  readonly finishSignUp: (
    input: FinishWithNameInput
  ) => Effect.Effect<{ readonly person_id: string; readonly email: string }, AccountError>
  /**
   * Sends a new link for the newest pending sign-up of `email` (older links stop working). Answers
   * the same whether or not one is pending, so it tells nobody who signed up. Refused:
   * rate_limited, email_unavailable.
   */
  readonly resendConfirmation: (input: {
    readonly email: string
    readonly clientAddress: string
  }) => Effect.Effect<void, AccountError>
  /**
   * Follows the confirmation link: stores the person (email confirmed) with their passkey, makes
   * the platform account, asks the network for the identity (a refusal is kept as state failed; no
   * answer leaves it provisioning, asked again by identityOf), and signs the person in. The link
   * works once. Refused: token_unknown, token_used, token_expired, email_taken (another sign-up of
   * the address was confirmed first, or the address is the first-start owner's), passkey_taken.
   */
  readonly confirmEmail: (input: { readonly token: string }) => Effect.Effect<{
    readonly session: NewSession
    readonly person: SignedInPerson
  }, AccountError>
  /**
   * Sign-in, step 1: authentication options with no allowCredentials (discoverable credentials:
   * the browser offers the passkeys it holds for this rpID). Refused: rate_limited (per address).
   */
  readonly beginSignIn: (
    input: RelyingParty & { readonly clientAddress: string }
  ) => Effect.Effect<BegunCeremony, AccountError>
  /**
   * Sign-in, step 2: verifies the assertion against the stored passkey (counter moving forward,
   * else refused as a possible clone) and creates a session. Refused: invalid_flow,
   * unknown_passkey, verification_failed.
   */
  readonly finishSignIn: (input: FinishInput) => Effect.Effect<{
    readonly session: NewSession
    readonly person: SignedInPerson
  }, AccountError>
  /** The live session behind a cookie's value, or undefined (unknown, expired, signed out). */
  readonly session: (token: string) => Effect.Effect<LiveSession | undefined>
  /** Ends the session (sign-out). CSRF-checked; an unknown session is session_required. */
  readonly signOut: (call: SessionCall) => Effect.Effect<void, AccountError>
  /**
   * Adding a passkey, step 1 (signed in): registration options excluding the person's passkeys.
   * Refused: session_required, csrf_mismatch.
   */
  readonly beginAddPasskey: (call: SessionCall & RelyingParty) => Effect.Effect<BegunCeremony, AccountError>
  /**
   * Adding a passkey, step 2: the flow must have been begun by the same person. Refused:
   * session_required, csrf_mismatch, invalid_flow, verification_failed, passkey_taken.
   */
  readonly finishAddPasskey: (
    call: SessionCall & FinishWithNameInput
  ) => Effect.Effect<PasskeyView, AccountError>
  /** The signed-in person's passkeys, oldest first. Refused: session_required. */
  readonly listPasskeys: (session: string) => Effect.Effect<ReadonlyArray<PasskeyView>, AccountError>
  /**
   * Removes one of the signed-in person's passkeys. Refused: session_required, csrf_mismatch,
   * passkey_not_found, last_passkey.
   */
  readonly removePasskey: (
    call: SessionCall & { readonly credentialId: string }
  ) => Effect.Effect<void, AccountError>
  /**
   * Recovery, step 1 (every passkey lost): mails a link that works only after the recovery delay
   * (24 h by default), saying when it works and that a signed-in session can cancel it. Answers the
   * same whether or not the email is a confirmed person's (no enumeration); while a recovery is
   * pending no new one is made. Refused: rate_limited, invalid_email.
   */
  readonly requestRecovery: (input: {
    readonly email: string
    readonly clientAddress: string
  }) => Effect.Effect<void, AccountError>
  /**
   * Recovery, step 2 (the link, after the delay): registration options for a new passkey. The link
   * is consumed and `link` is a fresh one, usable at once until the original's expiry, for a retry
   * if the ceremony fails (the page's address should switch to it). Refused: token_unknown,
   * token_used, token_expired, token_early (with not_before).
   */
  readonly beginRecovery: (
    input: RelyingParty & { readonly token: string }
  ) => Effect.Effect<BegunCeremony & { readonly link: string }, AccountError>
  /**
   * Recovery, step 3: adds the new passkey, ends every session of the person and every pending
   * recovery link, and signs this browser in. Refused: invalid_flow, verification_failed,
   * passkey_taken.
   */
  readonly finishRecovery: (input: FinishWithNameInput) => Effect.Effect<{
    readonly session: NewSession
    readonly person: SignedInPerson
  }, AccountError>
  /** The signed-in person's pending recovery, if any. Refused: session_required. */
  readonly pendingRecovery: (session: string) => Effect.Effect<PendingRecovery | undefined, AccountError>
  /**
   * Cancels every pending recovery of the signed-in person (someone else asked for it).
   * Refused: session_required, csrf_mismatch.
   */
  readonly cancelRecovery: (call: SessionCall) => Effect.Effect<void, AccountError>
  /**
   * Creates an API key on the signed-in person's account with the permissions they chose among
   * inference, read and manage (Passkeys.ts PERSON_KEY_PERMISSIONS). The secret is in the answer,
   * once. Refused: session_required, csrf_mismatch, invalid_request (name empty or over 64
   * characters, no permission or one a person's page does not give).
   */
  readonly createKey: (
    call: SessionCall & { readonly name: string; readonly permissions: ReadonlyArray<string> }
  ) => Effect.Effect<CreatedKey, AccountError>
  /**
   * The claim link's page (docs/accounts.md "The owner"; links are made by Owner.issueClaimLink):
   * the owner's email and when the link expires, while it is outstanding. Refused: token_unknown
   * (used, replaced by a newer link, expired, or never made).
   */
  readonly claimView: (token: string) => Effect.Effect<{ readonly email: string; readonly expires_at: Timestamp }, AccountError>
  /**
   * Claiming the owner account, step 1: registration options for a passkey of the owner's person
   * (excluding the passkeys it has). The link is checked, not consumed. Refused: token_unknown.
   */
  readonly beginClaim: (input: RelyingParty & { readonly token: string }) => Effect.Effect<BegunCeremony, AccountError>
  /**
   * Claiming the owner account, step 2: verifies the passkey, consumes the link, stores the
   * owner's person with the passkey (or adds it, signing the person out elsewhere), and signs this
   * browser in. Refused: invalid_flow, verification_failed, token_used, token_expired,
   * passkey_taken, email_taken (a person signed up with the owner's address before it was the owner's).
   */
  readonly finishClaim: (input: FinishWithNameInput) => Effect.Effect<{
    readonly session: NewSession
    readonly person: SignedInPerson
  }, AccountError>
  /**
   * The identity of a platform account, for GET /identity: the person's (state, did, wallet, error,
   * passkeys, can_send, manage_url). An identity still provisioning is asked for again here. The
   * first-start owner's identity is made at start (Owner.ts) and shows 0 passkeys until the owner
   * claims the account (docs/api-decisions.md).
   */
  readonly identityOf: (accountId: AccountId) => Effect.Effect<Identity>
}
