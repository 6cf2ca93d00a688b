/**
 * The simulated network (core/src/ports/Network.ts): the built-in network until a real one is
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
import { sha256Hex } from "../Sha256.ts"
import {
  humanDid,
  type HumanIdentityRegistration,
  isDidId,
  Network,
  NetworkUnavailable
} from "../ports/Network.ts"

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
}

/** The operator's injected refusals, from the environment. */
export const SimulatedNetworkConfig = Config.all({
  refuseNext: Config.schema(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)), "SIMULATED_NETWORK_REFUSE_NEXT").pipe(
    Config.withDefault(0)
  ),
  refuseReason: Config.String("SIMULATED_NETWORK_REFUSE_REASON").pipe(Config.withDefault(DEFAULT_REFUSAL_REASON))
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
}>()("@model-platform/core/accounts/SimulatedNetwork") {
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
        const control = SimulatedNetwork.of({
          refuseNext: (count, reason) =>
            Ref.update(faults, (queue) => [...queue, ...repeat(count, { _tag: "refuse", reason: reason ?? DEFAULT_REFUSAL_REASON })]),
          unavailableNext: (count, reason) =>
            Ref.update(faults, (queue) => [
              ...queue,
              ...repeat(count, { _tag: "unavailable", reason: reason ?? "the simulated network is unavailable" })
            ]),
          identities: Effect.map(Ref.get(held), (identities) => [...identities.values()])
        })
        return Context.make(SimulatedNetwork, control).pipe(
          Context.add(Network, Network.of({ network: "simulated", createHumanIdentity }))
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
