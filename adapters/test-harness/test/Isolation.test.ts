/**
 * The isolation matrix (IsolationMatrix.ts) through the in-process web handler on the memory
 * stores, its machines pointing at a reference machine so both accounts have usage.
 */
// The reference machine is the Node adapter's test dependency; this test reaches its source.
import { startReferenceMachine } from "../../reference-machine/src/ReferenceMachine.ts"
import { fixtureCatalogue } from "../src/Fixtures.ts"
import { startInProcess } from "../src/InProcess.ts"
import { isolationMatrixSuite, withMachinesAt } from "../src/IsolationMatrix.ts"

const FIXTURE_MACHINE_MODELS = [{ id: "chat-small", kind: "chat" as const }, { id: "embed-small", kind: "embeddings" as const }]

isolationMatrixSuite("in-process, memory stores", async () => {
  const machine = await startReferenceMachine({ port: 0, models: FIXTURE_MACHINE_MODELS })
  const shell = await startInProcess(withMachinesAt(fixtureCatalogue, machine.url))
  return { ...shell, close: async () => {
    await shell.close()
    await machine.close()
  } }
})
