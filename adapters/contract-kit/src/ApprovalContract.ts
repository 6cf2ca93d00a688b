/**
 * Approvals in the document store contract (DocumentContract.ts): `makeApproval`, a record with
 * every field set, and `ApprovalDocumentsContract`, the kind as the contract exercises it.
 */
import { ApprovalDocuments, type ApprovalRecord, ApprovalStore } from "@model-platform/core/accounts"
import { generateId } from "@model-platform/core/kernel"
import { Effect } from "effect"
import { type DocumentContractKind } from "./DocumentContract.ts"
import { at } from "./SampleRecords.ts"

/** An approval of `sub` with every field set, amounts beyond 2^64 (wei) and text beyond ASCII. */
export const makeApproval = Effect.fnUntraced(function*(sub: string, overrides: Partial<ApprovalRecord> = {}) {
  const record: ApprovalRecord = {
    id: yield* generateId("apr"),
    sub,
    kind: "create",
    state: "approved",
    agent_name: "Forschungs-Agent ü — 研究 🤖",
    agent_did: "did:svc:agent:7f3a",
    settings: {
      capabilities: ["inference", "payments"],
      max_transaction_wei: 123_456_789_012_345_678_901_234n,
      max_daily_wei: 18_446_744_073_709_551_617n,
      daily_limit: 5_000_000n,
      total_limit: 0n,
      expires_in_days: 365
    },
    serving_nodes: [
      { machine_did: "did:svc:machine:eu-gpu-1", operator_did: "did:svc:operator:ä", dpop_jkt: "jkt-1" },
      { machine_did: "did:svc:machine:us-gpu-1", operator_did: "did:svc:operator:b", dpop_jkt: null }
    ],
    return_to: "https://platform.test/agents?name=ü&x=1",
    created_at: at(0),
    expires_at: at(30 * 60_000),
    approved_at: at(60_000),
    collected_at: at(61_000),
    network: {
      identity: { did: "did:svc:agent:7f3a", controller_did: "did:svc:person:ö" },
      wallet: { address: "0xAbC0000000000000000000000000000000000001" },
      serving_nodes: [{ machine_did: "did:svc:machine:eu-gpu-1", operator_did: "did:svc:operator:ä", dpop_jkt: "jkt-1" }]
    },
    error: "the network said « non » first",
    version: 0,
    ...overrides
  }
  return record
})

/** Approvals as the document store contract exercises them. */
export const ApprovalDocumentsContract: DocumentContractKind<ApprovalStore, ApprovalRecord> = {
  tag: ApprovalStore,
  kind: ApprovalDocuments,
  make: makeApproval,
  sparse: {
    kind: "revoke",
    state: "pending",
    agent_did: null,
    settings: null,
    serving_nodes: [],
    return_to: null,
    approved_at: null,
    collected_at: null,
    network: null,
    error: null,
    agent_name: "ünnamed ✓"
  },
  mark: (record, text) => ({ ...record, agent_name: text })
}
