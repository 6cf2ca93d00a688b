/**
 * The account service's pages for a person (docs/accounts.md "Pages and routes"), as pure
 * functions from data to HTML, in the look of the hosted checkout (CheckoutPage.ts). Routes live in
 * http/AccountRoutes.ts; the passkey ceremonies run in the small page script (PageScript.ts) with
 * the @simplewebauthn/browser bundle, both served by the account service itself, so the pages
 * carry no inline script and their CSP allows scripts from 'self' only.
 *
 * Every form carries the CSRF token in a hidden field `csrf`; the script sends the same token in
 * the `x-csrf-token` header (it reads it from `<meta name="csrf-token">`). Every value that reaches
 * a page is HTML-escaped. Elements tests look for carry stable ids (#email, #sign-up, #sign-in,
 * #confirm, #key-name, #create-key, #key-secret, #passkeys, #add-passkey, #sign-out, ...).
 */
import { escapeHtml } from "./CheckoutPage.ts"
import type { Permission } from "../../keys/Permissions.ts"
import { csrfField, errorLine, layout, okLine, type PageContext } from "./PageFrame.ts"
import { DEFAULT_PERSON_KEY_PERMISSIONS } from "../../accounts/Passkeys.ts"

export type { PageContext } from "./PageFrame.ts"

/** Sign up: an email and "Create a passkey". */
export const signUpPage = (ctx: PageContext, options: { readonly error?: string; readonly email?: string } = {}): string =>
  layout(
    ctx,
    "Create your account",
    `<h1>Create your account</h1>
<p>Your account is protected by a passkey: your device unlocks it with your fingerprint, face or
screen lock. There is no password.</p>
${errorLine(options.error)}
<form id="sign-up-form" method="post" action="${escapeHtml(ctx.base)}/sign-up" data-ceremony="sign-up">
${csrfField(ctx)}
<label for="email">Email address</label>
<input id="email" name="email" type="email" autocomplete="email webauthn" required value="${escapeHtml(options.email ?? "")}">
<button type="submit" id="sign-up">Create a passkey</button>
</form>
<p class="note">Already have an account? <a href="${escapeHtml(ctx.base)}/sign-in">Sign in</a>.
We send one email to confirm your address.</p>`,
    { script: true }
  )

/** After sign-up: the confirmation link is on its way. */
export const checkEmailPage = (ctx: PageContext, options: { readonly email?: string | undefined } = {}): string =>
  layout(
    ctx,
    "Check your email",
    `<h1>Check your email</h1>
<p class="ok" role="status" id="check-email">We sent a link to ${
      options.email === undefined ? "your address" : `<strong>${escapeHtml(options.email)}</strong>`
    }. Open it to confirm your address and finish creating your account.</p>
<p class="note">The link works once and expires. Nothing arrived? Check your spam folder, or
<a href="${escapeHtml(ctx.base)}/sign-up">start again</a>.</p>`
  )

/** The emailed confirmation link (GET): a button, since mail scanners prefetch links. */
export const confirmPage = (ctx: PageContext, token: string, options: { readonly error?: string } = {}): string =>
  layout(
    ctx,
    "Confirm your email address",
    `<h1>Confirm your email address</h1>
${errorLine(options.error)}
<form method="post" action="${escapeHtml(ctx.base)}/confirm">
${csrfField(ctx)}
<input type="hidden" name="token" value="${escapeHtml(token)}">
<p>Press the button to confirm this address and open your account.</p>
<button type="submit" id="confirm">Confirm my address</button>
</form>`
  )

/** What the pages show of the person's identity on the network. */
export interface IdentitySummary {
  readonly state: string
  readonly did: string | null
  readonly wallet_address: string | null
  readonly error: string | null
}

/** A key just created: its secret is on this page only. */
export interface CreatedKeyView {
  readonly id: string
  readonly name: string
  readonly prefix: string
  readonly permissions: ReadonlyArray<string>
  readonly secret: string
}

/** How to call a model: the platform's inference base URL and a model to name. */
export interface CallExample {
  /** e.g. https://platform.example.com/v1 */
  readonly inferenceBase: string
  readonly model: string
}

const PERMISSION_CHOICES: ReadonlyArray<{ readonly value: Permission; readonly label: string }> = [
  { value: "inference", label: "call models" },
  { value: "read", label: "read this account: balance, usage, orders" },
  { value: "manage", label: "manage this account: keys, orders, gift tickets, billing settings" }
]

