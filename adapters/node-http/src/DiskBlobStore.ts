/**
 * The blob port on the local disk: the Node shell's twin of the S3 store.
 *
 * Layout. A key `datasets/ds_1/items/it 1.wav` lives under `rootDir` as
 *
 *   datasets/ds_1/items/it 1.wav@blob.json      the record: { contentType, body, size }
 *   datasets/ds_1/items/it 1.wav@<uuid>.bin     the body, byte for byte
 *
 * Folders are the key's segments and every file name carries an `@` suffix, with `%` and `@` in
 * segments escaped as `%25` and `%40`: a folder can never be mistaken for a blob, so `a/b` and
 * `a/b/c` can both exist, as on S3. Everything else (spaces, unicode) stays readable.
 *
 * Safety. A key is refused (a defect, `InvalidBlobKey`) when it is empty, absolute, has an empty,
 * `.` or `..` segment, holds a NUL, or has a segment too long for a file name; the final path is
 * checked to lie under `rootDir` too. A prefix is not a key: `list` and `deletePrefix` answer
 * nothing for a prefix that no valid key can start with, without touching the disk.
 *
 * Atomicity. `put` writes the body to a fresh file (flushed with fsync), then writes the record
 * to a temporary file and renames it over `@blob.json`: a reader sees the old blob or the new one,
 * body and content type together, never a torn write, also after a crash. The replaced body is
 * removed afterwards. `delete` takes the record away with one rename first. Two concurrent puts
 * of the same key can leave an unreferenced `.bin` file behind (never listed nor read).
 *
 * Streams. `putStream` writes the body chunk by chunk to `<name>@<uuid>.tmp` (hashing it on the
 * way), flushes it, renames it to `<name>@<uuid>.bin` and then writes the record as `put` does.
 * A body that fails, is interrupted or passes `maxBytes` has its `.tmp` file removed (and empty
 * folders pruned); the record, and so the blob already at the key, is untouched. `getStream` reads
 * the record, then, when its body is pulled, the body file through a read stream of 64 KiB chunks
 * (closed when the stream ends, fails or is interrupted); a file a concurrent delete or put took
 * away in between is a defect.
 *
 * Other I/O failures are defects, as the port says.
 */
import { Effect, Exit, Layer, Schema, Stream } from "effect"
import { createHash, randomUUID } from "node:crypto"
import { createReadStream } from "node:fs"
import * as Fs from "node:fs/promises"
import * as Path from "node:path"
import {
  type Blob,
  BlobStore,
  type BlobStream,
  BlobTooLarge,
  type PutStreamOptions,
  type PutStreamResult
} from "@model-platform/core/datasets"

/** A key the disk store refuses to map to a path: a programming error, so a defect. */
export class InvalidBlobKey extends Error {
  override readonly name = "InvalidBlobKey"
  readonly key: string
  constructor(key: string, reason: string) {
    super(`invalid blob key ${JSON.stringify(key)}: ${reason}`)
    this.key = key
  }
}

export interface DiskBlobStoreOptions {
  /** Flush bodies and records to the device before answering (default true). */
  readonly fsync?: boolean
}

const RECORD = "@blob.json"
/** `@` + a UUID + `.bin` or `.tmp`: the longest suffix a blob's files carry. */
const LONGEST_SUFFIX = 1 + 36 + 4
const NAME_MAX = 255
/** The chunks a body is read in by `getStream`. */
const STREAM_CHUNK_BYTES = 64 * 1024

const Record = Schema.Struct({
  contentType: Schema.String,
  /** The body's file name, in the same folder. */
  body: Schema.String,
  size: Schema.Number
})
type Record = typeof Record.Type
const decodeRecord = Schema.decodeUnknownSync(Schema.fromJsonString(Record))

// ---------------------------------------------------------------------------------------------
// keys and paths

const encodeSegment = (segment: string): string =>
  segment.replace(/[%@]/g, (c) => (c === "%" ? "%25" : "%40"))

