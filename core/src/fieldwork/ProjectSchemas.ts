/**
 * The owner's side of Fieldwork (docs/fieldwork.md "The owner's endpoints"): the bodies and
 * answers of /fieldwork/projects and its ingest keys. The participant's side is Schemas.ts.
 */
import { Schema } from "effect"
import { Text } from "../kernel/Text.ts"
import { Timestamp } from "../kernel/Time.ts"
import { CaptureFormat, ConsentText, IngestLimits, Prompt, Question } from "./Schemas.ts"

const Name = Text(1, 128)
const LongText = Text(1, 2000)
const ShortId = Schema.String.check(
  Schema.isPattern(/^[A-Za-z0-9_-]{1,64}$/, { expected: "an id of 1 to 64 characters of A-Z a-z 0-9 _ -" })
)

const between = (min: number, max: number) =>
  Schema.Int.check(Schema.isBetween({ minimum: min, maximum: max }, { expected: `an integer from ${min} to ${max}` }))

export const ConsentBody = Schema.Struct({
  version: Text(1, 64),
  text: Text(1, 20_000),
  scopes: Schema.Array(Schema.Struct({ id: ShortId, label: LongText, required: Schema.Boolean })).check(
    Schema.isBetweenLength(1, 20, { expected: "1 to 20 scopes" }),
    Schema.makeFilter((scopes) => scopes.some((s) => s.required) || "at least one scope must be required")
  )
})
export type ConsentBody = typeof ConsentBody.Type

/** POST /fieldwork/projects. */
export const CreateProject = Schema.Struct({
  name: Name,
  prompts: Schema.Array(Schema.Struct({ id: Schema.optionalKey(ShortId), text: LongText })).check(
    Schema.isBetweenLength(1, 200, { expected: "1 to 200 prompts" })
  ),
  capture: Schema.optionalKey(Schema.Struct({
    sample_rate_hz: Schema.optionalKey(between(8000, 48000)),
    min_seconds: Schema.optionalKey(Schema.Number.check(Schema.isBetween({ minimum: 0, maximum: 600 }))),
    max_seconds: Schema.optionalKey(Schema.Number.check(Schema.isBetween({ minimum: 0.1, maximum: 600 })))
  })),
  limits: Schema.optionalKey(Schema.Struct({
    takes_per_prompt: Schema.optionalKey(between(1, 10)),
    takes_per_participant: Schema.optionalKey(between(1, 2000)),
    participants_per_device: Schema.optionalKey(between(1, 100))
  })),
  questions: Schema.optionalKey(Schema.Array(Schema.Struct({
    id: ShortId,
    text: LongText,
    kind: Question.fields.kind,
    options: Schema.optionalKey(Schema.Array(LongText).check(Schema.isMaxLength(50))),
    required: Schema.optionalKey(Schema.Boolean)
  })).check(Schema.isMaxLength(50, { expected: "at most 50 questions" }))),
  consent: ConsentBody,
  challenge_difficulty: Schema.optionalKey(between(0, 24))
})
export type CreateProject = typeof CreateProject.Type

/** A project's settings, as shown and as kept (Records.ts). */
export const ProjectSettings = Schema.Struct({
  name: Schema.String,
  /** The dataset (source fieldwork) the takes go to. */
  dataset_id: Schema.String,
  prompts: Schema.Array(Prompt),
  capture: CaptureFormat,
  limits: IngestLimits,
  questions: Schema.Array(Question),
  consent: ConsentText,
  challenge_difficulty: Schema.Int
})

export const Project = Schema.Struct({
  id: Schema.String,
  ...ProjectSettings.fields,
  data_type: Schema.Literal("audio"),
  /** Participants not withdrawn. */
  participants: Schema.Int,
  /** Takes stored. */
  takes: Schema.Int,
  created_at: Timestamp,
  updated_at: Timestamp
})
export type Project = typeof Project.Type

export const ProjectList = Schema.Struct({ data: Schema.Array(Project) })

/** A browser origin: https, or http on localhost and loopback addresses only. */
export const Origin = Schema.String.check(Schema.makeFilter((text: string) => originProblem(text) ?? true))

export const originProblem = (text: string): string | undefined => {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return `"${text.slice(0, 64)}" is not an origin (scheme://host[:port])`
  }
  if (url.origin !== text) return `"${text.slice(0, 64)}" is not an origin: write it as ${url.origin === "null" ? "scheme://host[:port]" : url.origin}`
  const loopback = url.hostname === "localhost" || url.hostname === "127.0.0.1" || url.hostname === "[::1]"
  if (url.protocol === "https:" || (url.protocol === "http:" && loopback)) return undefined
  return `"${text.slice(0, 64)}" must use https (http only on localhost)`
}

/** POST /fieldwork/projects/{id}/ingest-keys. */
export const CreateIngestKey = Schema.Struct({
  name: Schema.optionalKey(Name),
  origins: Schema.Array(Origin).check(Schema.isBetweenLength(1, 20, { expected: "1 to 20 origins" }))
})
export type CreateIngestKey = typeof CreateIngestKey.Type

export const IngestKey = Schema.Struct({
  id: Schema.String,
  project_id: Schema.String,
  name: Schema.String,
  origins: Schema.Array(Schema.String),
  prefix: Schema.String,
  created_at: Timestamp,
  revoked_at: Schema.NullOr(Timestamp)
})
export type IngestKey = typeof IngestKey.Type

export const IngestKeyList = Schema.Struct({ data: Schema.Array(IngestKey) })

/** The new key, shown once: send it as `Authorization: Bearer <key>` on /ingest/*. */
export const CreatedIngestKey = Schema.Struct({ ...IngestKey.fields, key: Schema.String })
export type CreatedIngestKey = typeof CreatedIngestKey.Type
