/**
 * A worker's side of the network over IPC (WorkerNetwork.test.ts): one network call through
 * `networkOverIpc`, its outcome sent to the parent (or printed when there is no IPC channel).
 */
import { Network, simulatedNodes } from "@model-platform/core/agents"
import { Effect } from "effect"
import { networkOverIpc } from "../src/WorkerNetwork.ts"

const [op, did] = process.argv.slice(2) as [string, string]
const call = Effect.gen(function*() {
  const network = yield* Network
  switch (op) {
    case "register":
      return yield* network.registerAgent({
        did,
        controller_did: "did:svc:human:owner",
        settings: { capabilities: ["inference"], max_transaction_wei: 10n ** 18n, max_daily_wei: 5n * 10n ** 18n, expires_in_days: 30 },
        machine_dids: [simulatedNodes(1)[0]!.machine_did]
      })
    case "key":
      return yield* network.issueAgentKey(did)
    case "revoke":
      return yield* network.revokeAgent(did)
    default:
      return yield* Effect.die(new Error(`unknown op ${op}`))
  }
})
const outcome = await Effect.runPromise(call.pipe(
  Effect.map((value) => ({ value: value ?? null })),
  Effect.catchTag("NetworkUnavailable", (error) => Effect.succeed({ unavailable: error.reason })),
  Effect.provide(networkOverIpc)
))
if (process.send !== undefined) process.send({ type: "outcome", outcome }, () => process.exit(0))
else {
  console.log(JSON.stringify(outcome))
  process.exit(0)
}
