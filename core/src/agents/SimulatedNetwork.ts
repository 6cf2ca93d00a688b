/**
 * The simulated network (core/src/agents/Network.ts): the built-in network until a real one is
 * configured, and the one tests use (docs/accounts.md "Outside systems"). It does no I/O: the
 * identities it registers live in this process's memory.
 *
 * - A human identity `did:svc:human:<id>` gets the wallet address `0x` + the first 40 hex digits of
 *   SHA-256 of its DID: deterministic, so the same id answers the same address after a restart, and
 *   two ids never share one in practice. Registering an id again answers the same identity.
 * - Faults are injectable: `refuseNext(n, reason)` makes the next n registrations answer
 *   `failed` with that reason (the network refused them), `unavailableNext(n)` makes them fail with
 *   NetworkUnavailable (no answer). Faults queue in the order they were injected, and each
 *   registration of a well-formed id takes the next one. An operator injects refusals at start
 *   with SIMULATED_NETWORK_REFUSE_NEXT and SIMULATED_NETWORK_REFUSE_REASON (`fromConfig`);
 *   they apply per process (a Lambda container has its own).
 * - An id that cannot sit in a DID (empty, a colon, whitespace) is refused, as a network would.
 */
import { Config, Context, Effect, Layer, Ref, Schema } from "effect"
import { sha256Hex } from "../kernel/Sha256.ts"
import { generateSecret } from "../keys/Keys.ts"
import {
  type AgentNetworkSettings,
  type AgentRegistration,
  type AgentRevocation,
  humanDid,
  type HumanIdentityRegistration,
  isDidId,
  Network,
  type NetworkNode,
  NetworkUnavailable
} from "./Network.ts"

/** The simulated wallet address of a DID: `0x` and 40 lowercase hex digits. */
export const simulatedWalletAddress = (did: string): string => `0x${sha256Hex(did).slice(0, 40)}`

export const DEFAULT_REFUSAL_REASON = "registration refused by the simulated network"

export type InjectedNetworkFault =
  | { readonly _tag: "refuse"; readonly reason: string }
  | { readonly _tag: "unavailable"; readonly reason: string }

export interface RegisteredIdentity {
  readonly id: string
  readonly did: string
  readonly wallet_address: string
}

export interface SimulatedNetworkOptions {
  /** Refuse this many registrations from the start. Default 0. */
  readonly refuseNext?: number
  /** Their reason. Default DEFAULT_REFUSAL_REASON. */
  readonly refuseReason?: string
  /** How many nodes serve agents (each of its own operator). Default DEFAULT_SERVING_NODES; 0: none. */
  readonly servingNodes?: number
}

export const DEFAULT_SERVING_NODES = 2

/** The simulated network's serving nodes: node i of operator i, its DPoP thumbprint derived from its DID. */
export const simulatedNodes = (count: number): ReadonlyArray<NetworkNode> =>
  Array.from({ length: Math.max(0, Math.floor(count)) }, (_, i) => {
    const machine_did = `did:svc:node:simulated-${i + 1}`
    return { machine_did, operator_did: `did:svc:operator:simulated-${i + 1}`, dpop_jkt: sha256Hex(`dpop:${machine_did}`).slice(0, 43) }
  })

/** An agent the simulated network holds. */
export interface RegisteredAgent {
  readonly did: string
  readonly controller_did: string
  readonly wallet_address: string
  readonly settings: AgentNetworkSettings
  readonly serving_nodes: ReadonlyArray<NetworkNode>
  readonly revoked: boolean
  /** SHA-256 of the agent-scoped keys issued for it (the network checks keys; it keeps no key). */
  readonly key_hashes: ReadonlyArray<string>
}

/** The operator's injected refusals, from the environment. */
export const SimulatedNetworkConfig = Config.all({
  refuseNext: Config.schema(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)), "SIMULATED_NETWORK_REFUSE_NEXT").pipe(
    Config.withDefault(0)
  ),
  refuseReason: Config.String("SIMULATED_NETWORK_REFUSE_REASON").pipe(Config.withDefault(DEFAULT_REFUSAL_REASON)),
  servingNodes: Config.schema(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)), "SIMULATED_NETWORK_SERVING_NODES").pipe(
    Config.withDefault(DEFAULT_SERVING_NODES)
  )
})

const repeat = (count: number, fault: InjectedNetworkFault): ReadonlyArray<InjectedNetworkFault> =>
  Array.from({ length: Math.max(0, Math.floor(count)) }, () => fault)

