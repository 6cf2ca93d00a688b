/**
 * An agent as the platform keeps it (agents/AgentStore.ts): the approved settings in force, the
 * approval waiting at the account service (at most one), what the network answered, and the
 * times of its life. The record is written once, as this Schema: every store keeps its encoded
 * form (JSON: amounts as decimal strings) beside a few columns it looks records up by, and reads
 * it back through it (`encodeAgent`, `decodeAgent`), so its shape is declared here only.
 *
 * Credit limits are micro-credits; network-token caps are wei (1 token = 10^18 wei), both exact
 * integers. How the API shows a record is agents/ (docs/resources.md "Agents").
 */
import { Schema } from "effect"
import type { DocumentKind } from "../kernel/Documents.ts"
import { IdString } from "../kernel/Ids.ts"
import { Timestamp } from "../kernel/Time.ts"
import { AgentStatus, ApprovalKind, ApprovalState, Capability } from "./Schemas.ts"

/** A non-negative integer kept as a decimal string (micro-credits, wei). */
const StoredAmount = Schema.BigIntFromString.check(
  Schema.isGreaterThanOrEqualToBigInt(0n, { expected: "a non-negative integer amount" })
)

/** Settings of an agent: the approved ones in force, or those an approval asks for. */
export const AgentSettingsRecord = Schema.Struct({
  capabilities: Schema.Array(Capability),
  /** Network caps in wei; null when unset. */
  max_transaction_wei: Schema.NullOr(StoredAmount),
  max_daily_wei: Schema.NullOr(StoredAmount),
  /** Credit limits in micro-credits: per UTC day and in total; null when unset. */
  daily_limit: Schema.NullOr(StoredAmount),
  total_limit: Schema.NullOr(StoredAmount),
  expires_in_days: Schema.Int
})
export type AgentSettingsRecord = typeof AgentSettingsRecord.Type

/** A step waiting for (or done by) the owner's passkey at the account service. */
export const AgentApprovalRecord = Schema.Struct({
  /** The approval's id at the account service. */
  id: Schema.String,
  kind: ApprovalKind,
  state: ApprovalState,
  approve_url: Schema.String,
  /** When the link stops working (the spec: 30 minutes). */
  expires_at: Timestamp,
  /** What it asks for (create, update); null for revoke. */
  settings: Schema.NullOr(AgentSettingsRecord)
})
export type AgentApprovalRecord = typeof AgentApprovalRecord.Type

export const AgentRecord = Schema.Struct({
  id: IdString<"agent">(),
  account_id: IdString<"account">(),
  name: Schema.String,
  status: AgentStatus,
  /** The approved settings in force; null until the first approval. */
  settings: Schema.NullOr(AgentSettingsRecord),
  /** The approval waiting, or the last one. */
  approval: Schema.NullOr(AgentApprovalRecord),
  did: Schema.NullOr(Schema.String),
  wallet_address: Schema.NullOr(Schema.String),
  serving: Schema.Struct({ nodes: Schema.Int, operators: Schema.Int }),
  error: Schema.NullOr(Schema.String),
  created_at: Timestamp,
  approved_at: Schema.NullOr(Timestamp),
  activated_at: Schema.NullOr(Timestamp),
  /** When the delegation ends: activated_at + expires_in_days. */
  expires_at: Schema.NullOr(Timestamp),
  revoked_at: Schema.NullOr(Timestamp),
  /**
   * Whether an approved step handed the platform the agent's network key (the account service
   * keeps no copy). Only that it did is kept: the key itself is a secret and is never stored in
   * clear (docs/agents.md "Collecting approvals"). Absent: no.
   */
  network_key_held: Schema.optionalKey(Schema.Boolean),
  /** Bumped by every write: a store swaps a record only from the version it was read at. */
  version: Schema.Int
})
export type AgentRecord = typeof AgentRecord.Type

const encode = Schema.encodeUnknownSync(AgentRecord)
const decode = Schema.decodeUnknownOption(AgentRecord)

/** The stored form of a record (JSON-safe: amounts as strings). */
export const encodeAgent = (record: AgentRecord): unknown => encode(record)

/** A stored form read back, or undefined when it is not one (a store treats that as a defect). */
export const decodeAgent = (stored: unknown): AgentRecord | undefined => {
  const decoded = decode(stored)
  return decoded._tag === "Some" ? decoded.value : undefined
}

/** Agents as documents (kernel/Documents.ts), owned by their account. */
export const AgentDocuments: DocumentKind<AgentRecord> = {
  kind: "agent",
  owner: (r) => r.account_id,
  encode: encodeAgent,
  decode: decodeAgent
}
