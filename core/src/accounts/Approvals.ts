/**
 * Agent approvals at the account service (docs/agents.md "Approvals"; the spec's "Account
 * service" and "Approval state"): the platform asks the owner to approve creating, changing or
 * revoking an agent; the owner opens the link, sees what is asked and approves with one of their
 * passkeys (user verification required); the account service then registers (or revokes) the
 * agent on the network, and hands the outcome to the platform once.
 *
 *   pending --approved with a passkey, the network registers--> approved --read once--> collected
 *   pending --the network refuses--> failed (its reason, as it is)
 *   pending --30 minutes pass unused--> expired
 *
 * Every move is a compare-and-set of the approval's version (accounts/ApprovalStore.ts), so two
 * readers cannot both receive the approved result: the one whose swap to collected wins gets it,
 * with a new agent-scoped network key the network issues at that moment (the account service
 * keeps no copy); the other reads collected. A network with no answer changes nothing (503).
 */
import { Clock, Context, Effect, Layer } from "effect"
import type { AgentSettingsRecord } from "../agents/Records.ts"
import { tokenCapToWei } from "../agents/Amounts.ts"
import {
  APPROVAL_LINK_MS,
  type ApprovalResultWire,
  type ApprovalSettingsWire,
  type CreateApprovalWire,
  type CreatedApprovalWire
} from "../agents/ApprovalWire.ts"
import { generateId } from "../kernel/Ids.ts"
import { creditsToMicro, microToCredits } from "../kernel/Money.ts"
import { ApprovalStore } from "./ApprovalStore.ts"
import { agentDid, Network, type NetworkUnavailable } from "../agents/Network.ts"
import { PeopleStore } from "./PeopleStore.ts"
import * as Time from "../kernel/Time.ts"
import { type AccountError, accountError } from "./AccountErrors.ts"
import { AccountsConfig } from "./AccountsConfig.ts"
import type { BegunCeremony, RelyingParty } from "./AccountTypes.ts"
import type { ApprovalRecord } from "./ApprovalRecords.ts"
import { approvalOptions, assertionCredentialId, beginFlow, consumeFlow, verifyAuthentication } from "./WebAuthn.ts"


/** The settings a request asks for, as kept (caps in wei, limits in micro-credits). */
const settingsOf = (wire: ApprovalSettingsWire): AgentSettingsRecord | string => {
  const micro = (credits: number | null, field: string) => {
    if (credits === null) return null
    const value = creditsToMicro(credits)
    return value === undefined || value < 0n ? `settings.${field}: a number of credits of at least 0` : value
  }
  const daily = micro(wire.daily_limit_credits, "daily_limit_credits")
  const total = micro(wire.total_limit_credits, "total_limit_credits")
  if (typeof daily === "string") return daily
  if (typeof total === "string") return total
  return {
    capabilities: [...wire.capabilities],
    max_transaction_wei: tokenCapToWei(wire.max_transaction_token),
    max_daily_wei: tokenCapToWei(wire.max_daily_token),
    daily_limit: daily,
    total_limit: total,
    expires_in_days: wire.expires_in_days
  }
}

/** What the approval page shows of an approval. */
export interface ApprovalPageView {
  readonly id: string
  readonly kind: ApprovalRecord["kind"]
  readonly state: ApprovalRecord["state"]
  readonly agent_name: string
  readonly agent_did: string | null
  readonly settings: AgentSettingsRecord | null
  readonly expires_at: string
  readonly error: string | null
  readonly return_to: string | null
}

