/**
 * Port: where the account service keeps agent approvals (accounts/ApprovalRecords.ts is the
 * record): a document store (kernel/Documents.ts) of kind "approval", listed by the person who
 * approves them.
 */
import { Context } from "effect"
import type { ApprovalRecord } from "./ApprovalRecords.ts"
import type { DocumentStore } from "../kernel/Documents.ts"

export class ApprovalStore extends Context.Service<ApprovalStore, DocumentStore<ApprovalRecord>>()(
  "@model-platform/core/accounts/ApprovalStore"
) {}
