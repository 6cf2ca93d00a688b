/** The refusals of the account service (AccountService.ts): one error class, a stable code and an HTTP status each. */
import { Schema } from "effect"

/** Every refusal of the account service, with its HTTP status. */
export const ACCOUNT_ERROR_STATUS = {
  /** The email is not one deliverable address (malformed, or refused for good by the mail server). */
  invalid_email: 400,
  /** A person holds this email already: sign in instead (or recover). */
  email_taken: 409,
  /** The mail could not be sent now: try again later (nothing was kept). */
  email_unavailable: 503,
  /** Too many attempts from this address or for this email: `retry_after_seconds`. */
  rate_limited: 429,
  /** The ceremony's flow is unknown, used (a replay) or expired: start the ceremony again. */
  invalid_flow: 400,
  /** The browser's WebAuthn response did not verify (wrong origin or rpID, bad signature, other challenge, malformed). */
  verification_failed: 400,
  /** The passkey used to sign in is not registered here (removed, made for another site, or its sign-up never confirmed). */
  unknown_passkey: 401,
  /** The new passkey is already registered (to this person or another). */
  passkey_taken: 409,
  /** No passkey of the signed-in person has this id. */
  passkey_not_found: 404,
  /** It is the person's only passkey: add another first. */
  last_passkey: 409,
  /** No live session (none, unknown, expired, signed out): sign in. */
  session_required: 401,
  /** The form's CSRF token is not the session's. */
  csrf_mismatch: 403,
  /** The mailed link is not known (mistyped, or never issued). */
  token_unknown: 404,
  /** The mailed link was used already (or cancelled, or replaced by a newer one). */
  token_used: 410,
  /** The mailed link expired: ask for a new one. */
  token_expired: 410,
  /** The recovery link is not usable yet: from `not_before` on. */
  token_early: 425,
  /** The request itself is malformed (a key name too long, ...). */
  invalid_request: 400,
  /** No agent approval of this person has this id. */
  approval_not_found: 404,
  /** The approval is no longer waiting: it expired (its link is valid 30 minutes) or was decided. */
  approval_closed: 409,
  /** The caller of the approvals API is not the platform (wrong or missing client credentials). */
  client_unauthorized: 401,
  /** The network gave no answer now: try again (nothing changed). */
  network_unavailable: 503
} as const

export type AccountErrorCode = keyof typeof ACCOUNT_ERROR_STATUS
export const AccountErrorCodes = Object.keys(ACCOUNT_ERROR_STATUS) as ReadonlyArray<AccountErrorCode>

/**
 * A refusal of the account service. `code` is stable (pages and JSON answers switch on it);
 * `message` is for the person and never holds a secret.
 */
export class AccountError extends Schema.TaggedError<AccountError>()("AccountError", {
  code: Schema.Literals(AccountErrorCodes as [AccountErrorCode, ...Array<AccountErrorCode>]),
  message: Schema.String,
  /** rate_limited: seconds until the window that refused the call ends (the Retry-After header). */
  retry_after_seconds: Schema.optionalKey(Schema.Int),
  /** token_early: when the recovery link becomes usable. */
  not_before: Schema.optionalKey(Schema.String)
}) {
  /** The HTTP status of this refusal. */
  get status(): number {
    return ACCOUNT_ERROR_STATUS[this.code]
  }
}

export const accountError = (
  code: AccountErrorCode,
  message: string,
  extra: { readonly retry_after_seconds?: number; readonly not_before?: string } = {}
): AccountError => new AccountError({ code, message, ...extra })