export class Approvals extends Context.Service<Approvals, {
  /** POST …/agent-approvals (the platform): a pending approval of `sub`'s and its link. */
  readonly create: (sub: string, request: CreateApprovalWire) => Effect.Effect<CreatedApprovalWire, AccountError>
  /** GET …/agent-approvals/{id} (the platform): the state; an approved result once, then collected. */
  readonly read: (sub: string, id: string) => Effect.Effect<ApprovalResultWire, AccountError>
  /** The approval page's view (anyone with the link: it shows what is asked, never a secret). */
  readonly view: (id: string) => Effect.Effect<ApprovalPageView, AccountError>
  /** Approving, step 1: assertion options for the owner's passkeys. */
  readonly beginApprove: (input: RelyingParty & { readonly id: string }) => Effect.Effect<BegunCeremony, AccountError>
  /** Approving, step 2: the owner's passkey verified, the network asked; the approval as it is then. */
  readonly finishApprove: (
    input: RelyingParty & { readonly id: string; readonly flow: string; readonly response: unknown }
  ) => Effect.Effect<ApprovalPageView, AccountError>
}>()("@model-platform/core/accounts/Approvals") {
  static readonly layer: Layer.Layer<Approvals, never, AccountsConfig | PeopleStore | ApprovalStore | Network> = Layer.effect(
    Approvals,
    Effect.gen(function*() {
      const config = yield* AccountsConfig
      const people = yield* PeopleStore
      const store = yield* ApprovalStore
      const network = yield* Network
      const accountsUrl = config.accountsUrl.replace(/\/+$/, "")

      const notFound = accountError("approval_not_found", "No agent approval has this id.")
      const unavailable = (e: NetworkUnavailable) => accountError("network_unavailable", `The network did not answer (${e.reason}); try again.`)

      const pageView = (r: ApprovalRecord): ApprovalPageView => ({
        id: r.id, kind: r.kind, state: r.state, agent_name: r.agent_name, agent_did: r.agent_did, settings: r.settings,
        expires_at: r.expires_at, error: r.error, return_to: r.return_to
      })

      /** The record, moved to expired first when its link ran out while pending (once, by swap). */
      const current = Effect.fnUntraced(function*(id: string) {
        for (let attempt = 0; attempt < 10; attempt++) {
          const r = yield* store.get(id)
          if (r === undefined) return yield* notFound
          const now = yield* Clock.currentTimeMillis
          if (r.state !== "pending" || now < Date.parse(r.expires_at)) return r
          const expired: ApprovalRecord = { ...r, state: "expired", version: r.version + 1 }
          if (yield* store.swap(expired)) return expired
        }
        return yield* Effect.die(new Error(`approval ${id} kept changing`))
      })

      const create = Effect.fn("Approvals.create")(function*(sub: string, request: CreateApprovalWire) {
        const invalid = (message: string) => accountError("invalid_request", message)
        if ((yield* people.getPerson(sub)) === undefined) return yield* accountError("approval_not_found", `No person "${sub}" here.`)
        const needsSettings = request.kind !== "revoke"
        if (needsSettings && request.settings === undefined) return yield* invalid(`settings: required for ${request.kind}`)
        if (!needsSettings && request.settings !== undefined) return yield* invalid("settings: a revoke carries none")
        if (request.kind === "create" && (request.serving_nodes ?? []).length === 0) return yield* invalid("serving_nodes: at least one for create")
        if (request.kind === "create" && request.agent_did !== undefined) return yield* invalid("agent_did: a create has none yet")
        if (request.kind !== "create" && request.agent_did === undefined) return yield* invalid(`agent_did: required for ${request.kind}`)
        const settings = request.settings === undefined ? null : settingsOf(request.settings)
        if (typeof settings === "string") return yield* invalid(settings)
        const now = yield* Clock.currentTimeMillis
        const record: ApprovalRecord = {
          id: yield* generateId("apr"),
          sub,
          kind: request.kind,
          state: "pending",
          agent_name: request.settings?.agent_name ?? "",
          agent_did: request.agent_did ?? null,
          settings,
          serving_nodes: (request.serving_nodes ?? []).map((n) => ({ ...n, dpop_jkt: null })),
          return_to: request.return_to ?? null,
          created_at: Time.toTimestamp(now),
          expires_at: Time.toTimestamp(now + APPROVAL_LINK_MS),
          approved_at: null,
          collected_at: null,
          network: null,
          error: null,
          version: 0
        }
        yield* store.insert(record)
        return { id: record.id, approve_url: `${accountsUrl}/approve/${record.id}` } satisfies CreatedApprovalWire
      })

      const read = Effect.fn("Approvals.read")(function*(sub: string, id: string) {
        for (let attempt = 0; attempt < 10; attempt++) {
          const r = yield* current(id)
          if (r.sub !== sub) return yield* notFound
          switch (r.state) {
            case "pending":
            case "expired":
              return { state: r.state } satisfies ApprovalResultWire
            case "failed":
              return { state: "failed", error: r.error ?? "refused" } satisfies ApprovalResultWire
            case "collected":
              return { state: "collected", agent_did: r.agent_did ?? "" } satisfies ApprovalResultWire
            case "approved": {
              // The key is made before the handover: a lost swap wastes one key, never hands out two results.
              const key = r.kind === "revoke" ? null : (yield* network.issueAgentKey(r.agent_did ?? "").pipe(Effect.mapError(unavailable))) ?? null
              const collected: ApprovalRecord = { ...r, state: "collected", collected_at: yield* Time.now, version: r.version + 1 }
              if (!(yield* store.swap(collected))) continue
              const s = r.settings
              return {
                state: "approved",
                kind: r.kind,
                agent_did: r.agent_did ?? "",
                network: {
                  identity: r.network?.identity ?? { did: r.agent_did ?? "", controller_did: "" },
                  wallet: r.network?.wallet ?? { address: "" },
                  serving_nodes: (r.network?.serving_nodes ?? []).map((n) => ({ ...n, dpop_jkt: n.dpop_jkt ?? "" })),
                  api_key: key
                },
                settings: s === null ? null : {
                  agent_name: r.agent_name,
                  capabilities: s.capabilities,
                  max_transaction_value: s.max_transaction_wei?.toString() ?? null,
                  max_daily_spend: s.max_daily_wei?.toString() ?? null,
                  expires_in_days: s.expires_in_days,
                  daily_limit_credits: s.daily_limit === null ? null : microToCredits(s.daily_limit),
                  total_limit_credits: s.total_limit === null ? null : microToCredits(s.total_limit)
                }
              } satisfies ApprovalResultWire
            }
          }
        }
        return yield* Effect.die(new Error(`approval ${id} kept changing`))
      })

      const view = Effect.fn("Approvals.view")(function*(id: string) {
        return pageView(yield* current(id))
      })

      const closed = (r: ApprovalRecord) =>
        accountError(
          "approval_closed",
          r.state === "expired"
            ? "This approval link has expired (links are valid 30 minutes). Ask again from the platform."
            : "This approval was decided already."
        )

      const beginApprove = Effect.fn("Approvals.beginApprove")(function*(input: RelyingParty & { readonly id: string }) {
        const r = yield* current(input.id)
        if (r.state !== "pending") return yield* closed(r)
        const options = yield* approvalOptions(input.rpId, yield* people.listPasskeys(r.sub))
        return yield* beginFlow(people, { kind: "approve", challenge: options.challenge, subject: r.id, extra: r.sub }, options)
      })

      /**
       * What the network says to the approved request: the record approved, or failed with its
       * reason. The agent is controlled by the owner's identity (`did:svc:human:<account id>`) and
       * named `did:svc:machine:<account id>:<approval id>` when created.
       */
      const decide = Effect.fnUntraced(function*(r: ApprovalRecord) {
        const now = yield* Time.now
        const person = yield* people.getPerson(r.sub)
        const identity = person?.account_id == null ? undefined : yield* people.getIdentity(person.account_id)
        if (person?.account_id == null || identity?.did == null) {
          return { ...r, state: "failed" as const, error: "the owner's identity is not ready on the network" }
        }
        const controller_did = identity.did
        if (r.kind === "revoke") {
          const revoked = yield* network.revokeAgent(r.agent_did ?? "")
          return revoked.state === "revoked"
            ? {
              ...r,
              state: "approved" as const,
              approved_at: now,
              network: { identity: { did: r.agent_did ?? "", controller_did }, wallet: { address: "" }, serving_nodes: [] }
            }
            : { ...r, state: "failed" as const, error: revoked.error }
        }
        const did = r.agent_did ?? agentDid(person.account_id, r.id)
        const s = r.settings!
        const registered = yield* network.registerAgent({
          did,
          controller_did,
          settings: { capabilities: s.capabilities, max_transaction_wei: s.max_transaction_wei, max_daily_wei: s.max_daily_wei, expires_in_days: s.expires_in_days },
          machine_dids: r.serving_nodes.map((n) => n.machine_did)
        })
        if (registered.state === "refused") return { ...r, state: "failed" as const, error: registered.error }
        return {
          ...r,
          state: "approved" as const,
          agent_did: did,
          approved_at: now,
          network: {
            identity: { did: registered.did, controller_did: registered.controller_did },
            wallet: { address: registered.wallet_address },
            serving_nodes: registered.serving_nodes.map((n) => ({ machine_did: n.machine_did, operator_did: n.operator_did, dpop_jkt: n.dpop_jkt }))
          }
        }
      })

      const finishApprove = Effect.fn("Approvals.finishApprove")(function*(
        input: RelyingParty & { readonly id: string; readonly flow: string; readonly response: unknown }
      ) {
        const flow = yield* consumeFlow(people, input.flow, "approve")
        if (flow.subject !== input.id) return yield* accountError("invalid_flow", "This approval step belongs to another approval; start again.")
        const credentialId = yield* assertionCredentialId(input.response)
        const passkey = yield* people.findPasskey(credentialId)
        if (passkey === undefined || passkey.person_id !== flow.extra) {
          return yield* accountError("verification_failed", "Only a passkey of the agent's owner can approve.")
        }
        const counter = yield* verifyAuthentication(input.response, flow.challenge, input, passkey, true)
        yield* people.recordPasskeyUse(passkey.credential_id, counter, yield* Time.now)
        const r = yield* current(input.id)
        if (r.state !== "pending") return yield* closed(r)
        const decided = yield* decide(r).pipe(Effect.mapError(unavailable))
        // Lost to another approval of the same link meanwhile: that one stands.
        yield* store.swap({ ...decided, version: r.version + 1 })
        return pageView(yield* current(input.id))
      })

      return Approvals.of({ create, read, view, beginApprove, finishApprove })
    })
  )
}
