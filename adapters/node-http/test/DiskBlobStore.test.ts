/**
 * The blob contract on the local-disk store, in a temporary directory; plus the disk's own
 * promises: keys that would leave the root are refused, the layout stays readable, a reopened
 * directory holds what was written.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Layer, Stream } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { BlobStore, BlobTooLarge } from "@model-platform/core/datasets"
import { BodyBroke, blobStoreContract, chunked, interruptAfter, patternBytes } from "@model-platform/contract-kit/BlobContract"
import { BlobStoreDisk, InvalidBlobKey } from "../src/DiskBlobStore.ts"

/** A fresh directory, removed when the scope closes. */
const tempDir = Effect.acquireRelease(
  Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "diskblobs-test-"))),
  (dir) => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true }))
)

blobStoreContract("BlobStoreDisk", Layer.unwrap(Effect.map(tempDir, (dir) => BlobStoreDisk(dir))))

/** Every file under `dir`, relative, sorted. */
const filesUnder = (dir: string): Array<string> =>
  (Fs.readdirSync(dir, { recursive: true, withFileTypes: true }) as Array<Fs.Dirent>)
    .filter((entry) => entry.isFile())
    .map((entry) => Path.relative(dir, Path.join(entry.parentPath, entry.name)))
    .sort()

/** The store a layer builds (the disk store holds no resource to release). */
const open = (layer: Layer.Layer<BlobStore>) => Effect.provide(BlobStore.use(Effect.succeed), layer)

const blob = { body: new TextEncoder().encode("secret"), contentType: "text/plain" }

