/**
 * The blob contract on S3, against s3rver started by the test (s3Local.ts); plus the store's own
 * promises: a key prefix confines a store to part of a bucket, streamed bodies go in parts of
 * PART_BYTES and a refused one aborts its multipart upload, and the emulator is gone after.
 *
 * s3rver 3.7.1 does multipart uploads but neither AbortMultipartUpload (405 MethodNotAllowed) nor
 * ListMultipartUploads (NotImplemented): the abort is checked on the requests the store sends.
 */
import { ListMultipartUploadsCommand, ListObjectsV2Command, type S3Client } from "@aws-sdk/client-s3"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
import * as Net from "node:net"
import { BlobStore, BlobTooLarge } from "@model-platform/core/datasets"
import { BodyBroke, blobStoreContract, chunked, interruptAfter, patternBytes } from "@model-platform/contract-kit/BlobContract"
import { BlobStoreS3Lazy } from "../src/LazyBlobStoreS3.ts"
import { BlobStoreS3, makeBlobStoreS3, PART_BYTES } from "../src/S3BlobStore.ts"
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

// As lambda.ts serves it: the store's module and the SDK imported at the first operation.
blobStoreContract(
  "BlobStoreS3Lazy on s3rver",
  Layer.unwrap(Effect.gen(function*() {
    const local = yield* s3LocalBucket()
    started.push(local.s3)
    return BlobStoreS3Lazy(local.bucket, () => local.client)
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

interface Sent {
  readonly command: string
  readonly input: { readonly Key?: string; readonly UploadId?: string; readonly ContentLength?: number; readonly PartNumber?: number }
  /** "ok", the error's name, or "pending" while under way. */
  outcome: string
}

/** Every command `client` sends from now on, with how it ended. */
const recordCommands = (client: S3Client): Array<Sent> => {
  const sent: Array<Sent> = []
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const entry: Sent = { command: context.commandName ?? "?", input: args.input as Sent["input"], outcome: "pending" }
      sent.push(entry)
      try {
        const output = await next(args)
        entry.outcome = "ok"
        return output
      } catch (error) {
        entry.outcome = error instanceof Error ? error.name : String(error)
        throw error
      }
    },
    { step: "initialize", name: "recordCommands" }
  )
  return sent
}

const commandsFor = (sent: ReadonlyArray<Sent>, key: string) => sent.filter((s) => s.input.Key === key)

describe("BlobStoreS3", () => {
  it.live("a streamed body over one part is uploaded in parts of PART_BYTES; one of PART_BYTES is one PutObject", () =>
    Effect.gen(function*() {
      const { bucket, client, s3 } = yield* s3LocalBucket("parts-bucket")
      started.push(s3)
      const sent = recordCommands(client)
      const store = makeBlobStoreS3({ client, bucket })
      const options = { contentType: "audio/wav", maxBytes: 1 << 30 }
      const large = patternBytes(2 * PART_BYTES + 1024 * 1024, 3)
      yield* store.putStream("large.wav", chunked(large, 64 * 1024), options)
      const commands = commandsFor(sent, "large.wav")
      assert.deepStrictEqual(commands.map((s) => s.command), [
        "CreateMultipartUploadCommand",
        "UploadPartCommand",
        "UploadPartCommand",
        "UploadPartCommand",
        "CompleteMultipartUploadCommand"
      ])
      const uploads = commands.filter((s) => s.command === "UploadPartCommand")
      assert.deepStrictEqual(uploads.map((s) => [s.input.PartNumber, s.input.ContentLength]), [[1, PART_BYTES], [2, PART_BYTES], [3, 1024 * 1024]])
      assert.isTrue(commands.every((s) => s.outcome === "ok"))
      const got = yield* store.get("large.wav")
      assert.strictEqual(got?.contentType, "audio/wav")
      assert.isTrue(Buffer.from(got!.body).equals(Buffer.from(large)), "the parts joined are the body")

      yield* store.putStream("one-part.bin", chunked(patternBytes(PART_BYTES), 64 * 1024), options)
      assert.deepStrictEqual(commandsFor(sent, "one-part.bin").map((s) => s.command), ["PutObjectCommand"])
    }))

  it.live("a streamed body that fails, grows too large or is interrupted after a part aborts its upload", () =>
    Effect.gen(function*() {
      const { bucket, client, s3 } = yield* s3LocalBucket("abort-bucket")
      started.push(s3)
      const sent = recordCommands(client)
      const store = makeBlobStoreS3({ client, bucket })
      const sixMiB = () => chunked(patternBytes(6 * 1024 * 1024), 64 * 1024)
      const options = { contentType: "application/octet-stream", maxBytes: 1 << 30 }

      const broke = new BodyBroke({ at: 6 * 1024 * 1024 })
      assert.strictEqual(yield* Effect.flip(store.putStream("failing", sixMiB().pipe(Stream.concat(Stream.fail(broke))), options)), broke)
      const tooLarge = yield* Effect.flip(store.putStream("too-large", sixMiB(), { ...options, maxBytes: 6 * 1024 * 1024 - 1 }))
      assert.instanceOf(tooLarge, BlobTooLarge)
      yield* interruptAfter(store, "interrupted", sixMiB())

      for (const key of ["failing", "too-large", "interrupted"]) {
        const commands = commandsFor(sent, key)
        assert.deepStrictEqual(
          commands.map((s) => s.command),
          ["CreateMultipartUploadCommand", "UploadPartCommand", "AbortMultipartUploadCommand"],
          key
        )
        const [, part, abort] = commands
        assert.strictEqual(part!.outcome, "ok", `${key}: the part was uploaded`)
        assert.strictEqual(abort!.input.UploadId, part!.input.UploadId, `${key}: the same upload is aborted`)
        assert.isUndefined(yield* store.get(key), key)
      }
      assert.deepStrictEqual(yield* store.list(""), [])
      // where the emulator lists multipart uploads, none is left open
      const listed = yield* Effect.promise(() =>
        client.send(new ListMultipartUploadsCommand({ Bucket: bucket })).then((answer) => answer.Uploads ?? [], () => undefined)
      )
      if (listed !== undefined) assert.deepStrictEqual(listed, [], "no multipart upload left open")
    }))

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
