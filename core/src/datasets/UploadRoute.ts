/**
 * POST /datasets/{id}/items?name=<file name>: one file into an upload dataset (docs/datasets.md
 * "Uploads"), streamed into the blob store as it arrives, never held whole, its SHA-256 computed
 * on the way and checked against X-Content-Sha256. A plain route rather than the HttpApi, whose
 * bodies are read whole; the request boundary (api/RequestLimits.ts) leaves its body unread and
 * the stream is bounded here. A platform key with `datasets:write`.
 */
import { Effect, Stream } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { ApiKeys } from "../ApiKeys.ts"
import { errorResponse } from "../api/ErrorShape.ts"
import * as Errors from "../Errors.ts"
import { generateId } from "../Keys.ts"
import { MAX_UPLOAD_BYTES } from "../Limits.ts"
import { BlobTooLarge } from "../ports/BlobStore.ts"
import { textProblem } from "../Text.ts"
import { now } from "../Time.ts"
import { Datasets, datasetPrefix, toDatasetItem } from "./Datasets.ts"
import type { ItemRecord } from "./Records.ts"

/** The upload route's path: the one route whose body the request boundary does not read. */
export const UPLOAD_PATH = /^\/datasets\/[^/]+\/items$/

export const isUpload = (method: string, path: string) => method === "POST" && UPLOAD_PATH.test(path)

/** The route as the fallback route reads an API (405 naming POST beside GET for other methods). */
export const UploadRouteTable = { groups: { upload: { endpoints: { upload: { method: "POST", path: "/datasets/:id/items" } } } } }

/** The content types each kind of dataset takes. */
const KIND_TYPES = { audio: "audio/", image: "image/", video: "video/", text: "text/" } as const

interface Refusal {
  readonly status: number
  readonly code: string
  readonly message: string
}

const refusal = (status: number, code: string, message: string): Refusal => ({ status, code, message })

const refuse = (status: number, code: string, message: string) => Effect.fail(refusal(status, code, message))

const fromPlatformError = (e: Errors.PlatformError, status: number) => refusal(status, e.error.code, e.error.message)

export const UploadRoute = HttpRouter.add("POST", "/datasets/:id/items", (request) =>
  Effect.gen(function*() {
    const apiKeys = yield* ApiKeys
    const datasets = yield* Datasets
    const url = new URL(request.url, "http://x")
    const datasetId = decodeURIComponent(url.pathname.split("/")[2] ?? "")
    const answer = yield* Effect.result(Effect.gen(function*() {
      const authorization = /^Bearer\s+(.+)$/i.exec(request.headers["authorization"]?.trim() ?? "")
      if (authorization === null) return yield* refuse(401, "missing_api_key", "Send a platform key as `Authorization: Bearer <key>`.")
      const caller = yield* apiKeys.authenticate(authorization[1]!.trim()).pipe(Effect.mapError((e) => fromPlatformError(e, 401)))
      if (!caller.key.permissions.includes("datasets:write")) {
        return yield* refuse(403, "key_lacks_permission", `This key lacks the "datasets:write" permission.`)
      }
      const dataset = yield* datasets.ownedRecord(caller.account.id, datasetId).pipe(Effect.mapError((e) => fromPlatformError(e, 404)))
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
      return yield* datasets.recordItem(item).pipe(Effect.mapError((e) => fromPlatformError(e, 409)))
    }))
    return answer._tag === "Success"
      ? HttpServerResponse.jsonUnsafe(toDatasetItem(answer.success), { status: 201, headers: { "cache-control": "no-store" } })
      : errorResponse(url.pathname, answer.failure.status, answer.failure.message, answer.failure.code)
  }))
