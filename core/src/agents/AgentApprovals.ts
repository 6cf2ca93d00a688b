/**
 * Port: the account service's agent approvals, as the platform reaches them (docs/agents.md
 * "Approvals"). The platform asks the owner (`sub`, the person behind the account) to approve a
 * create, update or revoke, and reads the outcome; an approved result is handed over once (a
 * second read answers collected). The shells implement it over real HTTP
 * (`{accounts_url}/api/accounts/{sub}/agent-approvals`, authenticated as the platform's client).
 *
 * `ApprovalsUnavailable`: no answer now (the service down, a timeout, an answer that is not the
 * API's); the caller says "try again later" and changes nothing.
 */
import { Context, type Effect, Schema } from "effect"
import type { ApprovalResultWire, CreateApprovalWire, CreatedApprovalWire } from "./ApprovalWire.ts"

export class ApprovalsUnavailable extends Schema.TaggedError<ApprovalsUnavailable>()("ApprovalsUnavailable", {
  reason: Schema.String
}) {}

export class AgentApprovals extends Context.Service<AgentApprovals, {
  readonly create: (sub: string, request: CreateApprovalWire) => Effect.Effect<CreatedApprovalWire, ApprovalsUnavailable>
  readonly read: (sub: string, approvalId: string) => Effect.Effect<ApprovalResultWire, ApprovalsUnavailable>
}>()("@model-platform/core/agents/AgentApprovals") {}
