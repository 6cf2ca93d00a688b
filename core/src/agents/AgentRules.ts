/**
 * Agents, the rules the use-cases (Agents.ts) apply, pure: a record's state for the state machine
 * (AgentStates.ts), settings from a proposal or a change, an approval's answer applied to a record
 * (docs/agents.md "Collecting approvals"), a delegation's end, and the API's view of a record.
 */
import { microToCredits } from "../kernel/Money.ts"
import * as Time from "../kernel/Time.ts"
import {
  approvedCreditLimitToMicro,
  creditLimitToMicro,
  microToCreditLimit,
  tokenCapToWei,
  weiFromWire,
  weiToProposedCap,
  weiToTokenCap
} from "./Amounts.ts"
import { type AgentEvent, type AgentMove, type AgentState, applyAgentEvent } from "./AgentStates.ts"
import { type ApprovalResultWire, type ApprovalSettingsWire, type ApprovedSettingsWire } from "./ApprovalWire.ts"
import type { AgentApprovalRecord, AgentRecord, AgentSettingsRecord } from "./Records.ts"
import {
  type Agent,
  type AgentSettings,
  type CreateAgent,
  DEFAULT_CAPABILITIES,
  DEFAULT_EXPIRES_IN_DAYS
} from "./Schemas.ts"

const MINUTE_MS = 60_000
const DAY_MS = 24 * 60 * MINUTE_MS

// ---- rules -----------------------------------------------------------------------------------

/** What the state machine looks at in a record: its status and the kind of the approval waiting. */
export const stateOf = (record: AgentRecord): AgentState => ({
  status: record.status,
  pending: record.approval !== null && record.approval.state === "pending" ? record.approval.kind : null
})

/** The settings a proposal (POST /agents) asks for, with the defaults filled in. */
export const settingsOfProposal = (body: CreateAgent): AgentSettingsRecord => ({
  capabilities: body.capabilities ?? DEFAULT_CAPABILITIES,
  max_transaction_wei: tokenCapToWei(body.max_transaction_token ?? null),
  max_daily_wei: tokenCapToWei(body.max_daily_token ?? null),
  daily_limit: creditLimitToMicro(body.daily_limit_credits ?? null),
  total_limit: creditLimitToMicro(body.total_limit_credits ?? null),
  expires_in_days: body.expires_in_days ?? DEFAULT_EXPIRES_IN_DAYS
})

/** A settings body over the approved settings: an omitted field keeps its value, null (or "") clears it. */
export const mergeSettings = (approved: AgentSettingsRecord, body: AgentSettings): AgentSettingsRecord => ({
  capabilities: body.capabilities ?? approved.capabilities,
  max_transaction_wei: body.max_transaction_token === undefined ? approved.max_transaction_wei : tokenCapToWei(body.max_transaction_token),
  max_daily_wei: body.max_daily_token === undefined ? approved.max_daily_wei : tokenCapToWei(body.max_daily_token),
  daily_limit: body.daily_limit_credits === undefined ? approved.daily_limit : creditLimitToMicro(body.daily_limit_credits),
  total_limit: body.total_limit_credits === undefined ? approved.total_limit : creditLimitToMicro(body.total_limit_credits),
  expires_in_days: body.expires_in_days ?? approved.expires_in_days
})

/** Settings as the account service is asked to show them (token caps "" when unset). */
export const settingsToWire = (name: string, settings: AgentSettingsRecord): ApprovalSettingsWire => ({
  agent_name: name,
  capabilities: settings.capabilities,
  max_transaction_token: weiToProposedCap(settings.max_transaction_wei),
  max_daily_token: weiToProposedCap(settings.max_daily_wei),
  daily_limit_credits: microToCreditLimit(settings.daily_limit),
  total_limit_credits: microToCreditLimit(settings.total_limit),
  expires_in_days: settings.expires_in_days
})

