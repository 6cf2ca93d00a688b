/**
 * Port: where agents are kept (core/src/agents/Records.ts is the record, its one declaration): a
 * document store (kernel/Documents.ts) of kind "agent" (`AgentDocuments`), listed by account. The
 * rules (the agent state machine, approvals, limits) live in core/src/agents/; a store applies
 * what it is given. A record moves only by `swap`, a compare-and-set on its version, so two
 * processes that read the same version cannot both write (ATOMIC, between processes too): the
 * loser reads again and decides again. Input `documentProblem(AgentDocuments, …)` refuses, a
 * duplicate id and a stored record that does not decode are defects.
 */
import { Context } from "effect"
import type { AgentRecord } from "./Records.ts"
import type { DocumentStore } from "../kernel/Documents.ts"

export class AgentStore extends Context.Service<AgentStore, DocumentStore<AgentRecord>>()(
  "@model-platform/core/agents/AgentStore"
) {}
