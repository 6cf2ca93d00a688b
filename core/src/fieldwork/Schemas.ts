/**
 * Fieldwork's participant (ingest) flow: what a participant's browser reads and sends with an
 * ingest key, from the project description and the proof-of-work challenge to consent, takes and
 * withdrawal. The spec shows none of these bodies; these are ours (docs/resources.md).
 * JSON shapes only (and the headers' formats); the flow lives elsewhere.
 */
import { Schema } from "effect"
import { ItemStatus } from "../datasets/Schemas.ts"
import { Text } from "../kernel/Text.ts"
import { Timestamp } from "../kernel/Time.ts"

// ---- Values -------------------------------------------------------------------------------

/** The most one take may weigh: 12 MB, read generously as MiB. */
export const MAX_TAKE_BYTES = 12 * 1024 * 1024

/** X-Device-Id: 16 to 64 characters of A-Z a-z 0-9 _ -. */
export const DeviceId = Schema.String.check(
  Schema.isPattern(/^[A-Za-z0-9_-]{16,64}$/, { expected: "16 to 64 characters of A-Z a-z 0-9 _ -" })
)

/** X-Content-Sha256: the hex SHA-256 of the take's bytes. */
export const ContentSha256 = Schema.String.check(
  Schema.isPattern(/^[0-9a-fA-F]{64}$/, { expected: "a hex SHA-256 (64 hex digits)" })
)

/** A participant's answer to one question. */
export const Answer = Schema.Union([Text(0, 2000), Schema.Finite, Schema.Boolean, Schema.Array(Text(0, 2000)).check(Schema.isMaxLength(50))])
export type Answer = typeof Answer.Type

/** Answers by question id. */
export const Answers = Schema.Record(Text(1, 64), Answer)
export type Answers = typeof Answers.Type

// ---- Project (GET /ingest/project) --------------------------------------------------------

export const Prompt = Schema.Struct({ id: Schema.String, text: Schema.String })
export type Prompt = typeof Prompt.Type

export const QuestionKindValues = ["text", "number", "boolean", "choice", "multi_choice"] as const

export const Question = Schema.Struct({
  id: Schema.String,
  text: Schema.String,
  kind: Schema.Literals(QuestionKindValues),
  /** The choices of a choice or multi_choice question, else empty. */
  options: Schema.Array(Schema.String),
  required: Schema.Boolean
})
export type Question = typeof Question.Type

/** What a take must be: 16-bit mono WAV, at most max_bytes. */
export const CaptureFormat = Schema.Struct({
  content_type: Schema.Literal("audio/wav"),
  channels: Schema.Literal(1),
  bits_per_sample: Schema.Literal(16),
  sample_rate_hz: Schema.Int,
  max_bytes: Schema.Int,
  min_seconds: Schema.NullOr(Schema.Number),
  max_seconds: Schema.NullOr(Schema.Number)
})
export type CaptureFormat = typeof CaptureFormat.Type

/** How much one participant, or one device, may contribute. */
export const IngestLimits = Schema.Struct({
  takes_per_prompt: Schema.Int,
  takes_per_participant: Schema.Int,
  participants_per_device: Schema.Int
})
export type IngestLimits = typeof IngestLimits.Type

/** The consent text in force; each scope is a thing the participant may agree to. */
export const ConsentText = Schema.Struct({
  version: Schema.String,
  text: Schema.String,
  scopes: Schema.Array(Schema.Struct({ id: Schema.String, label: Schema.String, required: Schema.Boolean }))
})
export type ConsentText = typeof ConsentText.Type

export const IngestProject = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  data_type: Schema.Literal("audio"),
  prompts: Schema.Array(Prompt),
  capture: CaptureFormat,
  limits: IngestLimits,
  questions: Schema.Array(Question),
  consent: ConsentText,
  /** The participant flow's endpoints, for a client that discovers them. */
  endpoints: Schema.Array(Schema.Struct({ method: Schema.String, path: Schema.String }))
})
export type IngestProject = typeof IngestProject.Type

// ---- Challenge (GET /ingest/challenge) ----------------------------------------------------

/**
 * Proof of work: find a nonce such that SHA-256(challenge + nonce), over the UTF-8 text, starts
 * with `difficulty` zero bits. Single use; expires at expires_at.
 */
export const Challenge = Schema.Struct({
  challenge: Schema.String,
  algorithm: Schema.Literal("sha256"),
  difficulty: Schema.Int,
  expires_at: Timestamp
})
export type Challenge = typeof Challenge.Type