const decodeSegment = (name: string): string =>
  name.replace(/%(25|40)/g, (_, hex: string) => (hex === "25" ? "%" : "@"))

/** Why `segment` can not be a path segment, or undefined when it can. */
const segmentProblem = (segment: string, maxBytes: number): string | undefined => {
  if (segment === "") return "empty segment (a leading, trailing or double slash)"
  if (segment === "." || segment === "..") return `'${segment}' segment`
  if (segment.includes("\0")) return "NUL character"
  if (Buffer.byteLength(encodeSegment(segment)) > maxBytes) return `segment longer than ${maxBytes} bytes`
  return undefined
}

interface Location {
  /** The folder holding the blob's files. */
  readonly dir: string
  /** The encoded last segment: every file of the blob starts with it. */
  readonly base: string
}

const locate = (root: string, key: string): Location => {
  if (key === "") throw new InvalidBlobKey(key, "empty key")
  const segments = key.split("/")
  segments.forEach((segment, i) => {
    const problem = segmentProblem(segment, i === segments.length - 1 ? NAME_MAX - LONGEST_SUFFIX : NAME_MAX)
    if (problem !== undefined) throw new InvalidBlobKey(key, problem)
  })
  const encoded = segments.map(encodeSegment)
  const dir = Path.join(root, ...encoded.slice(0, -1))
  const file = Path.join(dir, encoded[encoded.length - 1] + RECORD)
  const relative = Path.relative(root, file)
  if (relative.startsWith("..") || Path.isAbsolute(relative)) throw new InvalidBlobKey(key, "path outside the store")
  return { dir, base: encoded[encoded.length - 1]! }
}

// ---------------------------------------------------------------------------------------------
// file helpers

const errorCode = (error: unknown): string | undefined =>
  typeof error === "object" && error !== null && "code" in error ? String(error.code) : undefined

/** The result of `f`, or `fallback` when the file or folder is not there. */
const ifPresent = async <A, B>(f: () => Promise<A>, fallback: B): Promise<A | B> => {
  try {
    return await f()
  } catch (error) {
    const code = errorCode(error)
    if (code === "ENOENT" || code === "ENOTDIR") return fallback
    throw error
  }
}

const writeNew = async (path: string, data: Uint8Array | string, fsync: boolean): Promise<void> => {
  const handle = await Fs.open(path, "wx")
  try {
    await handle.writeFile(data)
    if (fsync) await handle.sync()
  } finally {
    await handle.close()
  }
}

const writeAll = async (handle: Fs.FileHandle, data: Uint8Array): Promise<void> => {
  for (let offset = 0; offset < data.byteLength;) {
    offset += (await handle.write(data, offset, data.byteLength - offset)).bytesWritten
  }
}

const syncDir = async (dir: string): Promise<void> => {
  const handle = await Fs.open(dir, "r")
  try {
    await handle.sync()
  } finally {
    await handle.close()
  }
}

const readRecord = (path: string): Promise<Record | undefined> =>
  ifPresent(async () => decodeRecord(await Fs.readFile(path, "utf8")), undefined)

// ---------------------------------------------------------------------------------------------
// the store

