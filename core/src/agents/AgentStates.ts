/**
 * An agent's states and the moves between them (docs/agents.md "States"), as one pure function
 * every use-case goes through; the spec's table ("Agent status", "Approval state") is the source:
 *
 *   (none)             --propose-->             awaiting_approval  approval {create, pending}
 *   awaiting_approval  --collected (create)-->  active             the approved settings in force
 *   awaiting_approval  --refused-->             failed             the network's reason kept
 *   awaiting_approval  --link_expired-->        expired            start again with a new proposal
 *   active             --propose_update-->      active             approval {update, pending}: one at a time
 *   active             --propose_revoke-->      active             approval {revoke, pending} (replaces a pending update)
 *   active             --collected (update)-->  active             the approved settings replace the old
 *   active             --collected (revoke)-->  revoked            every key of the agent stops working
 *   active             --link_expired / refused (update, revoke)-->  active, the old settings in force
 *   active             --delegation_ends-->     expired            its keys are refused (agent_expired)
 *
 * revoked, expired and failed are final: nothing moves them, so a revoked or expired agent's keys
 * never authorise a call again, whatever the interleaving.
 */
import type { AgentStatus, ApprovalKind } from "./Schemas.ts"

/** What the machine looks at: the status and the approval waiting, if any. */
export interface AgentState {
  readonly status: AgentStatus
  /** The kind of the approval waiting (state pending), or null. */
  readonly pending: ApprovalKind | null
}

export type AgentEvent =
  | "propose_update"
  | "propose_revoke"
  /** The owner's approval of the pending step was collected. */
  | "collected"
  /** The pending step's link expired unused. */
  | "link_expired"
  /** The network refused the pending step. */
  | "refused"
  /** The delegation's expires_at has passed. */
  | "delegation_ends"

export type AgentMove =
  | { readonly _tag: "Moved"; readonly state: AgentState }
  | { readonly _tag: "Refused"; readonly reason: "final" | "not_active" | "change_pending" | "nothing_pending" }

/** A proposed agent: awaiting the owner's approval of its creation. */
export const proposedState: AgentState = { status: "awaiting_approval", pending: "create" }

const FINAL: ReadonlySet<AgentStatus> = new Set(["revoked", "expired", "failed"])

const moved = (state: AgentState): AgentMove => ({ _tag: "Moved", state })

/** The one transition function of agents. */
export const applyAgentEvent = (state: AgentState, event: AgentEvent): AgentMove => {
  if (FINAL.has(state.status)) return { _tag: "Refused", reason: "final" }
  switch (event) {
    case "propose_update":
      if (state.status !== "active") return { _tag: "Refused", reason: "not_active" }
      if (state.pending !== null) return { _tag: "Refused", reason: "change_pending" }
      return moved({ status: "active", pending: "update" })
    case "propose_revoke":
      if (state.status !== "active") return { _tag: "Refused", reason: "not_active" }
      if (state.pending === "revoke") return { _tag: "Refused", reason: "change_pending" }
      return moved({ status: "active", pending: "revoke" })
    case "collected":
      if (state.pending === null) return { _tag: "Refused", reason: "nothing_pending" }
      return moved({ status: state.pending === "revoke" ? "revoked" : "active", pending: null })
    case "link_expired":
    case "refused":
      if (state.pending === null) return { _tag: "Refused", reason: "nothing_pending" }
      if (state.pending === "create") return moved({ status: event === "refused" ? "failed" : "expired", pending: null })
      return moved({ status: "active", pending: null })
    case "delegation_ends":
      if (state.status !== "active") return { _tag: "Refused", reason: "not_active" }
      return moved({ status: "expired", pending: null })
  }
}

/** Whether a key of an agent in `state` may call at all (its limits aside). */
export const authorises = (state: AgentState): boolean => state.status === "active"