const keyForm = (ctx: PageContext, action: string) =>
  `<form method="post" action="${escapeHtml(action)}" id="create-key-form">
${csrfField(ctx)}
<label for="key-name">Key name</label>
<input id="key-name" name="name" type="text" maxlength="64" required placeholder="my laptop">
<fieldset id="key-permissions"><legend>It may</legend>
${
    PERMISSION_CHOICES.map(({ value, label }) =>
      `<label class="check"><input type="checkbox" name="permission" value="${value}"${
        DEFAULT_PERSON_KEY_PERMISSIONS.includes(value) ? " checked" : ""
      }><span>${escapeHtml(label)} <span class="note">(${value})</span></span></label>`
    ).join("\n")
  }
</fieldset>
<button type="submit" id="create-key">Create an API key</button>
</form>`

const createdKey = (key: CreatedKeyView, example: CallExample) =>
  `<div role="status">
<p class="ok" id="key-created">Key <strong>${escapeHtml(key.name)}</strong> created (${
    escapeHtml(key.permissions.join(", "))
  }). Copy its secret now: it is shown only this once.</p>
<p class="secret" id="key-secret">${escapeHtml(key.secret)}</p>
</div>
${callExample(example, key.secret)}`

/** A curl line and the openai SDK with the real base URL. */
export const callExample = (example: CallExample, secret = "$MODEL_PLATFORM_KEY"): string => {
  const body = JSON.stringify({ model: example.model, messages: [{ role: "user", content: "Hello!" }] })
  const curl = `curl ${example.inferenceBase}/chat/completions \\
  -H "Authorization: Bearer ${secret}" \\
  -H "Content-Type: application/json" \\
  -d '${body}'`
  const sdk = `from openai import OpenAI

client = OpenAI(base_url="${example.inferenceBase}", api_key="${secret}")
reply = client.chat.completions.create(
    model="${example.model}",
    messages=[{"role": "user", "content": "Hello!"}],
)
print(reply.choices[0].message.content)`
  return `<h2>Call a model</h2>
<p>With curl:</p>
<pre id="example-curl">${escapeHtml(curl)}</pre>
<p>With the openai SDK (Python):</p>
<pre id="example-sdk">${escapeHtml(sdk)}</pre>`
}

/** After the address is confirmed: create the first API key, and how to use it. */
export const welcomePage = (
  ctx: PageContext,
  options: {
    readonly email: string
    readonly example: CallExample
    readonly created?: CreatedKeyView | undefined
    readonly error?: string | undefined
  }
): string =>
  layout(
    ctx,
    "Welcome",
    `<nav><span>${escapeHtml(options.email)}</span><a href="${escapeHtml(ctx.base)}/manage" id="manage-link">Manage your account</a></nav>
<h1>Welcome to Model Platform</h1>
${errorLine(options.error)}
${
      options.created === undefined
        ? `<p>Your address is confirmed and your account is ready. Create your first API key to call a model.</p>
${keyForm(ctx, `${ctx.base}/welcome`)}
${callExample(options.example)}`
        : `${createdKey(options.created, options.example)}
<p><a href="${escapeHtml(ctx.base)}/manage" class="button" id="continue">Continue to your account</a></p>`
    }`
  )

/** Sign in: one button, the passkey (a discoverable credential) says who you are. */
export const signInPage = (ctx: PageContext, options: { readonly error?: string; readonly notice?: string } = {}): string =>
  layout(
    ctx,
    "Sign in",
    `<h1>Sign in</h1>
${okLine(options.notice)}
${errorLine(options.error)}
<p>Use the passkey you created for this account.</p>
<button type="button" id="sign-in" data-ceremony="sign-in">Sign in with a passkey</button>
<p class="note">No account yet? <a href="${escapeHtml(ctx.base)}/sign-up">Create one</a>.
Lost every passkey? <a href="${escapeHtml(ctx.base)}/recover" id="recover-link">Recover your account</a>.</p>`,
    { script: true }
  )

export interface PasskeyView {
  readonly credential_id: string
  readonly name: string
  readonly created_at: string
  readonly last_used_at: string | null
}

export interface TicketView {
  readonly code: string
  readonly credits: number
  readonly redeemed: boolean
}

export interface KeyView {
  readonly id: string
  readonly name: string
  readonly prefix: string
  readonly permissions: ReadonlyArray<string>
  readonly revoked_at: string | null
}

