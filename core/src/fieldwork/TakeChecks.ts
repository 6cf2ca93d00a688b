/**
 * What a take must be before anything is stored (docs/fieldwork.md "A take"), checked in the order
 * the doc's table gives: size, content type, prompt, checksum, meta, then the WAV's own format and
 * length against the project's capture. The participant's consent and limits come after, on the
 * participant record (Ingest.ts).
 */
import { Effect, Schema } from "effect"
import type { ItemRecord } from "../datasets/Records.ts"
import { exceedsJsonDepth } from "../kernel/Limits.ts"
import { sha256, toHex } from "../kernel/Sha256.ts"
import { textProblem } from "../kernel/Text.ts"
import { type IngestError, ingestError, type IngestErrorReason } from "./FieldworkErrors.ts"
import type { ProjectRecord } from "./Records.ts"
import { TakeMeta } from "./Schemas.ts"
import { readWav } from "./Wav.ts"

/** Fails with the ingest flow's refusal of this reason (FieldworkErrors.ts; its status: http/IngestRefusals.ts). */
export const refuse = (reason: IngestErrorReason, message: string): Effect.Effect<never, IngestError> =>
  Effect.fail(ingestError(reason, message))

/** Bytes of X-Fieldwork-Meta at most (base64url text). */
export const MAX_META_CHARS = 4096

/** A take as the route received it. */
export interface TakeUpload {
  readonly promptId: string | undefined
  readonly contentType: string | undefined
  readonly contentSha256: string | undefined
  readonly meta: string | undefined
  readonly body: Uint8Array
}

const decodeMeta = (text: string): unknown => {
  if (text.length > MAX_META_CHARS || !/^[A-Za-z0-9_-]*={0,2}$/.test(text)) return undefined
  try {
    const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/"))
    const json = new TextDecoder("utf-8", { fatal: true }).decode(Uint8Array.from(binary, (c) => c.charCodeAt(0)))
    const value: unknown = JSON.parse(json)
    // Stored as JSON by every store: no NUL or lone surrogate anywhere, and not deep.
    return exceedsJsonDepth(value, 8) || hasBadText(value) ? undefined : value
  } catch {
    return undefined
  }
}

/** Whether any key or string inside a parsed JSON value is not client text (Text.ts). */
const hasBadText = (value: unknown): boolean => {
  const stack: Array<unknown> = [value]
  while (stack.length > 0) {
    const v = stack.pop()
    if (typeof v === "string") {
      if (textProblem(v) !== undefined) return true
    } else if (typeof v === "object" && v !== null) {
      for (const [k, child] of Object.entries(v)) {
        if (textProblem(k) !== undefined) return true
        stack.push(child)
      }
    }
  }
  return false
}
const decodeTakeMeta = Schema.decodeUnknownOption(TakeMeta)


/** The take's checked facts, or the first refusal. */
export const checkTake = (project: ProjectRecord, upload: TakeUpload, maxTakeBytes: number) =>
  Effect.gen(function*() {
    if (upload.body.length > maxTakeBytes) {
      return yield* refuse("payload_too_large", `The take is larger than ${maxTakeBytes} bytes, the most this platform takes.`)
    }
    if ((upload.contentType ?? "").split(";")[0]!.trim().toLowerCase() !== "audio/wav") {
      return yield* refuse("unsupported_media_type", "Send the take as `Content-Type: audio/wav`.")
    }
    if (upload.promptId === undefined || upload.promptId === "") {
      return yield* refuse("missing_prompt", "Name the prompt the take answers: POST /ingest/items?prompt=<prompt id>.")
    }
    const promptId = upload.promptId
    if (!project.prompts.some((p) => p.id === promptId)) {
      return yield* refuse("prompt_not_found", `This project has no prompt ${promptId.slice(0, 64)}.`)
    }
    if (upload.contentSha256 === undefined || !/^[0-9a-fA-F]{64}$/.test(upload.contentSha256)) {
      return yield* refuse("missing_content_sha256", "Send X-Content-Sha256: the hex SHA-256 of the body.")
    }
    const digest = toHex(sha256(upload.body))
    if (digest !== upload.contentSha256.toLowerCase()) {
      return yield* refuse("checksum_mismatch", `The body's SHA-256 is ${digest}, not the X-Content-Sha256 sent.`)
    }
    let meta: ItemRecord["meta"] = null
    if (upload.meta !== undefined) {
      const decoded = decodeTakeMeta(decodeMeta(upload.meta))
      if (decoded._tag === "None") {
        return yield* refuse("invalid_meta", "X-Fieldwork-Meta must be base64url JSON {capture?, answers?} of at most 4 KB.")
      }
      meta = decoded.value
    }
    const wav = readWav(upload.body)
    if ("code" in wav) return yield* refuse(wav.code, wav.message)
    if (wav.channels !== 1) return yield* refuse("wav_not_mono", `The take has ${wav.channels} channels; send mono (1 channel).`)
    if (wav.bitsPerSample !== 16) {
      return yield* refuse("wav_not_16_bit", `The take has ${wav.bitsPerSample}-bit samples; send 16-bit PCM.`)
    }
    if (wav.sampleRateHz !== project.capture.sample_rate_hz) {
      return yield* refuse(
        "wav_sample_rate",
        `The take is at ${wav.sampleRateHz} Hz; this project records at ${project.capture.sample_rate_hz} Hz.`
      )
    }
    const seconds = wav.durationMs / 1000
    if (project.capture.min_seconds !== null && seconds < project.capture.min_seconds) {
      return yield* refuse("take_too_short", `The take lasts ${seconds} s; at least ${project.capture.min_seconds} s.`)
    }
    if (project.capture.max_seconds !== null && seconds > project.capture.max_seconds) {
      return yield* refuse("take_too_long", `The take lasts ${seconds} s; at most ${project.capture.max_seconds} s.`)
    }
    return { digest, meta, promptId, wav }
  })
