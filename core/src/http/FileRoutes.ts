/**
 * A dataset's files over plain routes rather than the HttpApi, whose bodies are JSON read whole
 * (docs/datasets.md "Uploads", "Downloads"), each with a platform key:
 * - POST /datasets/{id}/items?name=<file name> (`datasets:write`): one file into an upload dataset,
 *   streamed into the blob store as it arrives, never held whole, its SHA-256 computed on the way
 *   and checked against X-Content-Sha256; the request boundary (http/RequestLimits.ts) leaves its
 *   body unread and the stream is bounded here;
 * - GET /datasets/{id}/items/{item_id}/content (`datasets:read`): an item's bytes, streamed from
 *   the blob store chunk by chunk (`BlobStore.getStream`), never held whole: a 1 GiB item costs a
 *   chunk of memory, not a gigabyte.
 */
import { Clock, Effect, Stream } from "effect"
import { HttpRouter, type HttpServerRequest, HttpServerResponse } from "effect/http"
import { ApiKeys } from "../keys/ApiKeys.ts"
import { standingOf } from "../gateway/KeyStanding.ts"
import { errorResponse } from "./ErrorShape.ts"
import { type AreaError, refusalOf } from "./Refusals.ts"
import { generateId } from "../kernel/Ids.ts"
import { MAX_UPLOAD_BYTES } from "../kernel/Limits.ts"
import type { Permission } from "../keys/Permissions.ts"
import { BlobTooLarge } from "../datasets/BlobStore.ts"
import { textProblem } from "../kernel/Text.ts"
import { now } from "../kernel/Time.ts"
import { Datasets, datasetPrefix, toDatasetItem } from "../datasets/Datasets.ts"
import type { ItemRecord } from "../datasets/Records.ts"

/** The upload route's path: the one route whose body the request boundary does not read. */
export const UPLOAD_PATH = /^\/datasets\/[^/]+\/items$/

export const isUpload = (method: string, path: string) => method === "POST" && UPLOAD_PATH.test(path)

/** The routes as the fallback route reads an API (405 naming their methods beside the API's). */
export const FileRouteTable = {
  groups: {
    files: {
      endpoints: {
        upload: { method: "POST", path: "/datasets/:id/items" },
        content: { method: "GET", path: "/datasets/:id/items/:item_id/content" }
      }
    }
  }
}

/** The content types each kind of dataset takes. */
const KIND_TYPES = { audio: "audio/", image: "image/", video: "video/", text: "text/" } as const

interface Refusal {
  readonly status: number
  readonly code: string
  readonly message: string
}

const refusal = (status: number, code: string, message: string): Refusal => ({ status, code, message })

const refuse = (status: number, code: string, message: string) => Effect.fail(refusal(status, code, message))

/** An area's refusal answered with the status and code of the one mapping (Refusals.ts). */
const fromAreaError = (e: AreaError) => {
  const { code, status } = refusalOf(e)
  return refusal(status, code, e.message)
}

/** The caller's key, holding `permission`, and its account's dataset named in the path. */
const keyedDataset = (request: HttpServerRequest.HttpServerRequest, permission: Permission, datasetId: string) =>
  Effect.gen(function*() {
    const apiKeys = yield* ApiKeys
    const datasets = yield* Datasets
    const authorization = /^Bearer\s+(.+)$/i.exec(request.headers["authorization"]?.trim() ?? "")
    if (authorization === null) return yield* refuse(401, "missing_api_key", "Send a platform key as `Authorization: Bearer <key>`.")
    const caller = yield* apiKeys.authenticate(authorization[1]!.trim()).pipe(Effect.mapError(fromAreaError))
    // 401, or 403 for a key whose agent's delegation, plan or rental has ended (gateway/KeyStanding.ts).
    yield* standingOf(caller.key, yield* Clock.currentTimeMillis).pipe(Effect.mapError(fromAreaError))
    if (!caller.key.permissions.includes(permission)) {
      return yield* refuse(403, "key_lacks_permission", `This key lacks the "${permission}" permission.`)
    }
    return yield* datasets.ownedRecord(caller.account.id, datasetId).pipe(Effect.mapError(fromAreaError))
  })

