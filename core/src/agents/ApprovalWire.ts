/**
 * The account service's agent approvals API on the wire (the spec's "Account service"): what the
 * platform POSTs to `{accounts_url}/api/accounts/{sub}/agent-approvals` and what
 * `GET …/agent-approvals/{id}` answers in each state. One declaration for both sides: the account
 * service's routes decode requests and encode answers with these, the platform's client
 * (agents/AgentApprovals.ts) the other way round.
 *
 * Amounts: the request's network caps are decimal strings of network tokens (as the platform's
 * API takes them); the approved settings answer them in wei (`max_transaction_value`,
 * `max_daily_spend`, decimal strings of integers), as the spec says. Credit limits are numbers of
 * credits, null when unset.
 */
import { Schema } from "effect"
import { AgentName, ApprovalKind, Capability, ExpiresInDays, TokenAmountOrEmpty } from "./Schemas.ts"

/** How long an approval link works (the spec: "approval link valid 30 minutes"). */
export const APPROVAL_LINK_MS = 30 * 60_000

const Credits = Schema.NullOr(Schema.Number)
/** A decimal string of wei (an integer). */
const Wei = Schema.String.check(Schema.isPattern(/^\d+$/, { expected: "an integer amount of wei" }))

/** The settings a create or update asks the owner to sign. */
export const ApprovalSettingsWire = Schema.Struct({
  agent_name: AgentName,
  capabilities: Schema.Array(Capability).check(Schema.isNonEmpty({ expected: "at least one capability" })),
  max_transaction_token: TokenAmountOrEmpty,
  max_daily_token: TokenAmountOrEmpty,
  daily_limit_credits: Credits,
  total_limit_credits: Credits,
  expires_in_days: ExpiresInDays
})
export type ApprovalSettingsWire = typeof ApprovalSettingsWire.Type

/** POST …/agent-approvals. settings and serving_nodes for create and update; agent_did for update and revoke. */
export const CreateApprovalWire = Schema.Struct({
  kind: ApprovalKind,
  settings: Schema.optionalKey(ApprovalSettingsWire),
  serving_nodes: Schema.optionalKey(Schema.Array(Schema.Struct({ machine_did: Schema.String, operator_did: Schema.String }))),
  agent_did: Schema.optionalKey(Schema.String),
  return_to: Schema.optionalKey(Schema.String)
})
export type CreateApprovalWire = typeof CreateApprovalWire.Type

export const CreatedApprovalWire = Schema.Struct({ id: Schema.String, approve_url: Schema.String })
export type CreatedApprovalWire = typeof CreatedApprovalWire.Type

/** The settings the owner signed, as the approved answer carries them (caps in wei). */
export const ApprovedSettingsWire = Schema.Struct({
  agent_name: Schema.String,
  capabilities: Schema.Array(Capability),
  max_transaction_value: Schema.NullOr(Wei),
  max_daily_spend: Schema.NullOr(Wei),
  expires_in_days: Schema.Int,
  daily_limit_credits: Credits,
  total_limit_credits: Credits
})
export type ApprovedSettingsWire = typeof ApprovedSettingsWire.Type

/** GET …/agent-approvals/{id}, by state. */
export const ApprovalResultWire = Schema.Union([
  Schema.Struct({ state: Schema.Literal("pending") }),
  Schema.Struct({ state: Schema.Literal("expired") }),
  Schema.Struct({ state: Schema.Literal("failed"), error: Schema.String }),
  Schema.Struct({ state: Schema.Literal("collected"), agent_did: Schema.String }),
  Schema.Struct({
    state: Schema.Literal("approved"),
    kind: ApprovalKind,
    agent_did: Schema.String,
    network: Schema.Struct({
      identity: Schema.Struct({ did: Schema.String, controller_did: Schema.String }),
      wallet: Schema.Struct({ address: Schema.String }),
      serving_nodes: Schema.Array(Schema.Struct({ machine_did: Schema.String, operator_did: Schema.String, dpop_jkt: Schema.String })),
      /** The agent-scoped network key: handed over once, the account service keeps no copy. */
      api_key: Schema.NullOr(Schema.String)
    }),
    settings: Schema.NullOr(ApprovedSettingsWire)
  })
])
export type ApprovalResultWire = typeof ApprovalResultWire.Type
