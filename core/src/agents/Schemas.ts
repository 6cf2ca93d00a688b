/**
 * Agents: sub-identities delegated by the owner, as the API shows them, with the bodies that
 * propose one, change its settings or give it a key. Every proposal answers {approve_url, agent}
 * and takes effect only once the owner approves it with a passkey. JSON shapes only; the state
 * machine lives elsewhere.
 */
import { Schema } from "effect"
import { CreditAmount } from "../kernel/Money.ts"
import { type Permission, PermissionValues } from "../keys/Permissions.ts"
import { Timestamp } from "../kernel/Time.ts"

// ---- Values -------------------------------------------------------------------------------

export const AgentStatusValues = ["awaiting_approval", "active", "failed", "expired", "revoked"] as const
export const AgentStatus = Schema.Literals(AgentStatusValues)
export type AgentStatus = typeof AgentStatus.Type

export const ApprovalKindValues = ["create", "update", "revoke"] as const
export const ApprovalKind = Schema.Literals(ApprovalKindValues)
export type ApprovalKind = typeof ApprovalKind.Type

/** States of an approval on the account service. approved is handed over once, then collected. */
export const ApprovalStateValues = ["pending", "approved", "collected", "expired", "failed"] as const
export const ApprovalState = Schema.Literals(ApprovalStateValues)
export type ApprovalState = typeof ApprovalState.Type

export const CapabilityValues = ["inference", "payments"] as const
export const Capability = Schema.Literals(CapabilityValues)
export type Capability = typeof Capability.Type

export const DEFAULT_CAPABILITIES: ReadonlyArray<Capability> = ["inference"]
export const MIN_EXPIRES_IN_DAYS = 1
export const MAX_EXPIRES_IN_DAYS = 3650
/** Ours: the delegation length when a proposal names none (docs/resources.md). */
export const DEFAULT_EXPIRES_IN_DAYS = 365

/** 1 to 64 characters of lowercase letters, digits, dots, dashes and underscores. */
export const AgentName = Schema.String.check(
  Schema.isBetweenLength(1, 64, { expected: "a name of 1 to 64 characters" }),
  Schema.isPattern(/^[a-z0-9._-]*$/, { expected: "a name of lowercase letters, digits, dots, dashes and underscores" })
)
export type AgentName = typeof AgentName.Type

/** An amount of network tokens as a decimal string (at most 18 decimals: whole wei). */
export const TokenAmount = Schema.String.check(
  Schema.isPattern(/^\d+(\.\d{1,18})?$/, { expected: "a decimal amount of network tokens, e.g. \"0.5\"" })
)
export type TokenAmount = typeof TokenAmount.Type

/** The same, or "" for unset (as the proposed settings show it). */
export const TokenAmountOrEmpty = Schema.String.check(
  Schema.isPattern(/^(\d+(\.\d{1,18})?)?$/, { expected: "a decimal amount of network tokens, or \"\"" })
)

export const ExpiresInDays = Schema.Int.check(
  Schema.isBetween({ minimum: MIN_EXPIRES_IN_DAYS, maximum: MAX_EXPIRES_IN_DAYS }, {
    expected: `a whole number of days from ${MIN_EXPIRES_IN_DAYS} to ${MAX_EXPIRES_IN_DAYS}`
  })
)

const NonNegativeCredits = CreditAmount.check(
  Schema.isGreaterThanOrEqualTo(0, { expected: "a number of credits of at least 0" })
)

/** `did:svc:machine:<owner_id>:<agent_id>`. */
export const AgentDid = Schema.String.check(
  Schema.isPattern(/^did:svc:machine:[^:\s]+:[^:\s]+$/, { expected: "a DID of the form did:svc:machine:<owner_id>:<agent_id>" })
)

// ---- Resource -----------------------------------------------------------------------------

/** A step waiting for the owner's passkey. */
export const AgentApproval = Schema.Struct({
  kind: ApprovalKind,
  state: ApprovalState,
  approve_url: Schema.String
})
export type AgentApproval = typeof AgentApproval.Type

/** The approved values in force. Token caps in network-token units, null when unset. */
export const AgentLimits = Schema.Struct({
  max_transaction_token: Schema.NullOr(TokenAmount),
  max_daily_token: Schema.NullOr(TokenAmount),
  daily_limit_credits: Schema.NullOr(CreditAmount),
  total_limit_credits: Schema.NullOr(CreditAmount),
  expires_in_days: Schema.Int
})
export type AgentLimits = typeof AgentLimits.Type

