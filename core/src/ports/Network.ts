/**
 * Port: the network, where identities (DIDs) and their wallets live (docs/accounts.md "Outside
 * systems"; DESIGN.md's ports table). Sign-up asks it for the person's identity, whose outcome is
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
 * Agent registration and serving nodes (the agent approvals of the account service: an agent's
 * `did:svc:machine:<owner_id>:<agent_id>`, its wallet, the serving nodes with their operators,
 * the agent-scoped network key) join this port with the agents issue.
 *
 * Implementation: the simulated network in core/src/accounts/SimulatedNetwork.ts.
 */
import { Context, type Effect, Schema } from "effect"

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

export class Network extends Context.Service<Network, {
  /** The network's name ("simulated"), for logs and docs. */
  readonly network: string
  readonly createHumanIdentity: (id: string) => Effect.Effect<HumanIdentityRegistration, NetworkUnavailable>
}>()("@model-platform/core/ports/Network") {}
