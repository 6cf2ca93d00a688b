/**
 * Fieldwork's participant page end to end on the Lambda shell (the shared flow of
 * adapters/test-harness/src/FieldworkBrowserFlow.ts): the API function over DynamoDB Local with
 * its takes in s3rver, behind lambdaBrowser.ts's stand-in for API Gateway (without the accounts
 * functions this flow does not use). PUBLIC_URL is the stand-in's address, since a Lambda
 * sees every request as https: the page's same-origin calls come from the origin the key lists.
 * The flow looks into the bucket through a store of its own, as another function would.
 * Screenshots in adapters/lambda/test-artifacts/fieldwork/ (gitignored).
 */
import { CreateBucketCommand } from "@aws-sdk/client-s3"
import { fieldworkBrowserFlow } from "@model-platform/test-harness/FieldworkBrowserFlow"
import { fixtureCatalogue } from "@model-platform/test-harness/Fixtures"
import { Effect } from "effect"
import { resolve } from "node:path"
import { type LambdaHandler, makeHandler } from "../src/Handler.ts"
import { BlobStoreS3, makeBlobStoreS3 } from "../src/S3BlobStore.ts"
import { startDynamoLocal, tableOn } from "../../dynamodb-stores/test/dynamoLocal.ts"
import { s3rverClient, startS3rver } from "./s3Local.ts"
import { startStandInGateway } from "./lambdaBrowser.ts"

fieldworkBrowserFlow({
  shell: "lambda, DynamoDB Local, blobs in s3rver",
  artifacts: resolve(import.meta.dirname, "../test-artifacts/fieldwork"),
  start: async ({ clock }) => {
    const [local, s3] = await Promise.all([startDynamoLocal(), startS3rver()])
    const dynamo = await tableOn(local)
    const client = s3rverClient(s3.endpoint)
    const bucket = "fieldwork-browser"
    await client.send(new CreateBucketCommand({ Bucket: bucket }))
    let api: LambdaHandler | undefined
    const gateway = await startStandInGateway(() => api!)
    const url = `http://127.0.0.1:${gateway.port}`
    api = makeHandler({
      catalogue: fixtureCatalogue,
      ownerEmail: "owner@test.local",
      publicUrl: url,
      dynamo,
      platform: { clock, blobs: BlobStoreS3({ client, bucket }) }
    })
    const owner = await api.firstStart()
    const look = makeBlobStoreS3({ client, bucket })
    return {
      url,
      accounts: `${url}/accounts`,
      ownerKey: owner!.key.secret,
      blobs: {
        list: (prefix) => Effect.runPromise(look.list(prefix)),
        get: (key) => Effect.runPromise(Effect.map(look.get(key), (blob) => blob?.body))
      },
      stop: async () => {
        await gateway.close()
        await api?.dispose()
        dynamo.client.destroy()
        client.destroy()
        await Promise.all([local.stop(), s3.stop()])
      }
    }
  }
})