/** A proposal awaiting approval. Token caps are "" when unset. */
export const AgentProposed = Schema.Struct({
  agent_name: Schema.String,
  capabilities: Schema.Array(Capability),
  max_transaction_token: TokenAmountOrEmpty,
  max_daily_token: TokenAmountOrEmpty,
  daily_limit_credits: Schema.NullOr(CreditAmount),
  total_limit_credits: Schema.NullOr(CreditAmount),
  expires_in_days: Schema.Int
})
export type AgentProposed = typeof AgentProposed.Type

export const AgentSpend = Schema.Struct({
  today_credits: CreditAmount,
  total_credits: CreditAmount
})
export type AgentSpend = typeof AgentSpend.Type

export const Agent = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  status: AgentStatus,
  approval: Schema.NullOr(AgentApproval),
  capabilities: Schema.Array(Capability),
  limits: Schema.NullOr(AgentLimits),
  proposed: Schema.NullOr(AgentProposed),
  did: Schema.NullOr(AgentDid),
  wallet_address: Schema.NullOr(Schema.String),
  serving: Schema.Struct({ nodes: Schema.Int, operators: Schema.Int }),
  error: Schema.NullOr(Schema.String),
  created_at: Timestamp,
  approved_at: Schema.NullOr(Timestamp),
  activated_at: Schema.NullOr(Timestamp),
  expires_at: Schema.NullOr(Timestamp),
  revoked_at: Schema.NullOr(Timestamp),
  /** Only on GET /agents/{id}. */
  spend: Schema.optionalKey(AgentSpend),
  /** Only on GET /agents/{id}: whether the platform holds the agent's network key. */
  network_key_held: Schema.optionalKey(Schema.Boolean)
})
export type Agent = typeof Agent.Type

export const AgentList = Schema.Struct({ data: Schema.Array(Agent) })
export type AgentList = typeof AgentList.Type

/** POST /agents, POST /agents/{id}/settings and POST /agents/{id}/revoke. */
export const AgentProposalResponse = Schema.Struct({
  approve_url: Schema.String,
  agent: Agent
})
export type AgentProposalResponse = typeof AgentProposalResponse.Type

// ---- Bodies -------------------------------------------------------------------------------

/**
 * The settings a proposal may carry. null clears a cap or limit; "" clears a token cap too (so the
 * proposed values can be sent back as they are shown).
 */
const settingsFields = {
  capabilities: Schema.optionalKey(
    Schema.Array(Capability).check(
      Schema.isNonEmpty({ expected: "at least one capability" }),
      Schema.isUnique({ expected: "capabilities without repeats" })
    )
  ),
  max_transaction_token: Schema.optionalKey(Schema.NullOr(TokenAmountOrEmpty)),
  max_daily_token: Schema.optionalKey(Schema.NullOr(TokenAmountOrEmpty)),
  daily_limit_credits: Schema.optionalKey(Schema.NullOr(NonNegativeCredits)),
  total_limit_credits: Schema.optionalKey(Schema.NullOr(NonNegativeCredits)),
  expires_in_days: Schema.optionalKey(ExpiresInDays)
}

/** POST /agents. capabilities default to [inference], expires_in_days to DEFAULT_EXPIRES_IN_DAYS. */
export const CreateAgent = Schema.Struct({
  name: AgentName,
  ...settingsFields
})
export type CreateAgent = typeof CreateAgent.Type

/**
 * POST /agents/{id}/settings: omitted fields keep their approved values, at least one is needed.
 * The name cannot change: a body that sends one is refused rather than half-applied.
 */
export const AgentSettings = Schema.Struct({
  name: Schema.optionalKey(Schema.Never.annotate({ message: "an agent's name cannot change" })),
  ...settingsFields
}).check(
  // minProperties (not a bare predicate): the OpenAPI document says so too, and tools reading it
  // (the test suites' minimal bodies) send a setting.
  Schema.isMinProperties(1, { message: "at least one setting to change is required" })
)
export type AgentSettings = typeof AgentSettings.Type

/** Every permission but manage: agent keys never hold it. */
export const AgentKeyPermissionValues = PermissionValues.filter(
  (p): p is Exclude<Permission, "manage"> => p !== "manage"
)
export const AgentKeyPermission = Schema.Literals(AgentKeyPermissionValues).annotate({
  expected: "a permission an agent key may hold (any but manage)"
})
export type AgentKeyPermission = typeof AgentKeyPermission.Type

/** POST /agents/{id}/keys. permissions default to [inference]. */
export const CreateAgentKey = Schema.Struct({
  name: Schema.String.check(Schema.isBetweenLength(1, 128, { expected: "a name of 1 to 128 characters" })),
  machine_id: Schema.optionalKey(
    Schema.NullOr(Schema.String.check(Schema.isNonEmpty({ expected: "a non-empty id" })))
  ),
  permissions: Schema.optionalKey(Schema.Array(AgentKeyPermission))
})
export type CreateAgentKey = typeof CreateAgentKey.Type
