/**
 * An agent approval as the account service keeps it (docs/agents.md "Approvals"): what the
 * platform asked the owner to approve (create, update or revoke an agent), its state, and what the
 * network answered once the owner approved with a passkey. Declared once, as this Schema; the
 * stores keep its encoded form (kernel/Documents.ts).
 *
 * The agent-scoped network key is not here: the account service keeps no copy. It is issued by
 * the network when the approved result is handed over (once), and only the platform holds it.
 */
import { Schema } from "effect"
import { AgentSettingsRecord } from "../agents/Records.ts"
import { ApprovalKind, ApprovalState } from "../agents/Schemas.ts"
import type { DocumentKind } from "../kernel/Documents.ts"
import { Timestamp } from "../kernel/Time.ts"

/** A node of the network serving agents: where an agent's calls may go. */
export const ServingNode = Schema.Struct({
  machine_did: Schema.String,
  operator_did: Schema.String,
  /** The node's DPoP key thumbprint, as the network registered it (absent before approval). */
  dpop_jkt: Schema.NullOr(Schema.String)
})
export type ServingNode = typeof ServingNode.Type

/** What the network holds for an approved create or update. */
export const ApprovedNetwork = Schema.Struct({
  identity: Schema.Struct({ did: Schema.String, controller_did: Schema.String }),
  wallet: Schema.Struct({ address: Schema.String }),
  serving_nodes: Schema.Array(ServingNode)
})
export type ApprovedNetwork = typeof ApprovedNetwork.Type

export const ApprovalRecord = Schema.Struct({
  id: Schema.String,
  /** The person (the owner) who must approve: the account service's `sub`. */
  sub: Schema.String,
  kind: ApprovalKind,
  state: ApprovalState,
  /** The agent's name (create, update; for revoke the name it had). */
  agent_name: Schema.String,
  /** The agent's DID: given for update and revoke, minted at approval for create. */
  agent_did: Schema.NullOr(Schema.String),
  /** The settings asked for (create, update); null for revoke. Caps in wei, limits in micro-credits. */
  settings: Schema.NullOr(AgentSettingsRecord),
  /** The nodes the platform proposed (create, update). */
  serving_nodes: Schema.Array(ServingNode),
  /** Where the page sends the owner back to (create). */
  return_to: Schema.NullOr(Schema.String),
  created_at: Timestamp,
  /** The link's end: created_at + 30 minutes (the spec's "approval link valid 30 minutes"). */
  expires_at: Timestamp,
  approved_at: Schema.NullOr(Timestamp),
  /** Handed over to the platform (the approved result is read once). */
  collected_at: Schema.NullOr(Timestamp),
  /** What the network answered at approval (create, update). */
  network: Schema.NullOr(ApprovedNetwork),
  /** Why it failed (the network's refusal, as it is). */
  error: Schema.NullOr(Schema.String),
  version: Schema.Int
})
export type ApprovalRecord = typeof ApprovalRecord.Type

const encode = Schema.encodeUnknownSync(ApprovalRecord)
const decode = Schema.decodeUnknownOption(ApprovalRecord)

/** Approvals as documents (kernel/Documents.ts), owned by the person who approves them. */
export const ApprovalDocuments: DocumentKind<ApprovalRecord> = {
  kind: "approval",
  owner: (r) => r.sub,
  encode: (r) => encode(r),
  decode: (stored) => {
    const decoded = decode(stored)
    return decoded._tag === "Some" ? decoded.value : undefined
  }
}
