/**
 * The claim page (docs/accounts.md "The owner"): a claim link made with the owner key opens it, and
 * its button registers a passkey for the owner account (the page script's "claim" ceremony). In the
 * look of the other account pages (PageFrame.ts); every value is HTML-escaped. Elements tests look
 * for carry stable ids (#claim, #claim-account, #claim-expires).
 */
import { escapeHtml } from "./CheckoutPage.ts"
import { errorLine, layout, type PageContext } from "./PageFrame.ts"

export interface ClaimView {
  /** The owner account's email. */
  readonly email: string
  readonly expires_at: string
  /** The platform's base URL, for the command that makes a new link. */
  readonly platformUrl: string
}

const utc = (iso: string) => `${iso.replace("T", " ").slice(0, 16)} UTC`

/** The claim link's page: whose account, until when, and the button that creates the passkey. */
export const claimPage = (ctx: PageContext, token: string, view: ClaimView): string =>
  layout(
    ctx,
    "Claim the owner account",
    `<h1>Claim the owner account</h1>
<p>This link was made with the owner key of the platform. Create a passkey on this device to sign in
to your account here and to approve the agents your applications propose. Your device unlocks the
passkey with your fingerprint, face or screen lock.</p>
<dl id="claim-account">
<dt>Account</dt><dd id="claim-email">${escapeHtml(view.email)}</dd>
<dt>Link works until</dt><dd id="claim-expires"><time datetime="${escapeHtml(view.expires_at)}">${escapeHtml(utc(view.expires_at))}</time></dd>
</dl>
${errorLine(undefined)}
<button type="button" id="claim" data-ceremony="claim" data-token="${escapeHtml(token)}">Create a passkey</button>
<p class="note">The link works once. If it is lost or expired, make another with a manage key of the owner account:</p>
<pre id="claim-command">${escapeHtml(`curl -X POST ${view.platformUrl}/identity/claim-link -H "Authorization: Bearer $OWNER_KEY"`)}</pre>`,
    { script: true }
  )
