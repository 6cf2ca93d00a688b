/**
 * Use-case: the account service (accounts for people, issue 15; docs/accounts.md "Ceremonies",
 * "Sessions", "Recovery", "Identity"). The ceremonies a person goes through at `{accounts_url}`:
 * sign up with an email and a passkey, confirm the address from a mailed link, sign in with a
 * discoverable passkey, manage passkeys, recover when every passkey is lost, create an API key,
 * and the identity GET /identity shows. The HTTP routes and pages (http/AccountRoutes.ts,
 * http/pages/Pages.ts) call only this service; they set the cookies and render the answers.
 *
 * Conventions every method follows:
 * - `origin` and `rpId` are the account service's as the route sees them (the request's origin and
 *   the host name without port); the WebAuthn verification checks the browser signed for exactly
 *   those, so a page served elsewhere cannot use a passkey made here.
 * - A `flow` is an opaque one-time token for one WebAuthn ceremony (the store keeps its hash, with
 *   the challenge; 5 minutes, WebAuthn.FLOW_TTL_MS): the route hands it to the page with the
 *   options and sends it back with the browser's response. It is consumed by the finish, whatever
 *   its outcome, so a replay is `invalid_flow`.
 * - `session` is the cookie's value; `csrf` is the form's hidden field. Every call
 *   that changes something for a signed-in person takes both and checks the CSRF token first.
 * - `clientAddress` is the caller's IP as the shell sees it, for the rate limits (docs/limits.md).
 * - Every refusal is an `AccountError` whose `code` says what happened and whose `status` is the
 *   HTTP status to answer with (ACCOUNT_ERROR_STATUS). Store failures are defects, as everywhere.
 */
import { Context, Layer } from "effect"
import { makeAccountService } from "./AccountServiceLive.ts"
import type { AccountServiceShape } from "./AccountTypes.ts"

export * from "./AccountErrors.ts"
export * from "./AccountsConfig.ts"
export * from "./AccountTypes.ts"

export class AccountService extends Context.Service<AccountService, AccountServiceShape>()("@model-platform/core/accounts/AccountService") {
  static readonly layer = Layer.effect(AccountService, makeAccountService)
}
