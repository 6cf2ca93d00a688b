/**
 * The account's human identity on the network (GET /identity): its DID, its passkey-controlled
 * wallet and where the owner manages it. JSON shape only.
 */
import { Schema } from "effect"
import { Timestamp } from "../kernel/Time.ts"

/** ready is observed; provisioning and failed are ours (docs/resources.md). */
export const IdentityStateValues = ["provisioning", "ready", "failed"] as const
export const IdentityState = Schema.Literals(IdentityStateValues)
export type IdentityState = typeof IdentityState.Type

/** `did:svc:human:<id>`. */
export const HumanDid = Schema.String.check(
  Schema.isPattern(/^did:svc:human:[^:\s]+$/, { expected: "a DID of the form did:svc:human:<id>" })
)

export const Identity = Schema.Struct({
  state: IdentityState,
  /** null until the identity is ready. */
  did: Schema.NullOr(HumanDid),
  wallet_address: Schema.NullOr(Schema.String),
  error: Schema.NullOr(Schema.String),
  passkeys: Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)),
  can_send: Schema.Boolean,
  manage_url: Schema.String
})
export type Identity = typeof Identity.Type

/**
 * POST /identity/claim-link: a one-time link to the account service's claim page, where the owner
 * account's holder registers a passkey (docs/accounts.md "The owner").
 */
export const ClaimLink = Schema.Struct({
  claim_url: Schema.String,
  expires_at: Timestamp
})
export type ClaimLink = typeof ClaimLink.Type