/** The settings the owner signed, as the approved answer carries them (caps in wei), kept exactly. */
export const settingsFromApproved = (approved: ApprovedSettingsWire): AgentSettingsRecord => ({
  capabilities: approved.capabilities,
  max_transaction_wei: weiFromWire(approved.max_transaction_value),
  max_daily_wei: weiFromWire(approved.max_daily_spend),
  daily_limit: approvedCreditLimitToMicro(approved.daily_limit_credits),
  total_limit: approvedCreditLimitToMicro(approved.total_limit_credits),
  expires_in_days: approved.expires_in_days
})

/** The event an answer of the account service is for the pending step, or undefined (nothing to do). */
const eventOf = (answer: ApprovalResultWire): AgentEvent | undefined =>
  answer.state === "approved" || answer.state === "collected"
    ? "collected"
    : answer.state === "expired"
    ? "link_expired"
    : answer.state === "failed"
    ? "refused"
    : undefined

/**
 * The record once the answer about its pending approval `approvalId` is applied at `now`, or
 * undefined when there is nothing to apply (that approval no longer waits, the answer changes
 * nothing, or the machine refuses the move).
 *
 * - approved, create: active; the approved settings replace the proposed ones; did, wallet and
 *   the serving nodes and operators counted; approved_at = activated_at = now; expires_at = now +
 *   expires_in_days.
 * - approved, update: the approved settings replace the ones in force; expires_at = activated_at
 *   + the approved expires_in_days.
 * - approved, revoke: revoked, revoked_at = now.
 * - expired: a create's agent is expired; an update or revoke lapses, the agent unchanged.
 * - failed: a create's agent is failed; an update or revoke lapses; either way `error` holds the
 *   network's reason as it is.
 * - collected: the step was approved and its result handed to a process that never wrote it (the
 *   caller passes this answer only once that is certain: "Collecting approvals"): applied as
 *   approved with what is known without the result: the settings asked for, the DID, no wallet
 *   (create), the serving nodes and the network key as they were.
 * An approved step clears `error`, and records whether it handed over the network key.
 */
export const applyApprovalAnswer = (
  record: AgentRecord,
  approvalId: string,
  answer: ApprovalResultWire,
  now: number
): AgentRecord | undefined => {
  const approval = record.approval
  if (approval === null || approval.id !== approvalId || approval.state !== "pending") return undefined
  const event = eventOf(answer)
  if (event === undefined) return undefined
  const move: AgentMove = applyAgentEvent(stateOf(record), event)
  if (move._tag === "Refused") return undefined
  const at = Time.toTimestamp(now)
  const base = { ...record, status: move.state.status, version: record.version + 1 }
  if (answer.state === "expired") return { ...base, approval: { ...approval, state: "expired" } }
  if (answer.state === "failed") return { ...base, approval: { ...approval, state: "failed" }, error: answer.error }
  if (answer.state !== "approved" && answer.state !== "collected") return undefined
  const collected: AgentApprovalRecord = { ...approval, state: "collected" }
  const known = answer.state === "approved"
    ? {
      did: answer.agent_did,
      wallet: answer.network.wallet.address,
      nodes: answer.network.serving_nodes,
      settings: answer.settings === null ? approval.settings ?? record.settings : settingsFromApproved(answer.settings),
      keyHeld: record.network_key_held === true || answer.network.api_key !== null
    }
    : {
      did: answer.agent_did,
      wallet: null,
      nodes: [],
      settings: approval.settings ?? record.settings,
      keyHeld: record.network_key_held === true
    }
  if (approval.kind === "revoke") {
    return { ...base, approval: collected, error: null, revoked_at: at, network_key_held: known.keyHeld }
  }
  const settings = known.settings
  if (settings === null) return undefined
  const serving = known.nodes.length === 0
    ? record.serving
    : { nodes: known.nodes.length, operators: new Set(known.nodes.map((n) => n.operator_did)).size }
  if (approval.kind === "create") {
    return {
      ...base,
      approval: collected,
      settings,
      did: known.did,
      wallet_address: known.wallet,
      serving,
      error: null,
      approved_at: at,
      activated_at: at,
      expires_at: Time.toTimestamp(now + settings.expires_in_days * DAY_MS),
      network_key_held: known.keyHeld
    }
  }
  const activated = record.activated_at === null ? now : Date.parse(record.activated_at)
  return {
    ...base,
    approval: collected,
    settings,
    serving,
    error: null,
    approved_at: at,
    expires_at: Time.toTimestamp(activated + settings.expires_in_days * DAY_MS),
    network_key_held: known.keyHeld
  }
}