const makeDiskBlobStore = (rootDir: string, options: DiskBlobStoreOptions) =>
  Effect.gen(function*() {
    const root = Path.resolve(rootDir)
    const fsync = options.fsync ?? true
    yield* Effect.promise(() => Fs.mkdir(root, { recursive: true }))

    /** Removes empty folders from `dir` up to (not including) the root. */
    const prune = async (dir: string): Promise<void> => {
      for (let current = dir; current !== root && current.startsWith(root + Path.sep); current = Path.dirname(current)) {
        try {
          await Fs.rmdir(current)
        } catch {
          return // not empty, already gone, or recreated by a put: stop here
        }
      }
    }

    /** Makes the blob's folder and a new file `name` in it. */
    const openNew = async (dir: string, name: string): Promise<Fs.FileHandle> => {
      // a concurrent delete may prune the folder between mkdir and open: try again
      for (let attempt = 1;; attempt++) {
        try {
          await Fs.mkdir(dir, { recursive: true })
          return await Fs.open(Path.join(dir, name), "wx")
        } catch (error) {
          if (errorCode(error) === "ENOENT" && attempt < 5) continue
          throw error
        }
      }
    }

    /** Points the blob's record at `record.body` (a complete file), then removes the body it replaced. */
    const commit = async (dir: string, base: string, record: Record): Promise<void> => {
      const recordPath = Path.join(dir, base + RECORD)
      const previous = await readRecord(recordPath)
      const temporary = Path.join(dir, `${base}@${randomUUID()}.tmp`)
      await writeNew(temporary, JSON.stringify(record), fsync)
      await Fs.rename(temporary, recordPath)
      if (fsync) await syncDir(dir)
      if (previous !== undefined && previous.body !== record.body) {
        await Fs.rm(Path.join(dir, Path.basename(previous.body)), { force: true })
      }
    }

    const put = async (key: string, blob: Blob): Promise<void> => {
      const { base, dir } = locate(root, key)
      const bodyName = `${base}@${randomUUID()}.bin`
      const handle = await openNew(dir, bodyName)
      try {
        await writeAll(handle, blob.body)
        if (fsync) await handle.sync()
      } finally {
        await handle.close()
      }
      await commit(dir, base, { contentType: blob.contentType, body: bodyName, size: blob.body.byteLength })
    }

    const putStream = <E>(
      key: string,
      body: Stream.Stream<Uint8Array, E>,
      { contentType, maxBytes }: PutStreamOptions
    ): Effect.Effect<PutStreamResult, E | BlobTooLarge> =>
      Effect.suspend(() => {
        const { base, dir } = locate(root, key)
        const id = randomUUID()
        const partial = `${base}@${id}.tmp`
        const bodyName = `${base}@${id}.bin`
        const hash = createHash("sha256")
        let bytes = 0
        const write = (handle: Fs.FileHandle) =>
          Stream.runForEach(body, (chunk) => {
            if (bytes + chunk.byteLength > maxBytes) return Effect.fail(new BlobTooLarge({ maxBytes }))
            bytes += chunk.byteLength
            hash.update(chunk)
            // uninterruptible: the handle is closed only after the write it started
            return Effect.uninterruptible(Effect.promise(() => writeAll(handle, chunk)))
          })
        const finish = (handle: Fs.FileHandle) =>
          Effect.promise(async (): Promise<PutStreamResult> => {
            if (fsync) await handle.sync()
            await handle.close()
            await Fs.rename(Path.join(dir, partial), Path.join(dir, bodyName))
            await commit(dir, base, { contentType, body: bodyName, size: bytes })
            return { bytes, sha256: hash.digest("hex") }
          })
        return Effect.acquireUseRelease(
          Effect.promise(() => openNew(dir, partial)),
          (handle) => write(handle).pipe(Effect.andThen(Effect.uninterruptible(finish(handle)))),
          (handle) => Effect.promise(() => handle.close())
        ).pipe(
          Effect.onExit((exit) =>
            Exit.isSuccess(exit) ? Effect.void : Effect.promise(async () => {
              await Fs.rm(Path.join(dir, partial), { force: true })
              await prune(dir)
            })
          )
        )
      })

    const get = async (key: string): Promise<Blob | undefined> => {
      const { base, dir } = locate(root, key)
      const recordPath = Path.join(dir, base + RECORD)
      // a concurrent put removes the body it replaced: read the new record then
      for (let attempt = 1; attempt <= 5; attempt++) {
        const record = await readRecord(recordPath)
        if (record === undefined) return undefined
        const body = await ifPresent(() => Fs.readFile(Path.join(dir, Path.basename(record.body))), undefined)
        if (body !== undefined) {
          return { body: new Uint8Array(body.buffer, body.byteOffset, body.byteLength), contentType: record.contentType }
        }
      }
      return undefined
    }

    const getStream = async (key: string): Promise<BlobStream | undefined> => {
      const { base, dir } = locate(root, key)
      const record = await readRecord(Path.join(dir, base + RECORD))
      if (record === undefined) return undefined
      const path = Path.join(dir, Path.basename(record.body))
      // Opened when pulled: a stream never run holds no file open.
      const body = Stream.suspend(() =>
        Stream.fromAsyncIterable(createReadStream(path, { highWaterMark: STREAM_CHUNK_BYTES }) as AsyncIterable<Uint8Array>, (e) => e)
      ).pipe(Stream.orDie)
      return { contentType: record.contentType, bytes: record.size, body }
    }

    /** True when this call deleted the blob. */
    const remove = async (key: string): Promise<boolean> => {
      const { base, dir } = locate(root, key)
      // take the record with one rename: whichever version was current is the one deleted
      const taken = Path.join(dir, `${base}@${randomUUID()}.tmp`)
      const took = await ifPresent(() => Fs.rename(Path.join(dir, base + RECORD), taken).then(() => true), false)
      if (!took) return false
      const record = await readRecord(taken)
      await Fs.rm(taken, { force: true })
      if (record !== undefined) await Fs.rm(Path.join(dir, Path.basename(record.body)), { force: true })
      await prune(dir)
      return true
    }

    const list = async (prefix: string): Promise<Array<string>> => {
      const cut = prefix.lastIndexOf("/")
      const folder = cut < 0 ? [] : prefix.slice(0, cut).split("/")
      const rest = prefix.slice(cut + 1)
      // no valid key lies below a folder that is not a valid path
      if (folder.some((segment) => segmentProblem(segment, NAME_MAX) !== undefined)) return []
      const keys: Array<string> = []
      const walk = async (dir: string, keyBase: string, startsWith: string): Promise<void> => {
        const entries = await ifPresent(() => Fs.readdir(dir, { withFileTypes: true }), [])
        const below: Array<Promise<void>> = []
        for (const entry of entries) {
          if (entry.isFile() && entry.name.endsWith(RECORD)) {
            const name = decodeSegment(entry.name.slice(0, -RECORD.length))
            if (name.startsWith(startsWith)) keys.push(keyBase + name)
          } else if (entry.isDirectory() && !entry.name.includes("@")) {
            const name = decodeSegment(entry.name)
            if (name.startsWith(startsWith)) below.push(walk(Path.join(dir, entry.name), `${keyBase}${name}/`, ""))
          }
        }
        await Promise.all(below)
      }
      await walk(Path.join(root, ...folder.map(encodeSegment)), folder.map((s) => `${s}/`).join(""), rest)
      return keys.sort()
    }

    const deletePrefix = async (prefix: string): Promise<number> => {
      const keys = await list(prefix)
      let deleted = 0
      for (let i = 0; i < keys.length; i += 32) {
        const results = await Promise.all(keys.slice(i, i + 32).map(remove))
        deleted += results.filter(Boolean).length
      }
      return deleted
    }

    return BlobStore.of({
      put: (key, blob) => Effect.promise(() => put(key, blob)),
      putStream,
      get: (key) => Effect.promise(() => get(key)),
      getStream: (key) => Effect.promise(() => getStream(key)),
      delete: (key) => Effect.promise(() => remove(key).then(() => undefined)),
      list: (prefix) => Effect.promise(() => list(prefix)),
      deletePrefix: (prefix) => Effect.promise(() => deletePrefix(prefix))
    })
  })

/**
 * Blobs under `rootDir` (made when missing). Store failures and refused keys are defects.
 */
export const BlobStoreDisk = (rootDir: string, options: DiskBlobStoreOptions = {}): Layer.Layer<BlobStore> =>
  Layer.effect(BlobStore, makeDiskBlobStore(rootDir, options))
