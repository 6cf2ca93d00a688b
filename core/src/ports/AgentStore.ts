/**
 * Port: where agents are kept (core/src/agents/Records.ts is the record, its one declaration).
 * The rules (the agent state machine, approvals, limits) live in core/src/agents/; a store applies
 * what it is given. A record moves only by `swap`, a compare-and-set on its version, so two
 * processes that read the same version cannot both write (ATOMIC, between processes too): the
 * loser reads again and decides again. Stores keep the encoded record (`encodeAgent`) and read
 * it back with `decodeAgent`; a stored record that does not decode, a duplicate id and other
 * broken input (`agentProblem`) are defects.
 */
import { Context, type Effect } from "effect"
import type { AgentRecord } from "../agents/Records.ts"

export class AgentStore extends Context.Service<AgentStore, {
  /** Stores a new agent (version 0). */
  readonly insert: (record: AgentRecord) => Effect.Effect<void>
  /** The agent, if any (of any account: callers check the account). */
  readonly get: (id: string) => Effect.Effect<AgentRecord | undefined>
  /** The account's agents, newest first (equal created_at: by id). */
  readonly list: (accountId: string) => Effect.Effect<ReadonlyArray<AgentRecord>>
  /**
   * ATOMIC compare-and-set: replaces the agent with `next` (whose version is the stored one + 1)
   * only while the stored version is `next.version - 1` and the stored agent is of
   * `next.account_id`; answers whether it did.
   */
  readonly swap: (next: AgentRecord) => Effect.Effect<boolean>
}>()("@model-platform/core/ports/AgentStore") {}

/** Why a store must refuse this record (insert: version 0; swap: version >= 1), or undefined. */
export const agentProblem = (r: AgentRecord, op: "insert" | "swap"): string | undefined =>
  r.id.length === 0 || r.account_id.length === 0
    ? "ids must be non-empty"
    : op === "insert" && r.version !== 0
    ? `a new agent has version 0, got ${r.version}`
    : op === "swap" && r.version < 1
    ? `a swapped agent has version >= 1, got ${r.version}`
    : undefined
