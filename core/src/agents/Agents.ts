/**
 * Agents, the use-cases (docs/agents.md "Endpoints", "Collecting approvals"): propose an agent,
 * change its settings or revoke it (each a step the owner approves with a passkey at the account
 * service, agents/AgentApprovals.ts), read agents (collecting an outstanding approval first, and
 * ending a delegation whose time is up), and give an active agent a key.
 *
 * Every move of an agent goes through the state machine (AgentStates.ts `applyAgentEvent`) and is
 * written by a compare-and-set on the record's version (AgentStore.swap): a write that lost to
 * another process reads the agent again and decides again, a few times.
 *
 * The owner is the account's person (`sub` at the account service: the identity's person_id),
 * whose identity must be ready. Settings are kept exactly (Records.ts: wei and micro-credits) and
 * converted at the boundary (Amounts.ts).
 */
import { Clock, Context, Effect, Layer } from "effect"
import { ApiKeys } from "../keys/ApiKeys.ts"
import { type Caller } from "../keys/Caller.ts"
import { Catalogue } from "../catalogue/Catalogue.ts"
import { agentError, type AgentErrorOf } from "./AgentErrors.ts"
import { type CreatedKey } from "../keys/Keys.ts"
import { type AccountId, type AgentId, generateId } from "../kernel/Ids.ts"
import { accountTeller } from "../kernel/AccountNotices.ts"
import { DEFAULT_PERMISSIONS, ungrantable } from "../keys/Permissions.ts"
import { AgentApprovals, type ApprovalsUnavailable } from "./AgentApprovals.ts"
import { AgentStore } from "./AgentStore.ts"
import { LedgerStore } from "../ledger/LedgerStore.ts"
import { Network } from "./Network.ts"
import { AgentOwners } from "./AgentOwners.ts"
import { RequestBaseUrl } from "../kernel/RequestBaseUrl.ts"
import * as Time from "../kernel/Time.ts"
import { type AgentMove, applyAgentEvent, proposedState } from "./AgentStates.ts"
import { APPROVAL_LINK_MS } from "./ApprovalWire.ts"
import { agentDayBudget, agentTotalBudget, TOTAL_PERIOD } from "./Limits.ts"
import { dayOf } from "../kernel/Time.ts"
import type { AgentApprovalRecord, AgentRecord, AgentSettingsRecord } from "./Records.ts"
import {
  type Agent,
  type AgentList,
  type AgentProposalResponse,
  type AgentSettings,
  type CreateAgent,
  type CreateAgentKey
} from "./Schemas.ts"
import {
  agentView,
  applyApprovalAnswer,
  delegationEnded,
  endDelegation,
  mergeSettings,
  settingsOfProposal,
  settingsToWire,
  stateOf
} from "./AgentRules.ts"

/** How many times a write that lost to another process is decided again. */
export const SWAP_ATTEMPTS = 5

/**
 * An approval another process collected first (the account service answers `collected`): the
 * agent is read again up to this many times, this far apart, until that process's write shows.
 */
export const COLLECTED_READS = 5
export const COLLECTED_WAIT_MS = 50

// ---- use-cases -------------------------------------------------------------------------------

const notFound = (id: AgentId) => agentError("agent_not_found", `No agent "${id}" in this account.`)

const approvalsUnavailable = (what: string) =>
  agentError(
    "approvals_unavailable",
    `The account service, where the owner approves agents, cannot be reached now; ${what}. Try again in a minute.`
  )

const refusal = (id: AgentId, reason: "final" | "not_active" | "change_pending" | "nothing_pending") =>
  reason === "change_pending"
    ? agentError(
      "change_pending",
      `Agent ${id} already has a change waiting for the owner's approval; only one can wait at a time. Approve it (or let its link expire) first.`
    )
    : agentError("agent_not_active", `Agent ${id} is not active; only an active agent can be changed, revoked or given keys.`)

export interface AgentsOptions {
  /**
   * The platform's public base URL (PlatformOptions.publicUrl): an approval's `return_to` is
   * `<publicUrl>/agents/<id>`. Unset: the address the request was sent to (PublicUrl.ts).
   */
  readonly publicUrl?: string | undefined
}

