/**
 * A dataset's deletion resumed after a crash at any step (test-harness DatasetDeletionProperty.ts)
 * on the Lambda shell's stores: records in DynamoDB Local, blobs in S3 (s3rver).
 */
import { datasetDeletionProperty } from "@model-platform/test-harness/DatasetDeletionProperty"
import { Effect, Layer } from "effect"
import { DocumentStoresDynamo } from "@model-platform/dynamodb-stores"
import { BlobStoreS3 } from "../src/S3BlobStore.ts"
import { useDynamoLocal } from "../../dynamodb-stores/test/dynamoLocal.ts"
import { s3LocalBucket } from "./s3Local.ts"

const { freshTable } = useDynamoLocal("deletion-test")

datasetDeletionProperty(
  "DynamoDB Local and blobs in s3rver",
  Layer.mergeAll(
    DocumentStoresDynamo.pipe(Layer.provide(freshTable())),
    Layer.unwrap(Effect.map(s3LocalBucket(), ({ bucket, client }) => BlobStoreS3({ client, bucket })))
  )
)