// ---- Participant --------------------------------------------------------------------------

const isRealDate = (text: string) => {
  const d = new Date(`${text}T00:00:00.000Z`)
  return !Number.isNaN(d.getTime()) && d.toISOString().startsWith(text)
}

/** POST /ingest/participants. */
export const CreateParticipant = Schema.Struct({
  /** ISO 3166-1 alpha-2. */
  country: Schema.String.check(Schema.isPattern(/^[A-Z]{2}$/, { expected: "a two-letter country code, e.g. DE" })),
  region: Schema.optionalKey(Text(0, 100)),
  /** Date of birth, YYYY-MM-DD. */
  dob: Schema.String.check(
    Schema.makeFilter((s: string) => /^\d{4}-\d{2}-\d{2}$/.test(s) && isRealDate(s), { expected: "a date YYYY-MM-DD" })
  ),
  answers: Schema.optionalKey(Answers),
  challenge: Text(1, 128),
  nonce: Text(1, 128)
})
export type CreateParticipant = typeof CreateParticipant.Type

/** The answer of POST /ingest/participants: send token as X-Participant-Token from now on. */
export const ParticipantCreated = Schema.Struct({
  participant_id: Schema.String,
  token: Schema.String
})
export type ParticipantCreated = typeof ParticipantCreated.Type

/**
 * needs_consent: no consent to the project's current text yet; active: may send takes;
 * complete: every take the limits allow was sent; withdrawn: gone, recordings deleted.
 */
export const ParticipantStateValues = ["needs_consent", "active", "complete", "withdrawn"] as const
export const ParticipantState = Schema.Literals(ParticipantStateValues)
export type ParticipantState = typeof ParticipantState.Type

/** The participant's consent: the scopes given, to which version, and whether that is the current one. */
export const ParticipantConsent = Schema.Struct({
  version: Schema.NullOr(Schema.String),
  given: Schema.Record(Schema.String, Schema.Boolean),
  given_at: Schema.NullOr(Timestamp),
  current: Schema.Boolean
})
export type ParticipantConsent = typeof ParticipantConsent.Type

export const ParticipantPrompt = Schema.Struct({
  id: Schema.String,
  text: Schema.String,
  takes: Schema.Int,
  remaining: Schema.Int
})
export type ParticipantPrompt = typeof ParticipantPrompt.Type

/** GET /ingest/participant. */
export const Participant = Schema.Struct({
  id: Schema.String,
  state: ParticipantState,
  consent: ParticipantConsent,
  prompts: Schema.Array(ParticipantPrompt),
  created_at: Timestamp
})
export type Participant = typeof Participant.Type

/** POST /ingest/participant/consent: {given: {<scope>: true}}, at least one scope. */
export const GiveConsent = Schema.Struct({
  given: Schema.Record(Schema.String, Schema.Literal(true)).check(
    Schema.makeFilter((given) => Object.keys(given).length > 0 || "at least one consent scope is required")
  )
})
export type GiveConsent = typeof GiveConsent.Type

/** POST /ingest/participant/withdraw. */
export const ParticipantWithdrawn = Schema.Struct({
  withdrawn: Schema.Literal(true),
  deleted_takes: Schema.Int
})
export type ParticipantWithdrawn = typeof ParticipantWithdrawn.Type

// ---- Takes (POST/GET /ingest/items) -------------------------------------------------------

/** X-Fieldwork-Meta, once base64url-decoded: how the take was captured, and answers about it. */
export const TakeMeta = Schema.Struct({
  capture: Schema.optionalKey(Schema.Record(Schema.String, Schema.Unknown)),
  answers: Schema.optionalKey(Answers)
})
export type TakeMeta = typeof TakeMeta.Type

export const Take = Schema.Struct({
  id: Schema.String,
  prompt_id: Schema.String,
  /** The owner's review (datasets/Schemas.ts ItemStatus). */
  status: ItemStatus,
  bytes: Schema.Int,
  duration_ms: Schema.Int,
  sha256: Schema.String,
  created_at: Timestamp,
  reviewed_at: Schema.NullOr(Timestamp),
  /** Why a take was rejected, for the participant. */
  review_note: Schema.NullOr(Schema.String)
})
export type Take = typeof Take.Type

export const TakeList = Schema.Struct({ data: Schema.Array(Take) })
export type TakeList = typeof TakeList.Type
