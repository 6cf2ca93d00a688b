/**
 * The isolation matrix (IsolationMatrix.ts) through the in-process web handler on the memory
 * stores, its machines pointing at a reference machine so both accounts have usage, and its
 * accounts able to propose agents so both hold one.
 */
// The reference machine is the Node adapter's test dependency; this test reaches its source.
import { startReferenceMachine } from "../../reference-machine/src/ReferenceMachine.ts"
import { fixtureCatalogue } from "../src/Fixtures.ts"
import { SimulatedNetwork } from "@model-platform/core/agents"
import { startInProcess } from "../src/InProcess.ts"
import { isolationMatrixSuite, withMachinesAt } from "../src/IsolationMatrix.ts"
import { pendingApprovalsLayer } from "../src/PendingApprovals.ts"

const FIXTURE_MACHINE_MODELS = [{ id: "chat-small", kind: "chat" as const }, { id: "embed-small", kind: "embeddings" as const }]

isolationMatrixSuite("in-process, memory stores", async () => {
  const machine = await startReferenceMachine({ port: 0, models: FIXTURE_MACHINE_MODELS })
  // Accounts with a ready identity, an account service that takes approvals and nodes serving
  // agents: each world holds an agent (awaiting approval).
  const shell = await startInProcess(
    withMachinesAt(fixtureCatalogue, machine.url),
    undefined,
    { agentApprovals: pendingApprovalsLayer(), network: SimulatedNetwork.layer() },
    { readyIdentities: true }
  )
  return { ...shell, close: async () => {
    await shell.close()
    await machine.close()
  } }
})
