/**
 * The simulated network with several worker processes (Workers.ts). The simulated network
 * (core/src/agents/SimulatedNetwork.ts) keeps the agents it registers, their revocations and keys in
 * its process's memory: one per worker would let an agent registered through one worker be unknown
 * to the next. So the primary holds the one network and each worker reaches it over the cluster's
 * IPC channel, as it would reach a real network: an answer is the primary's network's answer, and
 * no answer within NETWORK_TIMEOUT_MS (the primary gone) is NetworkUnavailable, which every caller
 * already takes as "try again later".
 */
import { type AgentNetworkSettings, Network, NetworkUnavailable } from "@model-platform/core/agents"
import { Effect, Layer } from "effect"

/** How long a worker waits for the primary's network to answer. */
export const NETWORK_TIMEOUT_MS = 10_000

type NetworkCall =
  | { readonly op: "createHumanIdentity"; readonly id: string }
  | { readonly op: "servingNodes" }
  | {
    readonly op: "registerAgent"
    readonly input: {
      readonly did: string
      readonly controller_did: string
      readonly settings: AgentNetworkSettings
      readonly machine_dids: ReadonlyArray<string>
    }
  }
  | { readonly op: "revokeAgent"; readonly did: string }
  | { readonly op: "issueAgentKey"; readonly did: string }

interface NetworkRequest {
  readonly type: "network"
  readonly id: number
  readonly call: NetworkCall
}

export interface NetworkAnswer {
  readonly type: "network-answer"
  readonly id: number
  readonly value?: unknown
  /** NetworkUnavailable's reason. */
  readonly unavailable?: string
}

const isRequest = (message: unknown): message is NetworkRequest =>
  typeof message === "object" && message !== null && (message as { type?: unknown }).type === "network"

const run = (network: Network["Service"], call: NetworkCall): Effect.Effect<unknown, NetworkUnavailable> => {
  switch (call.op) {
    case "createHumanIdentity":
      return network.createHumanIdentity(call.id)
    case "servingNodes":
      return network.servingNodes
    case "registerAgent":
      return network.registerAgent(call.input)
    case "revokeAgent":
      return network.revokeAgent(call.did)
    case "issueAgentKey":
      return network.issueAgentKey(call.did)
  }
}

/**
 * The primary's side: answers a worker's network message with `network` (the one simulated
 * network) through `reply` (to that worker); any other message is not its (false).
 */
export const answerNetworkCall = (network: Network["Service"], reply: (answer: NetworkAnswer) => void, message: unknown): boolean => {
  if (!isRequest(message)) return false
  void Effect.runPromise(
    run(network, message.call).pipe(
      Effect.match({
        onSuccess: (value): NetworkAnswer => ({ type: "network-answer", id: message.id, value }),
        onFailure: (error): NetworkAnswer => ({ type: "network-answer", id: message.id, unavailable: error.reason })
      })
    )
  ).then(reply)
  return true
}

/** A worker's side: the Network port, each call sent to the primary's network. */
export const networkOverIpc: Layer.Layer<Network> = Layer.sync(Network, () => {
  let next = 1
  const waiting = new Map<number, (answer: NetworkAnswer) => void>()
  process.on("message", (message: NetworkAnswer) => {
    if (typeof message !== "object" || message === null || message.type !== "network-answer") return
    waiting.get(message.id)?.(message)
    waiting.delete(message.id)
  })
  const ask = <A>(call: NetworkCall): Effect.Effect<A, NetworkUnavailable> =>
    Effect.callback<A, NetworkUnavailable>((resume) => {
      const id = next++
      const unavailable = (reason: string) => resume(Effect.fail(new NetworkUnavailable({ reason })))
      const timer = setTimeout(() => {
        waiting.delete(id)
        unavailable("the network did not answer in time")
      }, NETWORK_TIMEOUT_MS)
      waiting.set(id, (answer) => {
        clearTimeout(timer)
        if (answer.unavailable !== undefined) unavailable(answer.unavailable)
        else resume(Effect.succeed(answer.value as A))
      })
      if (process.send === undefined || !process.connected) {
        clearTimeout(timer)
        waiting.delete(id)
        return unavailable("the network cannot be reached (the primary process is gone)")
      }
      process.send({ type: "network", id, call } satisfies NetworkRequest)
      return Effect.sync(() => {
        clearTimeout(timer)
        waiting.delete(id)
      })
    })
  return Network.of({
    network: "simulated",
    createHumanIdentity: (id) => ask({ op: "createHumanIdentity", id }),
    servingNodes: ask({ op: "servingNodes" }),
    registerAgent: (input) => ask({ op: "registerAgent", input }),
    revokeAgent: (did) => ask({ op: "revokeAgent", did }),
    issueAgentKey: (did) => ask({ op: "issueAgentKey", did })
  })
})
