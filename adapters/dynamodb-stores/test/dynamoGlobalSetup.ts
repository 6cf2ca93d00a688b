/**
 * vitest's global setup (vitest.config.ts): one DynamoDB Local for the whole run, which every test
 * borrows through startDynamoLocal (dynamoLocal.ts) and makes its own tables on. Java starts in the
 * background: a run without DynamoDB tests does not wait for it, and startDynamoLocal waits until
 * it answers (or starts the test's own, should Java have lost its port).
 */
import type { TestProject } from "vitest/node"
import { freePort, launchDynamoLocal } from "./dynamoLocal.ts"

export default async function setup(project: TestProject) {
  const shared = launchDynamoLocal(await freePort())
  // No Java: nothing is shared, and each DynamoDB test says why its own would not start.
  const failed = await Promise.race([shared.spawnError, new Promise<undefined>((resolve) => setTimeout(resolve, 200))])
  project.provide("dynamoLocalEndpoint", failed === undefined ? shared.endpoint : "")
  return () => shared.stop()
}
