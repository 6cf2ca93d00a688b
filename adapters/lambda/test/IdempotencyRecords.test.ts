/**
 * Idempotency records at rest (test-harness IdempotencyRecordsSuite.ts) through the Lambda handler,
 * read straight from the DynamoDB Local table. DynamoDB Local never runs TTL deletions: an expired
 * record is shown by its `ttl` being past (the store replaces it on the next claim).
 */
import { ScanCommand } from "@aws-sdk/lib-dynamodb"
import { fixtureCatalogue } from "@model-platform/test-harness/Fixtures"
import { idempotencyRecordsSuite } from "@model-platform/test-harness/IdempotencyRecordsSuite"
import { TTL_ATTRIBUTE } from "@model-platform/dynamodb-stores"
import { startLambda } from "./support.ts"

idempotencyRecordsSuite("lambda (API Gateway v2), DynamoDB Local", async (platform) => {
  const shell = await startLambda(fixtureCatalogue, { platform })
  const { client, tableName } = shell.dynamo
  return {
    ...shell,
    idempotencyRecords: async () => {
      const items: Array<Record<string, unknown>> = []
      let start: Record<string, unknown> | undefined
      do {
        const page = await client.send(new ScanCommand({ TableName: tableName, ExclusiveStartKey: start }))
        items.push(...(page.Items ?? []).filter((item) => String(item["pk"]).startsWith("IDEM#")))
        start = page.LastEvaluatedKey
      } while (start !== undefined)
      return items
    }
  }
}, { ttlAttribute: TTL_ATTRIBUTE })
