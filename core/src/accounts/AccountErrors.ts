/**
 * The refusals of the account service (AccountService.ts) and of the owner's claim links (Owner.ts):
 * one error class, a stable reason each (docs/architecture.md "Errors"); http/Refusals.ts maps every
 * reason to its HTTP status.
 */
import { Schema } from "effect"
import { refusalFields, type RefusalOf } from "../kernel/Refusal.ts"

/** Every refusal of the account service. */
export const AccountErrorReasons = [
  /** The email is not one deliverable address (malformed, or refused for good by the mail server). */
  "invalid_email",
  /** A person holds this email already: sign in instead (or recover). */
  "email_taken",
  /** The mail could not be sent now: try again later (nothing was kept). */
  "email_unavailable",
  /** Too many attempts from this address or for this email: `retry_after_seconds`. */
  "rate_limited",
  /** The ceremony's flow is unknown, used (a replay) or expired: start the ceremony again. */
  "invalid_flow",
  /** The browser's WebAuthn response did not verify (wrong origin or rpID, bad signature, other challenge, malformed). */
  "verification_failed",
  /** The passkey used to sign in is not registered here (removed, made for another site, or its sign-up never confirmed). */
  "unknown_passkey",
  /** The new passkey is already registered (to this person or another). */
  "passkey_taken",
  /** No passkey of the signed-in person has this id. */
  "passkey_not_found",
  /** It is the person's only passkey: add another first. */
  "last_passkey",
  /** No live session (none, unknown, expired, signed out): sign in. */
  "session_required",
  /** The form's CSRF token is not the session's. */
  "csrf_mismatch",
  /** The mailed link is not known (mistyped, or never issued). */
  "token_unknown",
  /** The mailed link was used already (or cancelled, or replaced by a newer one). */
  "token_used",
  /** The mailed link expired: ask for a new one. */
  "token_expired",
  /** The recovery link is not usable yet: from `not_before` on. */
  "token_early",
  /** The request itself is malformed (a key name too long, ...). */
  "invalid_request",
  /** No agent approval of this person has this id. */
  "approval_not_found",
  /** The approval is no longer waiting: it expired (its link is valid 30 minutes) or was decided. */
  "approval_closed",
  /** The caller of the approvals API is not the platform (wrong or missing client credentials). */
  "client_unauthorized",
  /** The network gave no answer now: try again (nothing changed). */
  "network_unavailable",
  /** A claim link asked for an account other than the owner account made at first start (Owner.ts). */
  "not_owner_account"
] as const

export type AccountErrorReason = (typeof AccountErrorReasons)[number]

/**
 * A refusal of the account service. `reason` is stable (pages and JSON answers switch on it; it is
 * the answer's code); `message` is for the person and never holds a secret.
 */
export class AccountError extends Schema.TaggedError<AccountError>()("AccountError", {
  ...refusalFields(AccountErrorReasons),
  /** rate_limited: seconds until the window that refused the call ends (the Retry-After header). */
  retry_after_seconds: Schema.optionalKey(Schema.Int),
  /** token_early: when the recovery link becomes usable. */
  not_before: Schema.optionalKey(Schema.String)
}) {
  static readonly reasons = AccountErrorReasons
}

export type AccountErrorOf<R extends AccountErrorReason> = RefusalOf<AccountError, R>

export const accountError = <R extends AccountErrorReason>(
  reason: R,
  message: string,
  extra: { readonly retry_after_seconds?: number; readonly not_before?: string } = {}
): AccountErrorOf<R> => new AccountError({ reason, message, ...extra }) as AccountErrorOf<R>

