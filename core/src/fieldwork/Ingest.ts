/**
 * The participant flow's use-cases (docs/fieldwork.md "The participant flow"), behind an ingest
 * key: the project as a participant sees it, challenges, participants, consent, takes and
 * withdrawal. Every refusal is an `IngestError` by reason (FieldworkErrors.ts), which the routes
 * answer in the platform's error shape with the status of http/IngestRefusals.ts; a refused take
 * stores nothing.
 */
import { Clock, Context, Effect, Layer, Schema } from "effect"
import { Datasets } from "../datasets/Datasets.ts"
import type { ItemRecord } from "../datasets/Records.ts"
import { hashSecret } from "../keys/Keys.ts"
import { base64url, generateId, randomBytes } from "../kernel/Ids.ts"
import { DocumentStores } from "../kernel/DocumentStores.ts"
import { updateDocument } from "../kernel/Documents.ts"
import { RateLimitStore, windowStartOf } from "../kernel/RateLimitStore.ts"
import { MAX_TAKE_BYTES } from "../kernel/Limits.ts"
import { now, toTimestamp } from "../kernel/Time.ts"
import { idFromHash } from "./Projects.ts"
import { solves } from "./ProofOfWork.ts"
import { answersProblem, participantState, participantView, projectView, takeView } from "./IngestViews.ts"
import {
  ChallengeDocuments,
  DeviceDocuments,
  deviceRecordId,
  erased,
  IngestKeyDocuments,
  isErased,
  type IngestKeyRecord,
  ParticipantDocuments,
  type ParticipantRecord,
  ProjectDocuments,
  type ProjectRecord
} from "./Records.ts"
import { type CreateParticipant, DeviceId, type GiveConsent } from "./Schemas.ts"
import { ingestError } from "./FieldworkErrors.ts"
import { checkTake, refuse, type TakeUpload } from "./TakeChecks.ts"

/** A challenge stays valid this long after it is issued. */
export const CHALLENGE_TTL_MS = 10 * 60 * 1000

/**
 * Challenges one ingest key is given a minute, across processes: ten a second is more than any
 * study's participants start, and a script asking faster stores no more records than that.
 */
export const CHALLENGES_PER_MINUTE = 600

/** The visible start of a participant token, `mpt_` then 43 base64url characters. */
export const PARTICIPANT_TOKEN_PREFIX = "mpt_"

/** What a call carries that says who it is from. */
export interface IngestCaller {
  readonly key: IngestKeyRecord
  readonly project: ProjectRecord
}

const isDeviceId = Schema.is(DeviceId)

export interface IngestOptions {
  /** The platform's public base URL (PUBLIC_URL): its origin is the platform's own. */
  readonly publicUrl?: string | undefined
  /**
   * The largest take this shell can receive, when less than MAX_TAKE_BYTES (Lambda: its request
   * limit): shown to participants as capture.max_bytes and refused above it.
   */
  readonly maxTakeBytes?: number | undefined
}

