/**
 * Fieldwork under any interleaving (test-harness FieldworkProperty.ts, WithdrawalExportProperty.ts) on the Lambda shell's
 * stores: records in DynamoDB Local, blobs in S3 (s3rver).
 */
import { fieldworkProperty } from "@model-platform/test-harness/FieldworkProperty"
import { withdrawalExportProperty } from "@model-platform/test-harness/WithdrawalExportProperty"
import { Effect, Layer } from "effect"
import { DocumentStoresDynamo } from "@model-platform/dynamodb-stores"
import { BlobStoreS3 } from "../src/S3BlobStore.ts"
import { useDynamoLocal } from "../../dynamodb-stores/test/dynamoLocal.ts"
import { s3LocalBucket } from "./s3Local.ts"

const { freshTable } = useDynamoLocal("fieldwork-race")

fieldworkProperty(
  "DynamoDB Local and blobs in s3rver",
  Layer.mergeAll(
    DocumentStoresDynamo.pipe(Layer.provide(freshTable())),
    Layer.unwrap(Effect.map(s3LocalBucket(), ({ bucket, client }) => BlobStoreS3({ client, bucket })))
  ),
  15
)

withdrawalExportProperty(
  "DynamoDB Local and blobs in s3rver",
  Layer.mergeAll(
    DocumentStoresDynamo.pipe(Layer.provide(freshTable())),
    Layer.unwrap(Effect.map(s3LocalBucket(), ({ bucket, client }) => BlobStoreS3({ client, bucket })))
  ),
  15
)