describe("BlobStoreDisk", () => {
  it.live("refuses keys that would leave the root or are not paths, touching nothing", () =>
    Effect.gen(function*() {
      const parent = yield* tempDir
      const root = Path.join(parent, "store")
      const store = yield* open(BlobStoreDisk(root))
      const refused = [
        "../escape.txt",
        "a/../../escape.txt",
        "a/../b",
        "..",
        "/etc/passwd",
        "/absolute",
        "a//b",
        "a/",
        "",
        "./a",
        "a/./b",
        "nul\0byte",
        `${"x".repeat(300)}.txt`
      ]
      for (const key of refused) {
        const attempts: ReadonlyArray<readonly [string, Effect.Effect<unknown>]> = [
          ["put", store.put(key, blob)],
          ["get", store.get(key)],
          ["delete", store.delete(key)]
        ]
        for (const [op, effect] of attempts) {
          const exit = yield* Effect.exit(effect)
          assert.isTrue(Exit.isFailure(exit) && Cause.hasDies(exit.cause), `${op} ${JSON.stringify(key)}: expected a defect`)
          if (Exit.isFailure(exit)) {
            const defect = Cause.squash(exit.cause)
            assert.instanceOf(defect, InvalidBlobKey, `${op} ${JSON.stringify(key)}`)
          }
        }
      }
      assert.deepStrictEqual(filesUnder(parent), [], "nothing was written anywhere")
      // a prefix is not a key: one that no valid key can start with lists nothing
      yield* store.put("inside/a.txt", blob)
      assert.deepStrictEqual(yield* store.list("../"), [])
      assert.deepStrictEqual(yield* store.list("inside/../"), [])
      assert.deepStrictEqual(yield* store.list("/"), [])
      assert.strictEqual(yield* store.deletePrefix("../"), 0)
      assert.strictEqual(yield* store.deletePrefix("inside/../inside/"), 0)
      assert.deepStrictEqual(yield* store.list(""), ["inside/a.txt"])
      assert.deepStrictEqual(yield* store.list("ins"), ["inside/a.txt"])
    }))

  it.live("a blob and a folder of the same name coexist; names stay readable; `@` and `%` are escaped", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      const store = yield* open(BlobStoreDisk(root, { fsync: false }))
      yield* store.put("a/b", { body: Uint8Array.of(1), contentType: "application/x-one" })
      yield* store.put("a/b/c", { body: Uint8Array.of(2), contentType: "application/x-two" })
      yield* store.put("a/b@blob.json", { body: Uint8Array.of(3), contentType: "application/x-three" })
      yield* store.put("a/100%@x/y z ü.wav", { body: Uint8Array.of(4), contentType: "audio/wav" })
      assert.deepStrictEqual(yield* store.list("a/"), ["a/100%@x/y z ü.wav", "a/b", "a/b/c", "a/b@blob.json"])
      assert.deepStrictEqual(Array.from((yield* store.get("a/b"))?.body ?? []), [1])
      assert.deepStrictEqual(Array.from((yield* store.get("a/b@blob.json"))?.body ?? []), [3])
      const files = filesUnder(root)
      assert.strictEqual(files.length, 8, `a record and a body per blob: ${files.join(", ")}`)
      assert.include(files, Path.join("a", "100%25%40x", "y z ü.wav@blob.json"))
      const record = JSON.parse(Fs.readFileSync(Path.join(root, "a", "b@blob.json"), "utf8"))
      assert.strictEqual(record.contentType, "application/x-one")
      assert.deepStrictEqual([...Fs.readFileSync(Path.join(root, "a", record.body))], [1], "the body file holds the bytes")
      assert.strictEqual(yield* store.deletePrefix("a/"), 4)
      assert.deepStrictEqual(Fs.readdirSync(root), [], "empty folders are pruned")
    }))

  it.live("an overwrite leaves one body file; a reopened directory holds the blobs", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      const first = yield* open(BlobStoreDisk(root))
      for (let i = 0; i < 5; i++) yield* first.put("x/item", { body: Uint8Array.of(i), contentType: `v/${i}` })
      assert.strictEqual(filesUnder(root).length, 2, "one record, one body")
      const again = yield* open(BlobStoreDisk(root))
      const got = yield* again.get("x/item")
      assert.strictEqual(got?.contentType, "v/4")
      assert.deepStrictEqual(Array.from(got?.body ?? []), [4])
    }))

  it.live("concurrent puts and gets of one key always read a whole version", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      const store = yield* open(BlobStoreDisk(root, { fsync: false }))
      const version = (i: number) => ({ body: new Uint8Array(10_000).fill(i), contentType: `v/${i}` })
      yield* store.put("k", version(0))
      const writes = Effect.forEach([1, 2, 3, 4, 5, 6, 7, 8], (i) => store.put("k", version(i)), { concurrency: 4 })
      const reads = Effect.forEach(Array.from({ length: 40 }, (_, i) => i), () =>
        Effect.gen(function*() {
          const got = yield* store.get("k")
          assert.isDefined(got)
          const n = Number(got!.contentType.slice(2))
          assert.isTrue(got!.body.every((b) => b === n), "body and content type of one version")
        }), { concurrency: 4 })
      yield* Effect.all([writes, reads], { concurrency: 2 })
      assert.deepStrictEqual(yield* store.list(""), ["k"])
    }))

  it.live("putStream leaves a record and a body file; a refused one leaves no temporary file or folder", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      const store = yield* open(BlobStoreDisk(root))
      const options = { contentType: "application/octet-stream", maxBytes: 4096 }
      yield* store.putStream("d/item.bin", chunked(patternBytes(4000), 1000), options)
      const before = filesUnder(root)
      assert.deepStrictEqual(before.map((f) => f.replace(/@[0-9a-f-]{36}\./, "@<uuid>.")).sort(), [Path.join("d", "item.bin@<uuid>.bin"), Path.join("d", "item.bin@blob.json")])
      const temporaries = () => filesUnder(root).filter((f) => f.endsWith(".tmp"))
      for (const key of ["d/item.bin", "d/new.bin", "e/deeper/new.bin"]) {
        const tooLarge = yield* Effect.flip(store.putStream(key, chunked(patternBytes(5000), 1000), options))
        assert.instanceOf(tooLarge, BlobTooLarge, key)
        const broke = new BodyBroke({ at: 3000 })
        const failing = chunked(patternBytes(3000), 1000).pipe(Stream.concat(Stream.fail(broke)))
        assert.strictEqual(yield* Effect.flip(store.putStream(key, failing, options)), broke, key)
        yield* interruptAfter(store, key, chunked(patternBytes(3000), 1000), Effect.sync(() => {
          assert.strictEqual(temporaries().length, 1, `${key}: the body is being written to a temporary file`)
        }))
        assert.deepStrictEqual(filesUnder(root), before, `${key}: only the blob that was there`)
      }
      assert.deepStrictEqual(Fs.readdirSync(root), ["d"], "folders made for refused writes are pruned")
    }))
})