const make = (options: IngestOptions) => Effect.gen(function*() {
  const stores = yield* DocumentStores
  const datasets = yield* Datasets
  const projects = stores.of(ProjectDocuments)
  const keys = stores.of(IngestKeyDocuments)
  const participants = stores.of(ParticipantDocuments)
  const devices = stores.of(DeviceDocuments)
  const challenges = stores.of(ChallengeDocuments)
  const rateLimits = yield* RateLimitStore

  /**
   * The key and project behind a call from `origin` (the Origin header, or the platform's own
   * origin for a same-origin browser call; undefined: neither).
   */
  const authenticate = (bearer: string | undefined, origin: string | undefined) =>
    Effect.gen(function*() {
      if (bearer === undefined || bearer === "") {
        return yield* refuse("missing_ingest_key", "Send the project's ingest key as `Authorization: Bearer <key>`.")
      }
      const unknown = refuse("invalid_ingest_key", "This ingest key is not valid (unknown or revoked).")
      if (!bearer.startsWith("mpi_") || bearer.length > 128) return yield* unknown
      const hash = yield* hashSecret(bearer)
      const key = yield* keys.get(idFromHash("ik", hash))
      if (key === undefined || key.key_hash !== hash || key.revoked_at !== null) return yield* unknown
      if (origin === undefined || !key.origins.includes(origin)) {
        return yield* refuse(
          "origin_not_allowed",
          origin === undefined
            ? "This ingest key works only from the web origins listed on it, and the call named none."
            : `This ingest key does not work from ${origin.slice(0, 200)}: it is not one of the key's origins.`
        )
      }
      const project = yield* projects.get(key.project_id)
      if (project === undefined) return yield* unknown
      return { key, project } satisfies IngestCaller
    })

  const maxTakeBytes = Math.min(MAX_TAKE_BYTES, options.maxTakeBytes ?? MAX_TAKE_BYTES)
  const project = (caller: IngestCaller) => Effect.succeed(projectView(caller.project, maxTakeBytes))

  const challenge = (caller: IngestCaller) =>
    Effect.gen(function*() {
      const at = yield* Clock.currentTimeMillis
      const issued = yield* rateLimits.hit(`ingest-challenge:${caller.key.id}`, windowStartOf(at, 60_000), 60_000)
      if (issued > CHALLENGES_PER_MINUTE) {
        return yield* refuse(
          "too_many_challenges",
          `This ingest key has been given ${CHALLENGES_PER_MINUTE} challenges this minute; ask again in a minute.`
        )
      }
      const record = {
        id: `ch_${base64url(yield* randomBytes(24))}`,
        project_id: caller.project.id,
        difficulty: caller.project.challenge_difficulty,
        expires_at: toTimestamp(at + CHALLENGE_TTL_MS),
        used_at: null,
        created_at: toTimestamp(at),
        version: 0
      }
      yield* challenges.insert(record)
      return { challenge: record.id, algorithm: "sha256" as const, difficulty: record.difficulty, expires_at: record.expires_at }
    })

  /** Spends the challenge, or says why it cannot be. A wrong nonce does not spend it. */
  const spendChallenge = (caller: IngestCaller, id: string, nonce: string) =>
    Effect.gen(function*() {
      const found = yield* challenges.get(id)
      if (found === undefined || found.project_id !== caller.project.id) {
        return yield* refuse("challenge_not_found", "Unknown challenge: get one from GET /ingest/challenge.")
      }
      const at = yield* now
      if (found.expires_at <= at) return yield* refuse("challenge_expired", "This challenge has expired: get a new one.")
      if (found.used_at !== null) return yield* refuse("challenge_used", "This challenge has been used: get a new one.")
      if (!solves(found.id, nonce, found.difficulty)) {
        return yield* refuse(
          "challenge_not_solved",
          `SHA-256 of challenge + nonce does not start with ${found.difficulty} zero bits.`
        )
      }
      if (!(yield* challenges.swap({ ...found, used_at: at, version: found.version + 1 }))) {
        return yield* refuse("challenge_used", "This challenge has been used: get a new one.")
      }
    })

  /** Counts the participant on the device, within participants_per_device. */
  const countOnDevice = (caller: IngestCaller, deviceId: string, participantId: string) =>
    Effect.gen(function*() {
      const limit = caller.project.limits.participants_per_device
      const full = refuse("device_limit_reached", `This device has started the ${limit} participant(s) the project allows.`)
      const id = deviceRecordId(caller.project.id, deviceId)
      for (let attempt = 0; attempt < 5; attempt++) {
        const counted = yield* updateDocument(devices, id, (d) =>
          d.participants.length >= limit ? full : Effect.succeed({ ...d, participants: [...d.participants, participantId] }))
        if (counted !== undefined) return
        if (limit < 1) return yield* full
        // The device's first participant: another may insert the record at the same moment, and
        // the store refuses a duplicate (a defect); then the record exists, and is counted above.
        const inserted = yield* Effect.exit(devices.insert({
          id,
          project_id: caller.project.id,
          participants: [participantId],
          created_at: yield* now,
          version: 0
        }))
        if (inserted._tag === "Success") return
        if ((yield* devices.get(id)) === undefined) return yield* Effect.failCause(inserted.cause)
      }
      return yield* Effect.die(new Error(`device ${id} could not be counted`))
    })

  const createParticipant = (caller: IngestCaller, body: CreateParticipant, deviceId: string | undefined) =>
    Effect.gen(function*() {
      if (deviceId !== undefined && !isDeviceId(deviceId)) {
        return yield* refuse("invalid_device_id", "X-Device-Id must be 16 to 64 characters of A-Z a-z 0-9 _ -.")
      }
      const answers = body.answers ?? {}
      const problem = answersProblem(caller.project.questions, answers)
      if (problem !== undefined) return yield* refuse("invalid_answers", problem)
      yield* spendChallenge(caller, body.challenge, body.nonce)
      const token = PARTICIPANT_TOKEN_PREFIX + base64url(yield* randomBytes(32))
      const hash = yield* hashSecret(token)
      const id = idFromHash("par", hash)
      if (deviceId !== undefined) yield* countOnDevice(caller, deviceId, id)
      yield* participants.insert({
        id,
        project_id: caller.project.id,
        account_id: caller.project.account_id,
        dataset_id: caller.project.dataset_id,
        token_hash: hash,
        device_id: deviceId ?? null,
        country: body.country,
        region: body.region ?? null,
        dob: body.dob,
        answers,
        consent: null,
        takes: [],
        withdrawn_at: null,
        created_at: yield* now,
        version: 0
      })
      return { participant_id: id, token }
    })

  /** The participant behind a token, of this project, withdrawn or not. */
  const findParticipant = (caller: IngestCaller, token: string | undefined) =>
    Effect.gen(function*() {
      if (token === undefined || token === "") {
        return yield* refuse("missing_participant_token", "Send the participant's token as X-Participant-Token.")
      }
      const invalid = refuse("invalid_participant_token", "This participant token is not valid for this project.")
      if (!token.startsWith(PARTICIPANT_TOKEN_PREFIX) || token.length > 128) return yield* invalid
      const hash = yield* hashSecret(token)
      const found = yield* participants.get(idFromHash("par", hash))
      if (found === undefined || found.token_hash !== hash || found.project_id !== caller.project.id) return yield* invalid
      return found
    })

  /** The participant behind a token, of this project and not withdrawn. */
  const participantOf = (caller: IngestCaller, token: string | undefined) =>
    Effect.gen(function*() {
      const found = yield* findParticipant(caller, token)
      if (found.withdrawn_at !== null) {
        return yield* refuse("participant_withdrawn", "This participant has withdrawn; their recordings were deleted.")
      }
      return found
    })

  const participant = (caller: IngestCaller, token: string | undefined) =>
    Effect.map(participantOf(caller, token), (p) => participantView(caller.project, p))

  const consent = (caller: IngestCaller, token: string | undefined, body: GiveConsent) =>
    Effect.gen(function*() {
      const found = yield* participantOf(caller, token)
      const text = caller.project.consent
      const unknown = Object.keys(body.given).find((scope) => !text.scopes.some((s) => s.id === scope))
      if (unknown !== undefined) return yield* refuse("invalid_request", `"${unknown.slice(0, 64)}" is not a consent scope of this project.`)
      const missing = text.scopes.filter((s) => s.required && body.given[s.id] !== true).map((s) => s.id)
      if (missing.length > 0) return yield* refuse("consent_incomplete", `Consent to ${missing.join(", ")} is required.`)
      const at = yield* now
      const given = Object.fromEntries(text.scopes.map((s) => [s.id, body.given[s.id] === true]))
      const updated = yield* updateDocument(participants, found.id, (p) =>
        p.withdrawn_at !== null
          ? refuse("participant_withdrawn", "This participant has withdrawn.")
          : Effect.succeed({ ...p, consent: { version: text.version, given, given_at: at } }))
      return participantView(caller.project, updated!)
    })

  /** Reserves a place for the take on the participant, within the limits, or says why not. */
  const reserveTake = (caller: IngestCaller, participantId: string, takeId: string, promptId: string) =>
    updateDocument(participants, participantId, (p) => {
      if (p.withdrawn_at !== null) return refuse("participant_withdrawn", "This participant has withdrawn.")
      const state = participantState(caller.project, p)
      if (state === "needs_consent") {
        return refuse("consent_required", "Consent to the project's current text first (POST /ingest/participant/consent).")
      }
      const limits = caller.project.limits
      const forPrompt = p.takes.filter((t) => t.prompt_id === promptId).length
      if (forPrompt >= limits.takes_per_prompt || p.takes.length >= limits.takes_per_participant) {
        return refuse(
          "take_limit_reached",
          forPrompt >= limits.takes_per_prompt
            ? `Prompt ${promptId} has its ${limits.takes_per_prompt} take(s) already.`
            : `This participant has sent the ${limits.takes_per_participant} take(s) the project allows.`
        )
      }
      return Effect.succeed({ ...p, takes: [...p.takes, { id: takeId, prompt_id: promptId }] })
    })

  const releaseTake = (participantId: string, takeId: string) =>
    updateDocument(participants, participantId, (p) =>
      Effect.succeed(p.takes.some((t) => t.id === takeId) ? { ...p, takes: p.takes.filter((t) => t.id !== takeId) } : undefined))

  const addTake = (caller: IngestCaller, token: string | undefined, upload: TakeUpload) =>
    Effect.gen(function*() {
      const found = yield* participantOf(caller, token)
      const { project } = caller
      const { digest, meta, promptId, wav } = yield* checkTake(project, upload, maxTakeBytes)
      const takeId = yield* generateId("it")
      yield* reserveTake(caller, found.id, takeId, promptId)
      const item: ItemRecord = {
        id: takeId,
        dataset_id: project.dataset_id,
        blob_key: `datasets/${project.dataset_id}/participants/${found.id}/${takeId}.wav`,
        name: `${promptId}.wav`,
        content_type: "audio/wav",
        bytes: upload.body.length,
        sha256: digest,
        duration_ms: wav.durationMs,
        participant_id: found.id,
        prompt_id: promptId,
        status: "pending_review",
        review_note: null,
        reviewed_at: null,
        meta,
        created_at: yield* now,
        version: 0
      }
      yield* datasets.addItem(item, upload.body).pipe(
        Effect.tapError(() => releaseTake(found.id, takeId)),
        Effect.mapError((e) => ingestError(e.reason, e.message))
      )
      // A withdrawal that began while the take was written may have missed it: look again.
      const after = yield* participants.get(found.id)
      if (after === undefined || after.withdrawn_at !== null) {
        yield* datasets.removeItems(project.dataset_id, [takeId])
        return yield* refuse("participant_withdrawn", "This participant has withdrawn; the take was deleted.")
      }
      return takeView(item)
    })

  const takes = (caller: IngestCaller, token: string | undefined) =>
    Effect.gen(function*() {
      const found = yield* participantOf(caller, token)
      const items = yield* Effect.forEach(found.takes, (t) => datasets.items.get(t.id), { concurrency: 8 })
      const data = items.filter((i): i is ItemRecord => i !== undefined).map(takeView)
      return { data: data.sort((a, b) => (a.created_at < b.created_at ? 1 : a.created_at > b.created_at ? -1 : 0)) }
    })

  /**
   * Withdraws first, erasing the participant's personal fields in the same write (so no take
   * starts after, and nothing the person told outlives the withdrawal); then gives the device its
   * place back and deletes the takes: the bytes (one prefix), the records and their lines in every
   * export manifest. Each step may run again: withdrawing again finishes a withdrawal cut short.
   */
  const withdraw = (caller: IngestCaller, token: string | undefined) =>
    Effect.gen(function*() {
      const found = yield* findParticipant(caller, token)
      const at = yield* now
      const withdrawn = yield* updateDocument(participants, found.id, (p) =>
        Effect.succeed(p.withdrawn_at !== null && isErased(p) ? undefined : erased(p, p.withdrawn_at ?? at)))
      const record: ParticipantRecord = withdrawn ?? found
      // A withdrawn participant contributes nothing: the device may start another.
      if (record.device_id !== null) {
        yield* updateDocument(devices, deviceRecordId(record.project_id, record.device_id), (d) =>
          Effect.succeed(d.participants.includes(record.id) ? { ...d, participants: d.participants.filter((p) => p !== record.id) } : undefined))
      }
      yield* datasets.blobs.deletePrefix(`datasets/${record.dataset_id}/participants/${record.id}/`)
      const deleted = yield* datasets.removeItems(record.dataset_id, record.takes.map((t) => t.id))
      return { withdrawn: true as const, deleted_takes: deleted }
    })

  return { publicUrl: options.publicUrl, authenticate, project, challenge, createParticipant, participant, consent, addTake, takes, withdraw } as const
})

export class Ingest extends Context.Service<Ingest, Effect.Success<ReturnType<typeof make>>>()(
  "@model-platform/core/fieldwork/Ingest"
) {
  static readonly layer = (options: IngestOptions = {}) => Layer.effect(Ingest, make(options))
}
