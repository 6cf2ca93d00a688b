/**
 * The first-start owner as a full account (docs/accounts.md "The owner"). The owner account is
 * made at first start with a key (Bootstrap.ts), not by a sign-up, so no person stands behind it
 * until the owner claims it:
 *
 * - Its identity (`did:svc:human:<account id>`) is asked of the network at every start until the
 *   network has answered (`ensureOwnerIdentity`, run by FirstStart): at the first start, and at the
 *   next start of an install whose owner an earlier release made. The identity names the owner's
 *   person id (`ownerPersonId`), derived from the account id so processes starting together agree
 *   on it; no person is stored yet, so the identity shows 0 passkeys and cannot send.
 * - A claim link, made with a manage key of the owner account (`issueClaimLink`; printed beside the
 *   key at the Node server's first start), opens a page of the account service where the owner
 *   registers a passkey (accounts/Claims.ts): the person is stored then, with that passkey and the
 *   owner's account. The key is the proof: whoever holds a manage key of the owner account can
 *   attach a passkey, as whoever holds it can already do everything else with the account.
 */
import { Clock, Effect } from "effect"
import type { Caller } from "../keys/Caller.ts"
import { accountError } from "./AccountErrors.ts"
import type { AccountRecord } from "../keys/Account.ts"
import { AccountStore } from "../keys/AccountStore.ts"
import { Network } from "../agents/Network.ts"
import { PeopleStore } from "./PeopleStore.ts"
import { sha256Hex } from "../kernel/Sha256.ts"
import * as Time from "../kernel/Time.ts"
import { askIdentity } from "./Identities.ts"
import type { ClaimLink } from "./Identity.ts"
import { hashToken, PERSON_ID_KIND } from "./Records.ts"
import { newToken } from "./WebAuthn.ts"
import type { AccountId } from "../kernel/Ids.ts"

/** How long a claim link works (docs/accounts.md "The owner"). */
export const CLAIM_LINK_TTL_MS = 24 * 60 * 60_000

/** The owner's person id: `per_` and 128 bits of SHA-256 of the account id (the same in every process). */
export const ownerPersonId = (accountId: AccountId): string =>
  `${PERSON_ID_KIND}_${sha256Hex(`model-platform owner person\n${accountId}`).slice(0, 32)}`

/** The claim page of a claim link's token. */
export const claimUrl = (accountsUrl: string, token: string): string => `${accountsUrl.replace(/\/+$/, "")}/claim?token=${token}`

/**
 * At every start: the identity of the owner (the first account, as the start read it), asked of
 * the network while it has not answered (ready, or failed with the network's reason; provisioning
 * when no answer, asked again by the account service's identityOf as for people). Nothing when
 * there is no owner yet.
 */
export const ensureOwnerIdentity = Effect.fn("Owner.ensureOwnerIdentity")(function*(owner: AccountRecord | undefined) {
  if (owner === undefined) return undefined
  const people = yield* PeopleStore
  return yield* askIdentity(people, yield* Network)(owner.id, ownerPersonId(owner.id))
})

/**
 * A new claim link for the owner account `accountId` (the older ones stop working); only the
 * token's hash is kept. Another account is refused (409 not_owner_account: a person's passkeys are
 * theirs to manage, and their recovery goes by email).
 */
export const issueClaimLink = Effect.fn("Owner.issueClaimLink")(function*(accountId: AccountId, accountsUrl: string) {
  const owner = yield* (yield* AccountStore).first
  if (owner === undefined || owner.id !== accountId) {
    return yield* accountError(
      "not_owner_account",
      `Claim links are for the owner account made at first start, whose key proves who claims it. This account's passkeys are managed at ${accountsUrl}/manage, and lost ones recovered by email at ${accountsUrl}/recover.`
    )
  }
  const people = yield* PeopleStore
  const personId = ownerPersonId(owner.id)
  const now = yield* Clock.currentTimeMillis
  const created_at = Time.toTimestamp(now)
  yield* people.revokeTokens(personId, "claim_owner", created_at)
  const token = yield* newToken
  const expires_at = Time.toTimestamp(now + CLAIM_LINK_TTL_MS)
  yield* people.issueToken({
    token_hash: hashToken(token),
    purpose: "claim_owner",
    subject: personId,
    data: "",
    created_at,
    not_before: created_at,
    expires_at,
    used_at: null
  })
  return { claim_url: claimUrl(accountsUrl, token), expires_at } satisfies ClaimLink
})

/**
 * POST /identity/claim-link (manage): a claim link for the caller's account, as issueClaimLink. The
 * endpoint is account-wide (KeyScope.ts): a key scoped to a machine, a plan or a rental never gets
 * here (403 key_scope_too_narrow), and agent keys never hold manage — a passkey controls the whole
 * account.
 */
export const claimLinkFor = (caller: Caller, accountsUrl: string) => issueClaimLink(caller.account.id, accountsUrl)
