/**
 * The isolation matrix (test-harness IsolationMatrix.ts) through the Lambda handler on DynamoDB
 * Local; the catalogue's machines point at a reference machine so both accounts have usage.
 */
// The reference machine is the Node adapter's test dependency; the Lambda tests reach its source.
import { startReferenceMachine } from "../../reference-machine/src/ReferenceMachine.ts"
import { fixtureCatalogue } from "@model-platform/test-harness/Fixtures"
import { isolationMatrixSuite, withMachinesAt } from "@model-platform/test-harness/IsolationMatrix"
import { startLambda } from "./support.ts"

const models = [{ id: "chat-small", kind: "chat" as const }, { id: "embed-small", kind: "embeddings" as const }]

isolationMatrixSuite("lambda (API Gateway v2), DynamoDB Local", async () => {
  const machine = await startReferenceMachine({ port: 0, models })
  const shell = await startLambda(withMachinesAt(fixtureCatalogue, machine.url))
  return { ...shell, close: async () => {
    await shell.close()
    await machine.close()
  } }
})