export class SimulatedNetwork extends Context.Service<SimulatedNetwork, {
  /** The next `count` registrations answer `failed` with `reason`. */
  readonly refuseNext: (count: number, reason?: string) => Effect.Effect<void>
  /** The next `count` registrations fail with NetworkUnavailable. */
  readonly unavailableNext: (count: number, reason?: string) => Effect.Effect<void>
  /** The identities the network holds, in the order they were registered. */
  readonly identities: Effect.Effect<ReadonlyArray<RegisteredIdentity>>
  /** The agents the network holds, by DID. */
  readonly agents: Effect.Effect<ReadonlyMap<string, RegisteredAgent>>
  /** Sets how many nodes serve agents from now on. */
  readonly setServingNodes: (count: number) => Effect.Effect<void>
}>()("@model-platform/core/agents/SimulatedNetwork") {
  /** The simulated network and its controls. */
  static readonly layer = (options: SimulatedNetworkOptions = {}): Layer.Layer<Network | SimulatedNetwork> =>
    Layer.effectContext(
      Effect.gen(function*() {
        const faults = yield* Ref.make<ReadonlyArray<InjectedNetworkFault>>(
          repeat(options.refuseNext ?? 0, { _tag: "refuse", reason: options.refuseReason ?? DEFAULT_REFUSAL_REASON })
        )
        const held = yield* Ref.make<ReadonlyMap<string, RegisteredIdentity>>(new Map())
        const createHumanIdentity = Effect.fn("SimulatedNetwork.createHumanIdentity")(
          function*(id: string): Effect.fn.Return<HumanIdentityRegistration, NetworkUnavailable> {
            if (!isDidId(id)) {
              return { state: "failed", error: "the identity id must be non-empty, without colons or whitespace" }
            }
            const fault = yield* Ref.modify(faults, (queue) => [queue[0], queue.slice(1)] as const)
            if (fault?._tag === "unavailable") return yield* new NetworkUnavailable({ reason: fault.reason })
            if (fault?._tag === "refuse") return { state: "failed", error: fault.reason }
            const did = humanDid(id)
            const identity = yield* Ref.modify(held, (identities) => {
              const known = identities.get(id)
              if (known !== undefined) return [known, identities] as const
              const made: RegisteredIdentity = { id, did, wallet_address: simulatedWalletAddress(did) }
              return [made, new Map([...identities, [id, made]])] as const
            })
            return { state: "ready", did: identity.did, wallet_address: identity.wallet_address }
          }
        )
        const nodes = yield* Ref.make(simulatedNodes(options.servingNodes ?? DEFAULT_SERVING_NODES))
        const agents = yield* Ref.make<ReadonlyMap<string, RegisteredAgent>>(new Map())
        const nextFault = Ref.modify(faults, (queue) => [queue[0], queue.slice(1)] as const)

        const registerAgent = Effect.fn("SimulatedNetwork.registerAgent")(function*(input: {
          readonly did: string
          readonly controller_did: string
          readonly settings: AgentNetworkSettings
          readonly machine_dids: ReadonlyArray<string>
        }): Effect.fn.Return<AgentRegistration, NetworkUnavailable> {
          const fault = yield* nextFault
          if (fault?._tag === "unavailable") return yield* new NetworkUnavailable({ reason: fault.reason })
          if (fault?._tag === "refuse") return { state: "refused", error: fault.reason }
          const serving = (yield* Ref.get(nodes)).filter((n) => input.machine_dids.includes(n.machine_did))
          if (serving.length === 0) return { state: "refused", error: "none of the proposed nodes serves agents now" }
          return yield* Ref.modify(agents, (held): readonly [AgentRegistration, ReadonlyMap<string, RegisteredAgent>] => {
            const known = held.get(input.did)
            if (known?.revoked === true) return [{ state: "refused", error: `agent ${input.did} was revoked` }, held]
            if (known !== undefined && known.controller_did !== input.controller_did) {
              return [{ state: "refused", error: `agent ${input.did} is controlled by another identity` }, held]
            }
            const agent: RegisteredAgent = {
              did: input.did,
              controller_did: input.controller_did,
              wallet_address: simulatedWalletAddress(input.did),
              settings: input.settings,
              serving_nodes: serving,
              revoked: false,
              key_hashes: known?.key_hashes ?? []
            }
            return [
              { state: "registered", did: agent.did, controller_did: agent.controller_did, wallet_address: agent.wallet_address, serving_nodes: serving },
              new Map([...held, [input.did, agent]])
            ]
          })
        })

        const revokeAgent = (did: string) =>
          Ref.modify(agents, (held): readonly [AgentRevocation, ReadonlyMap<string, RegisteredAgent>] => {
            const known = held.get(did)
            if (known === undefined) return [{ state: "refused", error: `no agent ${did}` }, held]
            return [{ state: "revoked" }, new Map([...held, [did, { ...known, revoked: true }]])]
          })

        const issueAgentKey = (did: string) =>
          Effect.flatMap(generateSecret, (secret) => {
            const key = `nk_${secret.slice(4)}`
            return Ref.modify(agents, (held): readonly [string | undefined, ReadonlyMap<string, RegisteredAgent>] => {
              const known = held.get(did)
              if (known === undefined || known.revoked) return [undefined, held]
              return [key, new Map([...held, [did, { ...known, key_hashes: [...known.key_hashes, sha256Hex(key)] }]])]
            })
          })

        const control = SimulatedNetwork.of({
          refuseNext: (count, reason) =>
            Ref.update(faults, (queue) => [...queue, ...repeat(count, { _tag: "refuse", reason: reason ?? DEFAULT_REFUSAL_REASON })]),
          unavailableNext: (count, reason) =>
            Ref.update(faults, (queue) => [
              ...queue,
              ...repeat(count, { _tag: "unavailable", reason: reason ?? "the simulated network is unavailable" })
            ]),
          identities: Effect.map(Ref.get(held), (identities) => [...identities.values()]),
          agents: Ref.get(agents),
          setServingNodes: (count) => Ref.set(nodes, simulatedNodes(count))
        })
        return Context.make(SimulatedNetwork, control).pipe(
          Context.add(Network, Network.of({
            network: "simulated",
            createHumanIdentity,
            servingNodes: Ref.get(nodes),
            registerAgent,
            revokeAgent,
            issueAgentKey
          }))
        )
      })
    )

  /** The simulated network with the refusals SIMULATED_NETWORK_REFUSE_NEXT and _REASON ask for. */
  static readonly fromConfig: Layer.Layer<Network | SimulatedNetwork, Config.ConfigError> = Layer.unwrap(
    Effect.gen(function*() {
      return SimulatedNetwork.layer(yield* SimulatedNetworkConfig)
    })
  )
}
