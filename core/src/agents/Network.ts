/**
 * Port: the network, where identities (DIDs) and their wallets live (docs/accounts.md "Outside
 * systems"; docs/architecture.md "Shells"). Sign-up asks it for the person's identity, whose outcome is
 * what GET /identity shows (state, did, wallet_address, error).
 *
 * `createHumanIdentity(id)` registers the human identity `did:svc:human:<id>` with a wallet:
 * - `ready`: the network holds it; did and wallet_address are set;
 * - `failed`: the network refused the registration; `error` holds its reason, as the spec wants it
 *   shown. A refusal is an answer, not an outage: it is stored as the identity's state.
 * - `NetworkUnavailable` (the error channel): no answer now; the identity stays `provisioning` and
 *   the caller tries again later.
 * It is idempotent per id: asking again for an id the network holds answers the same identity, so
 * a retry after a lost answer is safe.
 *
 * Agents (docs/agents.md "The network"): `servingNodes` are the nodes that serve agents (none: an
 * agent cannot be proposed, 409 no_serving_nodes); `registerAgent` registers an agent's identity
 * `did:svc:machine:<owner_id>:<agent_id>` under its owner's DID with a wallet and its caps (in
 * wei), or registers new settings for it (idempotent per DID: the latest settings hold);
 * `revokeAgent` ends it; `issueAgentKey` makes a new agent-scoped network key, handed to the
 * platform once (the account service keeps no copy). A refusal is an answer (`refused` with the
 * network's reason, returned as it is), not an outage.
 *
 * Implementation: the simulated network in core/src/agents/SimulatedNetwork.ts.
 */
import { Context, type Effect, Schema } from "effect"
import type { AgentId } from "../kernel/Ids.ts"

/** `did:svc:human:<id>` for an id (an account's id at the account service: no colon, no whitespace). */
export const humanDid = (id: string): string => `did:svc:human:${id}`

/** An id the network accepts in a DID: non-empty, no colon, no whitespace. */
export const isDidId = (id: string): boolean => /^[^:\s]+$/.test(id)

export type HumanIdentityRegistration =
  | { readonly state: "ready"; readonly did: string; readonly wallet_address: string }
  | { readonly state: "failed"; readonly error: string }

/** The network gave no answer now: retry later. */
export class NetworkUnavailable extends Schema.TaggedError<NetworkUnavailable>()("NetworkUnavailable", {
  reason: Schema.String
}) {}

/** `did:svc:machine:<owner_id>:<agent_id>`. */
export const agentDid = (ownerId: string, agentId: AgentId): string => `did:svc:machine:${ownerId}:${agentId}`

/** A node of the network that serves agents. */
export interface NetworkNode {
  readonly machine_did: string
  readonly operator_did: string
  /** The thumbprint of the node's DPoP key. */
  readonly dpop_jkt: string
}

/** What the network enforces of an agent: its capabilities and caps (wei: 1 token = 10^18 wei). */
export interface AgentNetworkSettings {
  readonly capabilities: ReadonlyArray<string>
  readonly max_transaction_wei: bigint | null
  readonly max_daily_wei: bigint | null
  readonly expires_in_days: number
}

export type AgentRegistration =
  | {
    readonly state: "registered"
    readonly did: string
    readonly controller_did: string
    readonly wallet_address: string
    /** The nodes that serve it: those asked for that the network has. */
    readonly serving_nodes: ReadonlyArray<NetworkNode>
  }
  | { readonly state: "refused"; readonly error: string }

export type AgentRevocation = { readonly state: "revoked" } | { readonly state: "refused"; readonly error: string }

export class Network extends Context.Service<Network, {
  /** The network's name ("simulated"), for logs and docs. */
  readonly network: string
  readonly createHumanIdentity: (id: string) => Effect.Effect<HumanIdentityRegistration, NetworkUnavailable>
  /** The nodes serving agents now. */
  readonly servingNodes: Effect.Effect<ReadonlyArray<NetworkNode>, NetworkUnavailable>
  /** Registers the agent `did` controlled by `controller_did` with `settings`, served by those of `machine_dids` the network has. */
  readonly registerAgent: (input: {
    readonly did: string
    readonly controller_did: string
    readonly settings: AgentNetworkSettings
    readonly machine_dids: ReadonlyArray<string>
  }) => Effect.Effect<AgentRegistration, NetworkUnavailable>
  readonly revokeAgent: (did: string) => Effect.Effect<AgentRevocation, NetworkUnavailable>
  /** A new agent-scoped network key for a registered, unrevoked agent (undefined otherwise). */
  readonly issueAgentKey: (did: string) => Effect.Effect<string | undefined, NetworkUnavailable>
}>()("@model-platform/core/agents/Network") {}