/** Why a proposal for the owner to approve cannot be made. */
type Proposing = "passkey_required" | "identity_not_ready" | "no_serving_nodes" | "approvals_unavailable"
/** Why an agent cannot be changed or revoked. */
type Changing = "agent_not_found" | "agent_not_active" | "change_pending"

export class Agents extends Context.Service<Agents, {
  /** GET /agents: the account's agents, newest first, each collected first. */
  readonly list: (caller: Caller) => Effect.Effect<AgentList>
  /** GET /agents/{id}: the agent, collected first, with its spend and network_key_held. */
  readonly get: (caller: Caller, id: AgentId) => Effect.Effect<Agent, AgentErrorOf<"agent_not_found">>
  /**
   * POST /agents. `accountsUrl`: the account service's base address, for the manage_url a refusal
   * names.
   */
  readonly propose: (
    caller: Caller,
    body: CreateAgent,
    accountsUrl: string
  ) => Effect.Effect<AgentProposalResponse, AgentErrorOf<Proposing>>
  /** POST /agents/{id}/settings: an update for the owner to approve; the settings in force stay. */
  readonly changeSettings: (
    caller: Caller,
    id: AgentId,
    body: AgentSettings,
    accountsUrl: string
  ) => Effect.Effect<AgentProposalResponse, AgentErrorOf<Proposing | Changing>>
  /** POST /agents/{id}/revoke: a revocation for the owner to approve. */
  readonly revoke: (
    caller: Caller,
    id: AgentId,
    accountsUrl: string
  ) => Effect.Effect<AgentProposalResponse, AgentErrorOf<Proposing | Changing>>
  /** POST /agents/{id}/keys: a key of an active agent, its secret once. */
  readonly createKey: (
    caller: Caller,
    id: AgentId,
    body: CreateAgentKey
  ) => Effect.Effect<
    CreatedKey,
    AgentErrorOf<"agent_not_found" | "agent_not_active" | "key_lacks_permission" | "key_not_scoped_to_machine" | "machine_not_found">
  >
}>()("@model-platform/core/agents/Agents") {
  static readonly layer = (
    options: AgentsOptions = {}
  ): Layer.Layer<Agents, never, AgentStore | AgentOwners | LedgerStore | Catalogue | ApiKeys | AgentApprovals | Network> =>
    Layer.effect(Agents, makeAgents(options))
}

