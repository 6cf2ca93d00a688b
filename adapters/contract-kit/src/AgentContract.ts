/**
 * Agents in the document store contract (DocumentContract.ts): `makeAgent`, a record with every
 * field set, and `AgentDocumentsContract`, the kind as the contract exercises it. Every shell runs
 * it beside the approvals: `documentStoresContract("memory", stores, [AgentDocumentsContract,
 * ApprovalDocumentsContract])`; `agentStoreContract` runs the agents alone.
 */
import type { AgentRecord } from "@model-platform/core/agents"
import { AgentDocuments, AgentStore } from "@model-platform/core/agents"
import { generateId } from "@model-platform/core/kernel"
import { Effect, type Layer } from "effect"
import { type DocumentContractKind, documentStoreContract } from "./DocumentContract.ts"
import { at } from "./SampleRecords.ts"

/** An agent with every field set, amounts beyond 2^64 (wei) and text beyond ASCII. */
export const makeAgent = Effect.fnUntraced(function*(accountId: string, overrides: Partial<AgentRecord> = {}) {
  const record: AgentRecord = {
    id: yield* generateId("agt"),
    account_id: accountId,
    name: "research.bot-1",
    status: "active",
    settings: {
      capabilities: ["inference", "payments"],
      max_transaction_wei: 123_456_789_012_345_678_901_234n,
      max_daily_wei: null,
      daily_limit: 5_000_000n,
      total_limit: 9_223_372_036_854_775_807n,
      expires_in_days: 30
    },
    approval: {
      id: "apr_1",
      kind: "update",
      state: "pending",
      approve_url: "https://accounts.test/approve/apr_1?ü",
      expires_at: at(30 * 60_000),
      settings: { capabilities: ["inference"], max_transaction_wei: null, max_daily_wei: 1n, daily_limit: null, total_limit: 0n, expires_in_days: 3650 }
    },
    did: "did:svc:machine:acct:agt",
    wallet_address: "0xabc",
    serving: { nodes: 2, operators: 1 },
    error: null,
    created_at: at(0),
    approved_at: at(1),
    activated_at: at(2),
    expires_at: at(30 * 86_400_000),
    revoked_at: null,
    version: 0,
    ...overrides
  }
  return record
})

/** Agents as the document store contract exercises them. */
export const AgentDocumentsContract: DocumentContractKind<AgentStore, AgentRecord> = {
  tag: AgentStore,
  kind: AgentDocuments,
  make: makeAgent,
  sparse: {
    status: "awaiting_approval",
    settings: null,
    approval: null,
    did: null,
    wallet_address: null,
    approved_at: null,
    activated_at: null,
    expires_at: null,
    error: "refused ✓"
  },
  mark: (record, text) => ({ ...record, name: text })
}

/** Declares the agent store contract on `storeLayer` (built once for the suite). */
export const agentStoreContract = <E>(name: string, storeLayer: Layer.Layer<AgentStore, E>): void =>
  documentStoreContract(name, storeLayer, AgentDocumentsContract)