/** The signed-in person's account: identity, passkeys, keys, sign-out. */
export const managePage = (
  ctx: PageContext,
  options: {
    readonly email: string
    readonly identity: IdentitySummary
    readonly passkeys: ReadonlyArray<PasskeyView>
    readonly keys?: ReadonlyArray<KeyView> | undefined
    readonly example: CallExample
    readonly created?: CreatedKeyView | undefined
    readonly pendingRecovery?: { readonly usable_from: string } | undefined
    /** The gift tickets this account bought, to pass on (their codes are bearer credits). */
    readonly tickets?: ReadonlyArray<TicketView> | undefined
    readonly notice?: string | undefined
    readonly error?: string | undefined
  }
): string =>
  layout(
    ctx,
    "Your account",
    `<h1>Your account</h1>
${okLine(options.notice)}
${errorLine(options.error)}
${options.created === undefined ? "" : createdKey(options.created, options.example)}
<dl id="identity">
<dt>Email</dt><dd id="account-email">${escapeHtml(options.email)}</dd>
<dt>Identity</dt><dd id="identity-state">${escapeHtml(options.identity.state)}${
      options.identity.error === null ? "" : `: ${escapeHtml(options.identity.error)}`
    }</dd>
${options.identity.did === null ? "" : `<dt>DID</dt><dd id="identity-did">${escapeHtml(options.identity.did)}</dd>`}
${
      options.identity.wallet_address === null
        ? ""
        : `<dt>Wallet</dt><dd id="identity-wallet">${escapeHtml(options.identity.wallet_address)}</dd>`
    }
</dl>
<p><a href="${escapeHtml(ctx.base)}/billing" id="billing-link">Billing: balance, usage, receipts and automatic top-ups</a> ·
<a href="${escapeHtml(ctx.base)}/plans" id="plans-link">Plans and rentals</a></p>
<h2>Passkeys</h2>
<ul class="list" id="passkeys">
${
      options.passkeys.map((p) =>
        `<li data-credential-id="${escapeHtml(p.credential_id)}"><span>${escapeHtml(p.name)}<br><span class="note">added ${
          escapeHtml(p.created_at.slice(0, 10))
        }${p.last_used_at === null ? "" : `, last used ${escapeHtml(p.last_used_at.slice(0, 10))}`}</span></span>
<form method="post" action="${escapeHtml(ctx.base)}/passkeys/remove">${csrfField(ctx)}<input type="hidden" name="credential_id" value="${
          escapeHtml(p.credential_id)
        }"><button type="submit" class="small secondary" aria-label="Remove passkey ${escapeHtml(p.name)}"${
          options.passkeys.length <= 1 ? " disabled title=\"Your only passkey cannot be removed\"" : ""
        }>Remove</button></form></li>`
      ).join("\n")
    }
</ul>
<button type="button" class="secondary" id="add-passkey" data-ceremony="add-passkey">Add a passkey</button>
${
      options.keys === undefined
        ? ""
        : `<h2>API keys</h2>
<ul class="list" id="keys">
${
          options.keys.filter((k) => k.revoked_at === null).map((k) =>
            `<li><span>${escapeHtml(k.name)} <span class="note">${escapeHtml(k.prefix)}… · ${escapeHtml(k.permissions.join(", "))}</span></span></li>`
          ).join("\n") || `<li><span class="note">No keys yet.</span></li>`
        }
</ul>`
    }
${
      options.pendingRecovery === undefined
        ? ""
        : `<div class="error" role="alert" id="pending-recovery" style="margin-top:1.5rem"><p style="margin-top:0">A recovery of this account was requested. Its link works from
${escapeHtml(options.pendingRecovery.usable_from.replace("T", " ").slice(0, 16))} UTC. If you did not ask for it, cancel it.</p>
<form method="post" action="${escapeHtml(ctx.base)}/recovery/cancel">${csrfField(ctx)}
<button type="submit" class="secondary" id="cancel-recovery">Cancel the recovery</button></form></div>`
    }
<h2>Buy credits</h2>
<form method="post" action="${escapeHtml(ctx.base)}/buy" id="buy-form">
${csrfField(ctx)}
<label for="buy-amount">Amount in USD (5 to 5000)</label>
<input id="buy-amount" name="amount_usd" type="text" inputmode="numeric" required value="10">
<label class="check"><input type="checkbox" name="gift" value="true" id="buy-gift"> as a gift ticket for someone else</label>
<button type="submit" id="buy-credits">Continue to payment</button>
</form>
${
      options.tickets === undefined || options.tickets.length === 0
        ? ""
        : `<h2>Gift tickets you bought</h2>
