/**
 * Issue 22, finding 7: a dataset item is downloaded in constant memory. Through the real Node
 * server with its blobs on disk, a 200 MiB upload is read back by a client while the process's
 * live memory is measured (after a forced collection, LiveMemory.ts): the server streams the file
 * from disk as the client reads, so what it holds stays far below the file's size. And a download
 * stopped after its first bytes leaves no file open.
 */
import { MemoryPlatformStores } from "@model-platform/memory-stores/MemoryPlatformStores"
import { fixtureCatalogue } from "@model-platform/test-harness/Fixtures"
import { canCollect, liveBytes } from "@model-platform/contract-kit/LiveMemory"
import { patternBytes } from "@model-platform/contract-kit/BlobFixtures"
import { createHash } from "node:crypto"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { BlobStoreDisk } from "../src/DiskBlobStore.ts"
import { startNodeServer } from "./support.ts"

const MiB = 1024 * 1024
const SIZE = 200 * MiB

/** The item's bytes, made as they are used: 1 MiB chunks of a pattern seeded by their index. */
const body = function*() {
  for (let i = 0; i < SIZE / MiB; i++) yield patternBytes(MiB, i)
}

const sha256Of = (chunks: Iterable<Uint8Array>) => {
  const hash = createHash("sha256")
  for (const chunk of chunks) hash.update(chunk)
  return hash.digest("hex")
}

/**
 * POSTs `body()` through node:http, chunk by chunk as the socket takes them, on a connection of its
 * own. (fetch with a stream body kept every chunk it sent alive until the connection closed, which
 * would count against the server here.)
 */
const post = (url: string, headers: Record<string, string>) =>
  new Promise<{ readonly status: number; readonly json: any }>((resolve, reject) => {
    const request = Http.request(url, { method: "POST", agent: false, headers: { ...headers, connection: "close" } }, (response) => {
      let text = ""
      response.setEncoding("utf8").on("data", (part: string) => (text += part)).on("end", () =>
        resolve({ status: response.statusCode ?? 0, json: JSON.parse(text) }))
    })
    request.on("error", reject)
    void (async () => {
      for (const chunk of body()) {
        if (!request.write(chunk)) await new Promise((drained) => request.once("drain", drained))
      }
      request.end()
    })()
  })

/** Open file descriptors of this process (Linux). */
const openFiles = () => Fs.readdirSync("/proc/self/fd").length

describe("downloading a dataset item on the Node server, blobs on disk", () => {
  let dir: string
  let server: Awaited<ReturnType<typeof startNodeServer>>
  let auth: string
  let content: string
  let sha: string
  beforeAll(async () => {
    dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "download-blobs-"))
    server = await startNodeServer(fixtureCatalogue, MemoryPlatformStores, { platform: { blobs: BlobStoreDisk(dir, { fsync: false }) } })
    auth = `Bearer ${server.ownerSecret}`
    const dataset = await (await server.fetch("/datasets", {
      method: "POST",
      headers: { authorization: auth, "content-type": "application/json" },
      body: JSON.stringify({ name: "large", kind: "video" })
    })).json()
    sha = sha256Of(body())
    const upload = await post(`${server.url}/datasets/${dataset.id}/items?name=large.mp4`, {
      authorization: auth,
      "content-type": "video/mp4",
      "x-content-sha256": sha
    })
    const item = upload.json
    expect(upload.status, JSON.stringify(item)).toBe(201)
    expect(item.bytes).toBe(SIZE)
    content = `/datasets/${dataset.id}/items/${item.id}/content`
  }, 300_000)
  afterAll(async () => {
    await server?.close()
    Fs.rmSync(dir, { recursive: true, force: true })
  })

  it("a 200 MiB item arrives whole while the server holds far less than the file alive", async () => {
    const before = liveBytes()
    const res = await server.fetch(content, { headers: { authorization: auth } })
    expect(res.status).toBe(200)
    expect(res.headers.get("content-length")).toBe(String(SIZE))
    expect(res.headers.get("x-content-sha256")).toBe(sha)
    const hash = createHash("sha256")
    let bytes = 0
    let sampledAt = 0
    let peak = 0
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      hash.update(chunk)
      bytes += chunk.byteLength
      if (bytes - sampledAt >= 8 * MiB) {
        sampledAt = bytes
        peak = Math.max(peak, liveBytes() - before)
      }
    }
    expect(bytes).toBe(SIZE)
    expect(hash.digest("hex")).toBe(sha)
    // Read whole, the item alone is 200 MiB alive until its last byte is sent.
    expect(canCollect, "V8's gc could be forced").toBe(true)
    expect(peak, `live memory grew by ${(peak / MiB).toFixed(1)} MiB during the download`).toBeLessThan(SIZE / 8)
  }, 300_000)

  it.skipIf(!Fs.existsSync("/proc/self/fd"))("a client that stops after the first bytes leaves no file open on the server", async () => {
    const before = openFiles()
    for (let i = 0; i < 5; i++) {
      const controller = new AbortController()
      const res = await server.fetch(content, { headers: { authorization: auth }, signal: controller.signal })
      const reader = res.body!.getReader()
      expect((await reader.read()).done).toBe(false)
      controller.abort()
      await reader.read().catch(() => undefined)
    }
    // The server notices each connection closing, then closes its file.
    const deadline = Date.now() + 10_000
    while (openFiles() > before && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50))
    expect(openFiles()).toBeLessThanOrEqual(before)
  }, 60_000)
})