/** A route's answer: `respond`'s on success, else the refusal in the platform's error shape. */
const answer = <A, R>(
  request: HttpServerRequest.HttpServerRequest,
  handle: (segments: ReadonlyArray<string>, url: URL) => Effect.Effect<A, Refusal, R>,
  respond: (a: A) => HttpServerResponse.HttpServerResponse
) =>
  Effect.gen(function*() {
    const url = new URL(request.url, "http://x")
    const segments = url.pathname.split("/").map((s) => decodeURIComponent(s))
    const result = yield* Effect.result(handle(segments, url))
    return result._tag === "Success"
      ? respond(result.success)
      : errorResponse(url.pathname, result.failure.status, result.failure.message, result.failure.code)
  })

export const UploadRoute = HttpRouter.add("POST", "/datasets/:id/items", (request) =>
  answer(request, (segments, url) =>
    Effect.gen(function*() {
      const datasets = yield* Datasets
      const datasetId = segments[2] ?? ""
      const dataset = yield* keyedDataset(request, "datasets:write", datasetId)
      if (dataset.source !== "upload") {
        return yield* refuse(409, "not_an_upload_dataset", `Dataset ${datasetId} is fed by ${dataset.source}; files go only to upload datasets.`)
      }
      const contentType = (request.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase()
      if (!contentType.startsWith(KIND_TYPES[dataset.kind]) || contentType.length > 100) {
        return yield* refuse(415, "unsupported_media_type", `A ${dataset.kind} dataset takes ${KIND_TYPES[dataset.kind]}* files.`)
      }
      const name = url.searchParams.get("name") ?? ""
      if (name.length === 0 || name.length > 255 || name.includes("/") || textProblem(name) !== undefined) {
        return yield* refuse(400, "invalid_name", "Name the file: ?name=<1 to 255 characters, no slash>.")
      }
      const expected = request.headers["x-content-sha256"] ?? ""
      if (!/^[0-9a-fA-F]{64}$/.test(expected)) {
        return yield* refuse(400, "missing_content_sha256", "Send X-Content-Sha256: the hex SHA-256 of the body.")
      }
      const itemId = yield* generateId("it")
      const key = `${datasetPrefix(datasetId)}items/${itemId}`
      const written = yield* datasets.blobs.putStream(
        key,
        Stream.mapError(request.stream, () => refusal(400, "invalid_request", "The request body could not be read.")),
        { contentType, maxBytes: MAX_UPLOAD_BYTES }
      ).pipe(Effect.catchTag("BlobTooLarge", (e: BlobTooLarge) =>
        refuse(413, "payload_too_large", `The file is larger than ${e.maxBytes} bytes, the most one upload takes.`)))
      if (written.sha256 !== expected.toLowerCase()) {
        yield* datasets.blobs.delete(key)
        return yield* refuse(400, "checksum_mismatch", `The body's SHA-256 is ${written.sha256}, not the X-Content-Sha256 sent.`)
      }
      const item: ItemRecord = {
        id: itemId,
        dataset_id: datasetId,
        blob_key: key,
        name,
        content_type: contentType,
        bytes: written.bytes,
        sha256: written.sha256,
        duration_ms: null,
        participant_id: null,
        prompt_id: null,
        status: "pending_review",
        review_note: null,
        reviewed_at: null,
        meta: null,
        created_at: yield* now,
        version: 0
      }
      return yield* datasets.recordItem(item).pipe(Effect.mapError(fromAreaError))
    }), (item) => HttpServerResponse.jsonUnsafe(toDatasetItem(item), { status: 201, headers: { "cache-control": "no-store" } })))

export const DownloadRoute = HttpRouter.add("GET", "/datasets/:id/items/:item_id/content", (request) =>
  answer(request, (segments) =>
    Effect.gen(function*() {
      const datasets = yield* Datasets
      const [datasetId, itemId] = [segments[2] ?? "", segments[4] ?? ""]
      yield* keyedDataset(request, "datasets:read", datasetId)
      const item = yield* datasets.items.get(itemId)
      const blob = item === undefined || item.dataset_id !== datasetId ? undefined : yield* datasets.blobs.getStream(item.blob_key)
      if (item === undefined || blob === undefined) return yield* refuse(404, "item_not_found", `No item ${itemId} in dataset ${datasetId}.`)
      return { item, blob }
    }), ({ blob, item }) =>
    HttpServerResponse.stream(blob.body, {
      contentType: item.content_type,
      contentLength: blob.bytes,
      headers: {
        "cache-control": "no-store",
        "x-content-sha256": item.sha256,
        "content-disposition": `attachment; filename*=UTF-8''${encodeURIComponent(item.name)}`
      }
    })))
