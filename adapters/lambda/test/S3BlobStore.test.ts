/**
 * The blob contract on S3, against s3rver started by the test (s3Local.ts); plus the store's own
 * promises: a key prefix confines a store to part of a bucket, and the emulator is gone after.
 */
import { ListObjectsV2Command } from "@aws-sdk/client-s3"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as Net from "node:net"
import { BlobStore } from "@model-platform/core/ports/BlobStore"
import { blobStoreContract } from "@model-platform/test-harness/BlobContract"
import { BlobStoreS3, makeBlobStoreS3 } from "../src/S3BlobStore.ts"
import { type S3Local, s3LocalBucket } from "./s3Local.ts"

/** Every s3rver this file started, to check none is left running. */
const started: Array<S3Local> = []

blobStoreContract(
  "BlobStoreS3 on s3rver",
  Layer.unwrap(Effect.gen(function*() {
    const local = yield* s3LocalBucket()
    started.push(local.s3)
    yield* Effect.logInfo(`s3rver listening on ${local.s3.endpoint} after ${local.s3.startMillis} ms`)
    return BlobStoreS3({ client: local.client, bucket: local.bucket })
  }))
)

const text = (s: string) => ({ body: new TextEncoder().encode(s), contentType: "text/plain" })

const refused = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = Net.connect(port, "127.0.0.1")
    socket.once("connect", () => {
      socket.destroy()
      resolve(false)
    })
    socket.once("error", () => resolve(true))
  })

const isRunning = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

describe("BlobStoreS3", () => {
  it.live("a key prefix confines the store to its part of the bucket", () =>
    Effect.gen(function*() {
      const { bucket, client, s3 } = yield* s3LocalBucket("shared-bucket")
      started.push(s3)
      const tenantA = makeBlobStoreS3({ client, bucket, prefix: "tenants/a/" })
      const tenantB = makeBlobStoreS3({ client, bucket, prefix: "tenants/b/" })
      const whole = makeBlobStoreS3({ client, bucket })
      yield* tenantA.put("items/1", text("a1"))
      yield* tenantA.put("items/2", text("a2"))
      yield* tenantB.put("items/1", text("b1"))
      assert.deepStrictEqual(yield* tenantA.list(""), ["items/1", "items/2"], "keys come back without the prefix")
      assert.deepStrictEqual(yield* tenantB.list("items/"), ["items/1"])
      assert.strictEqual(new TextDecoder().decode((yield* tenantB.get("items/1"))?.body), "b1")
      assert.deepStrictEqual(yield* whole.list(""), ["tenants/a/items/1", "tenants/a/items/2", "tenants/b/items/1"])
      const raw = yield* Effect.promise(() => client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: "tenants/a/" })))
      assert.deepStrictEqual(raw.Contents?.map((o) => o.Key), ["tenants/a/items/1", "tenants/a/items/2"], "object keys carry the prefix")
      assert.strictEqual(yield* tenantA.deletePrefix(""), 2)
      assert.deepStrictEqual(yield* whole.list(""), ["tenants/b/items/1"], "the other tenant is untouched")
    }))

  it.live("the layer is a plain service: no connection is opened until used", () =>
    Effect.gen(function*() {
      const { bucket, client, s3 } = yield* s3LocalBucket("lazy-bucket")
      started.push(s3)
      const store = yield* Effect.provide(BlobStore.use(Effect.succeed), BlobStoreS3({ client, bucket }))
      assert.isUndefined(yield* store.get("nothing"))
    }))
})

describe("s3rver", () => {
  // vitest runs describe blocks of a file in order: this one runs after the suites above closed
  it("every s3rver started by this file is stopped", async () => {
    assert.isAtLeast(started.length, 1)
    for (const s3 of started) {
      assert.isFalse(isRunning(s3.pid), `s3rver child ${s3.pid} still running`)
      assert.isTrue(await refused(s3.port), `port ${s3.port} still open`)
    }
  })
})