const makeAgents = (options: AgentsOptions) =>
  Effect.gen(function*() {
    const store = yield* AgentStore
    const owners = yield* AgentOwners
    const ledger = yield* LedgerStore
    const catalogue = yield* Catalogue
    const apiKeys = yield* ApiKeys
    const approvals = yield* AgentApprovals
    const network = yield* Network
    // A change to an agent binds its keys at their next call, in this process at once (KeyStanding.ts).
    const tell = yield* accountTeller

    /**
     * Writes `decide(current)` by swap, deciding again from the record as stored after a lost
     * write (SWAP_ATTEMPTS times at most). `applied`: whether a decision was written; when the
     * decision is undefined (nothing to do, or no longer allowed) the record as it is.
     */
    const settle = Effect.fnUntraced(function*(
      record: AgentRecord,
      decide: (current: AgentRecord) => AgentRecord | undefined
    ) {
      let current = record
      for (let attempt = 0; attempt < SWAP_ATTEMPTS; attempt++) {
        const next = decide(current)
        if (next === undefined) return { record: current, applied: false }
        if (yield* store.swap(next)) {
          yield* tell(next.account_id)
          return { record: next, applied: true }
        }
        const again = yield* store.get(record.id)
        if (again === undefined) return yield* Effect.die(new Error(`agent ${record.id} vanished while being written`))
        current = again
      }
      return yield* Effect.die(new Error(`agent ${record.id} kept changing under ${SWAP_ATTEMPTS} writes`))
    })

    /** The account's person (the approvals' `sub`), when it has an identity. */
    const ownerOf = owners.personOf

    /**
     * Collects the agent's outstanding approval (docs/agents.md "Collecting approvals"): asks the
     * account service and applies its answer. The service unavailable: the agent as stored.
     */
    const collect = Effect.fnUntraced(function*(record: AgentRecord) {
      const approval = record.approval
      if (approval === null || approval.state !== "pending") return record
      const sub = yield* ownerOf(record.account_id)
      if (sub === undefined) return record
      const answer = yield* approvals.read(sub, approval.id).pipe(
        Effect.catchTag("ApprovalsUnavailable", (e: ApprovalsUnavailable) =>
          Effect.as(
            Effect.logWarning("agent approval not collected: the account service is unavailable", {
              agent_id: record.id,
              approval_id: approval.id,
              reason: e.reason
            }),
            undefined
          ))
      )
      if (answer === undefined || answer.state === "pending") return record
      if (answer.state === "collected") {
        // Another process read the approved result first and is writing it: the agent as stored
        // once that is written (read again a few times, COLLECTED_WAIT_MS apart), else as it is.
        let current = record
        for (let attempt = 0; attempt < COLLECTED_READS; attempt++) {
          current = (yield* store.get(record.id)) ?? current
          if (current.approval?.id !== approval.id || current.approval.state !== "pending") return current
          yield* Effect.sleep(COLLECTED_WAIT_MS)
        }
        // Still not written. Once the link has expired, the process handed the result is taken
        // to have died with it: apply what is known without it (docs/agents.md "A result never
        // written"; a slower writer then loses its swap, the limits being the same either way).
        const now = yield* Clock.currentTimeMillis
        if (now < Date.parse(approval.expires_at)) {
          yield* Effect.logWarning("agent approval collected elsewhere, not yet written", { agent_id: record.id, approval_id: approval.id })
          return current
        }
        yield* Effect.logWarning("agent approval collected elsewhere and never written: applied without its result", {
          agent_id: record.id,
          approval_id: approval.id
        })
        return (yield* settle(current, (latest) => applyApprovalAnswer(latest, approval.id, answer, now))).record
      }
      const now = yield* Clock.currentTimeMillis
      const settled = yield* settle(record, (current) => applyApprovalAnswer(current, approval.id, answer, now))
      return settled.record
    })

    /** The agent once collected and its delegation's end applied. */
    const refresh = Effect.fnUntraced(function*(record: AgentRecord) {
      const collected = yield* collect(record)
      const now = yield* Clock.currentTimeMillis
      if (!delegationEnded(collected, now)) return collected
      return (yield* settle(collected, (current) => endDelegation(current, now))).record
    })

    /** The caller's agent, refreshed, or 404 agent_not_found (another account's too). */
    const found = Effect.fnUntraced(function*(caller: Caller, id: AgentId) {
      const record = yield* store.get(id)
      if (record === undefined || record.account_id !== caller.account.id) return yield* notFound(id)
      return yield* refresh(record)
    })

    /**
     * The account's person, when it has a passkey to approve with (else 409 passkey_required: the
     * owner account before it is claimed) and its identity is ready (else 409 identity_not_ready).
     */
    const readyOwner = Effect.fnUntraced(function*(accountId: AccountId, accountsUrl: string) {
      const owner = yield* owners.ownerOf(accountId)
      if (owner !== undefined && owner.passkeys === 0) {
        return yield* agentError(
          "passkey_required",
          "The account has no passkey, and only a passkey approves an agent. Attach one with a claim link: " +
            "POST /identity/claim-link with a manage key answers one (the Node server printed one beside the owner key at first start); " +
            "open it in a browser, create the passkey, then propose the agent again."
        )
      }
      if (owner !== undefined && owner.identity === "ready") return owner.person_id
      const manageUrl = owner === undefined ? `${accountsUrl}/sign-up` : `${accountsUrl}/manage`
      return yield* agentError(
        "identity_not_ready",
        owner?.identity === "failed"
          ? `The account's identity on the network failed (${owner.error ?? "no reason given"}); see ${manageUrl}.`
          : `The account has no ready identity to own agents: sign up and register a passkey at ${manageUrl}, then try again.`
      )
    })

    /** The nodes serving agents now; the network unavailable: 503. */
    const servingNodes = (what: string) =>
      network.servingNodes.pipe(
        Effect.catchTag("NetworkUnavailable", (e) =>
          Effect.andThen(
            Effect.logWarning("network unavailable for agents", { reason: e.reason }),
            Effect.fail(approvalsUnavailable(what))
          ))
      )

    const createApproval = (sub: string, request: Parameters<typeof approvals.create>[1], what: string) =>
      approvals.create(sub, request).pipe(
        Effect.catchTag("ApprovalsUnavailable", (e) =>
          Effect.andThen(
            Effect.logWarning("agent approval not created: the account service is unavailable", { kind: request.kind, reason: e.reason }),
            Effect.fail(approvalsUnavailable(what))
          ))
      )

    const platformUrl = Effect.map(RequestBaseUrl, (fromRequest) =>
      options.publicUrl !== undefined && options.publicUrl !== "" ? options.publicUrl.replace(/\/+$/, "") : fromRequest ?? "")

    const pendingApproval = (
      created: { readonly id: string; readonly approve_url: string },
      kind: AgentApprovalRecord["kind"],
      settings: AgentSettingsRecord | null,
      now: number
    ): AgentApprovalRecord => ({
      id: created.id,
      kind,
      state: "pending",
      approve_url: created.approve_url,
      expires_at: Time.toTimestamp(now + APPROVAL_LINK_MS),
      settings
    })

    const list = Effect.fn("Agents.list")(function*(caller: Caller) {
      const records = yield* store.list(caller.account.id)
      const refreshed = yield* Effect.forEach(records, refresh, { concurrency: 4 })
      const now = yield* Clock.currentTimeMillis
      return { data: refreshed.map((r) => agentView(r, now)) } satisfies AgentList
    })

    /** What the agent spent (spent + held) today (UTC) and in total, by its ledger budgets. */
    const spendOf = Effect.fnUntraced(function*(record: AgentRecord, now: number) {
      const [day, total] = yield* Effect.all([
        ledger.budgets(record.account_id, dayOf(now)),
        ledger.budgets(record.account_id, TOTAL_PERIOD)
      ], { concurrency: 2 })
      const used = (states: typeof day, budget: string) => {
        const state = states.find((s) => s.budget === budget)
        return state === undefined ? 0n : state.spent + state.held
      }
      return { today: used(day, agentDayBudget(record.id)), total: used(total, agentTotalBudget(record.id)) }
    })

    const get = Effect.fn("Agents.get")(function*(caller: Caller, id: AgentId) {
      const record = yield* found(caller, id)
      const now = yield* Clock.currentTimeMillis
      return agentView(record, now, { spend: yield* spendOf(record, now) })
    })

    const propose = Effect.fn("Agents.propose")(function*(caller: Caller, body: CreateAgent, accountsUrl: string) {
      const sub = yield* readyOwner(caller.account.id, accountsUrl)
      const nothing = "no agent was created"
      const nodes = yield* servingNodes(nothing)
      if (nodes.length === 0) {
        return yield* agentError(
          "no_serving_nodes",
          "No node of the network serves agents now, so an agent cannot be created; try again later."
        )
      }
      const settings = settingsOfProposal(body)
      const id = yield* generateId("agt")
      const created = yield* createApproval(sub, {
        kind: "create",
        settings: settingsToWire(body.name, settings),
        serving_nodes: nodes.map((n) => ({ machine_did: n.machine_did, operator_did: n.operator_did })),
        return_to: `${yield* platformUrl}/agents/${id}`
      }, nothing)
      const now = yield* Clock.currentTimeMillis
      const record: AgentRecord = {
        id,
        account_id: caller.account.id,
        name: body.name,
        status: proposedState.status,
        settings: null,
        approval: pendingApproval(created, "create", settings, now),
        did: null,
        wallet_address: null,
        serving: { nodes: 0, operators: 0 },
        error: null,
        created_at: Time.toTimestamp(now),
        approved_at: null,
        activated_at: null,
        expires_at: null,
        revoked_at: null,
        network_key_held: false,
        version: 0
      }
      yield* store.insert(record)
      return { approve_url: created.approve_url, agent: agentView(record, now) } satisfies AgentProposalResponse
    })

    /**
     * A step of an active agent for the owner to approve (update or revoke): refused first by the
     * machine when it may not happen now, then asked of the account service, then written.
     */
    const proposeStep = Effect.fnUntraced(function*(
      caller: Caller,
      id: AgentId,
      accountsUrl: string,
      event: "propose_update" | "propose_revoke",
      settingsOf: (record: AgentRecord) => AgentSettingsRecord | null
    ) {
      const record = yield* found(caller, id)
      const first = applyAgentEvent(stateOf(record), event)
      if (first._tag === "Refused") return yield* refusal(id, first.reason)
      const agentDid = record.did
      if (agentDid === null) return yield* Effect.die(new Error(`active agent ${id} has no DID`))
      const sub = yield* readyOwner(caller.account.id, accountsUrl)
      const settings = settingsOf(record)
      const nothing = "nothing was changed"
      const created = settings === null
        ? yield* createApproval(sub, { kind: "revoke", agent_did: agentDid }, nothing)
        : yield* createApproval(sub, {
          kind: "update",
          agent_did: agentDid,
          settings: settingsToWire(record.name, settings),
          serving_nodes: (yield* servingNodes(nothing)).map((n) => ({ machine_did: n.machine_did, operator_did: n.operator_did }))
        }, nothing)
      const now = yield* Clock.currentTimeMillis
      const approval = pendingApproval(created, settings === null ? "revoke" : "update", settings, now)
      let refused: AgentMove | undefined
      const settled = yield* settle(record, (current) => {
        const move = applyAgentEvent(stateOf(current), event)
        if (move._tag === "Refused") {
          refused = move
          return undefined
        }
        return { ...current, status: move.state.status, approval, version: current.version + 1 }
      })
      if (!settled.applied) {
        // Another change was written first; the approval just made is never collected and lapses.
        return yield* refusal(id, refused?._tag === "Refused" ? refused.reason : "not_active")
      }
      return { approve_url: created.approve_url, agent: agentView(settled.record, now) } satisfies AgentProposalResponse
    })

    const changeSettings = Effect.fn("Agents.changeSettings")(
      (caller: Caller, id: AgentId, body: AgentSettings, accountsUrl: string) =>
        proposeStep(caller, id, accountsUrl, "propose_update", (record) =>
          record.settings === null ? null : mergeSettings(record.settings, body))
    )

    const revoke = Effect.fn("Agents.revoke")((caller: Caller, id: AgentId, accountsUrl: string) =>
      proposeStep(caller, id, accountsUrl, "propose_revoke", () => null)
    )

    const createKey = Effect.fn("Agents.createKey")(function*(caller: Caller, id: AgentId, body: CreateAgentKey) {
      const record = yield* found(caller, id)
      if (record.status !== "active") {
        return yield* agentError("agent_not_active", `Agent ${id} is ${record.status}; only an active agent can be given keys.`)
      }
      const permissions = body.permissions ?? DEFAULT_PERMISSIONS
      // The granting rule of POST /keys (ApiKeys.create): a key grants only what it holds, and a
      // key pinned to a machine makes keys pinned to it.
      const missing = ungrantable(caller.key.permissions, permissions)
      if (missing.length > 0) {
        return yield* agentError(
          "key_lacks_permission",
          `A key can only grant permissions it holds; this key lacks ${missing.join(", ")}.`,
          missing[0]
        )
      }
      const machineId = body.machine_id ?? null
      if (caller.key.machine_id !== null && machineId !== caller.key.machine_id) {
        return yield* agentError(
          "key_not_scoped_to_machine",
          `This key is pinned to machine "${caller.key.machine_id}" and can only create keys pinned to it.`
        )
      }
      if (machineId !== null && catalogue.machineConfig(machineId) === undefined) {
        return yield* agentError("machine_not_found", `No machine "${machineId}".`)
      }
      return yield* apiKeys.issue(caller.account.id, { name: body.name, permissions, machine_id: machineId, agent_id: record.id })
    })

    return Agents.of({ list, get, propose, changeSettings, revoke, createKey })
  })
