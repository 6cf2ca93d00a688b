/**
 * Datasets and the Fieldwork participant flow (test-harness FieldworkSuite.ts) through the Lambda
 * handler on DynamoDB Local, with its blobs in S3 (s3rver). The suite looks into the bucket
 * through a store of its own, as another function would.
 */
import { CreateBucketCommand } from "@aws-sdk/client-s3"
import { fieldworkSuite } from "@model-platform/test-harness/FieldworkSuite"
import { fixtureCatalogue } from "@model-platform/test-harness/Fixtures"
import { Effect } from "effect"
import { BlobStoreS3, makeBlobStoreS3 } from "../src/S3BlobStore.ts"
import { s3rverClient, startS3rver } from "./s3Local.ts"
import { startLambda } from "./support.ts"

fieldworkSuite("lambda (API Gateway v2), DynamoDB Local, blobs in s3rver", async () => {
  const s3 = await startS3rver()
  const client = s3rverClient(s3.endpoint)
  const bucket = "fieldwork-test"
  await client.send(new CreateBucketCommand({ Bucket: bucket }))
  const lambda = await startLambda(fixtureCatalogue, { platform: { blobs: BlobStoreS3({ client, bucket }) } })
  const look = makeBlobStoreS3({ client, bucket })
  return {
    ...lambda,
    blobs: (prefix: string) => Effect.runPromise(look.list(prefix)),
    blob: (key: string) => Effect.runPromise(look.get(key)).then((b) => b?.body),
    close: async () => {
      await lambda.close()
      client.destroy()
      await s3.stop()
    }
  }
})