/** Whether an active agent's delegation has ended at `now` (its expires_at passed). */
export const delegationEnded = (record: AgentRecord, now: number): boolean =>
  record.status === "active" && record.expires_at !== null && now >= Date.parse(record.expires_at)

/**
 * The record once its delegation has ended: expired; an approval still waiting lapses with it
 * (recorded as expired, so nothing waits on a final agent). Undefined when it has not ended.
 */
export const endDelegation = (record: AgentRecord, now: number): AgentRecord | undefined => {
  if (!delegationEnded(record, now)) return undefined
  const move = applyAgentEvent(stateOf(record), "delegation_ends")
  if (move._tag === "Refused") return undefined
  const approval = record.approval !== null && record.approval.state === "pending"
    ? { ...record.approval, state: "expired" as const }
    : record.approval
  return { ...record, status: move.state.status, approval, version: record.version + 1 }
}

/**
 * An agent as the API shows it at `now`. An active agent whose delegation has ended shows expired
 * even before that is written. `detail`: GET /agents/{id}'s spend and network_key_held.
 */
export const agentView = (
  record: AgentRecord,
  now: number,
  detail?: { readonly spend: { readonly today: bigint; readonly total: bigint } }
): Agent => {
  const pending = record.approval !== null && record.approval.state === "pending" ? record.approval : null
  const status = delegationEnded(record, now) ? "expired" : record.status
  const settings = record.settings
  const proposed = pending?.settings ?? null
  const view: Agent = {
    id: record.id,
    name: record.name,
    status,
    approval: pending === null || status !== record.status
      ? null
      : { kind: pending.kind, state: pending.state, approve_url: pending.approve_url },
    capabilities: settings?.capabilities ?? proposed?.capabilities ?? DEFAULT_CAPABILITIES,
    limits: settings === null
      ? null
      : {
        max_transaction_token: weiToTokenCap(settings.max_transaction_wei),
        max_daily_token: weiToTokenCap(settings.max_daily_wei),
        daily_limit_credits: microToCreditLimit(settings.daily_limit),
        total_limit_credits: microToCreditLimit(settings.total_limit),
        expires_in_days: settings.expires_in_days
      },
    proposed: proposed === null || status !== record.status
      ? null
      : {
        agent_name: record.name,
        capabilities: proposed.capabilities,
        max_transaction_token: weiToProposedCap(proposed.max_transaction_wei),
        max_daily_token: weiToProposedCap(proposed.max_daily_wei),
        daily_limit_credits: microToCreditLimit(proposed.daily_limit),
        total_limit_credits: microToCreditLimit(proposed.total_limit),
        expires_in_days: proposed.expires_in_days
      },
    did: record.did,
    wallet_address: record.wallet_address,
    serving: record.serving,
    error: record.error,
    created_at: record.created_at,
    approved_at: record.approved_at,
    activated_at: record.activated_at,
    expires_at: record.expires_at,
    revoked_at: record.revoked_at
  }
  if (detail === undefined) return view
  return {
    ...view,
    spend: { today_credits: microToCredits(detail.spend.today), total_credits: microToCredits(detail.spend.total) },
    network_key_held: record.network_key_held === true
  }
}

