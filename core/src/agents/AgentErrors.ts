/**
 * The refusals of the agents area (docs/architecture.md "Errors"). A reason is the spec's error
 * code; http/Refusals.ts maps every reason to its status.
 */
import { Schema } from "effect"
import { refusalFields, type RefusalOf } from "../kernel/Refusal.ts"

export const AgentErrorReasons = [
  /** No agent of the caller's account has this id. */
  "agent_not_found",
  /** The agent is not active (pending, revoked...): it cannot be changed, revoked or given keys. */
  "agent_not_active",
  /** A change already waits for the owner's approval. */
  "change_pending",
  /** The account has no passkey, and only a passkey approves an agent. */
  "passkey_required",
  /** The account has no ready identity on the network to own agents. */
  "identity_not_ready",
  /** No node of the network serves agents now. */
  "no_serving_nodes",
  /** The account service (approvals) or the network cannot be reached now. */
  "approvals_unavailable",
  /** A key may grant only the permissions it holds (`scope`: the first one it lacks). */
  "key_lacks_permission",
  /** A key pinned to a machine makes agent keys pinned to it only. */
  "key_not_scoped_to_machine",
  /** An agent key's machine is not in the catalogue. */
  "machine_not_found"
] as const
export type AgentErrorReason = (typeof AgentErrorReasons)[number]

/** A refusal of `Agents`; `scope` names what a key lacks (key_lacks_permission). */
export class AgentError extends Schema.TaggedError<AgentError>()("AgentError", {
  ...refusalFields(AgentErrorReasons),
  scope: Schema.optionalKey(Schema.String)
}) {
  static readonly reasons = AgentErrorReasons
}

export type AgentErrorOf<R extends AgentErrorReason> = RefusalOf<AgentError, R>

export const agentError = <R extends AgentErrorReason>(reason: R, message: string, scope?: string): AgentErrorOf<R> =>
  new AgentError(scope === undefined ? { reason, message } : { reason, message, scope }) as AgentErrorOf<R>