<ul class="list" id="tickets">
${
          options.tickets.map((t) =>
            `<li><span><span class="ticket-code" style="font-family: ui-monospace, monospace">${escapeHtml(t.code)}</span><br><span class="note">${
              escapeHtml(String(t.credits))
            } credits</span></span><span class="note">${t.redeemed ? "redeemed" : "not redeemed yet"}</span></li>`
          ).join("\n")
        }
</ul>
<p class="note">Anyone holding a code can redeem it once: give it only to the person it is for.</p>`
    }
<h2>Redeem a gift ticket</h2>
<form method="post" action="${escapeHtml(ctx.base)}/redeem" id="redeem-form">
${csrfField(ctx)}
<label for="ticket-code">Ticket code</label>
<input id="ticket-code" name="code" type="text" required autocomplete="off">
<button type="submit" class="secondary" id="redeem">Redeem</button>
</form>
<h2>Create another API key</h2>
${keyForm(ctx, `${ctx.base}/keys`)}
<form method="post" action="${escapeHtml(ctx.base)}/sign-out">
${csrfField(ctx)}
<button type="submit" class="secondary" id="sign-out">Sign out</button>
</form>`,
    { script: true }
  )

/** Recovery, step one: ask for a link by email. */
export const recoverPage = (
  ctx: PageContext,
  options: { readonly sent?: boolean; readonly error?: string | undefined } = {}
): string =>
  layout(
    ctx,
    "Recover your account",
    `<h1>Recover your account</h1>
${errorLine(options.error)}
${
      options.sent === true
        ? `<p class="ok" role="status" id="recovery-sent">If an account uses this address, a recovery link is on its way.
The link lets you register a new passkey after a waiting period, and every passkey still works until then.</p>`
        : `<p>Lost every passkey? We email a link to your address. For your safety the link lets you
register a new passkey only after a waiting period; any sign-in with an existing passkey meanwhile
can cancel it.</p>
<form method="post" action="${escapeHtml(ctx.base)}/recover">
${csrfField(ctx)}
<label for="email">Email address</label>
<input id="email" name="email" type="email" autocomplete="email" required>
<button type="submit" id="recover">Email me a recovery link</button>
</form>`
    }`
  )

/** The emailed recovery link: wait until `not_before`, then register a new passkey. */
export const recoveryLinkPage = (
  ctx: PageContext,
  token: string,
  options: { readonly notBefore?: string | undefined; readonly error?: string | undefined } = {}
): string =>
  layout(
    ctx,
    "Register a new passkey",
    `<h1>Register a new passkey</h1>
${errorLine(options.error)}
${
      options.notBefore === undefined
        ? `<p>Create a new passkey for your account on this device. This signs you out everywhere else.</p>
<button type="button" id="register-passkey" data-ceremony="recover" data-token="${escapeHtml(token)}">Create a new passkey</button>`
        : `<p class="ok" role="status" id="recovery-wait">For your safety this link opens at
<time datetime="${escapeHtml(options.notBefore)}">${escapeHtml(options.notBefore.replace("T", " ").slice(0, 16))} UTC</time>.
Come back to this page then.</p>`
    }`,
    { script: true }
  )

/** A readable error for a person, with a way on. */
export const errorPage = (
  ctx: PageContext,
  title: string,
  message: string,
  next: { readonly href: string; readonly label: string } = { href: `${ctx.base}/sign-in`, label: "Go to sign-in" }
): string =>
  layout(
    ctx,
    title,
    `<h1>${escapeHtml(title)}</h1>
<p class="error" role="alert" id="error">${escapeHtml(message)}</p>
<p><a href="${escapeHtml(next.href)}" id="next">${escapeHtml(next.label)}</a></p>`
  )

/** An order made on the manage page: pay it on the checkout page. */
export const orderPage = (
  ctx: PageContext,
  order: { readonly id: string; readonly title: string; readonly amount_usd: number; readonly pay_url: string; readonly gift: boolean }
): string =>
  layout(
    ctx,
    "Pay your order",
    `<h1>${escapeHtml(order.title)}</h1>
<p class="ok" role="status" id="order-created">Order <span id="order-id">${escapeHtml(order.id)}</span> is waiting for payment
($${escapeHtml(order.amount_usd.toFixed(2))}).${
      order.gift ? " Once it is paid, its gift ticket code is listed on your account page, ready to pass on." : ""
    }</p>
<p><a href="${escapeHtml(order.pay_url)}" id="pay-link" class="button">Pay $${escapeHtml(order.amount_usd.toFixed(2))} by card</a></p>
<p class="note"><a href="${escapeHtml(ctx.base)}/manage">Back to your account</a></p>`
  )
