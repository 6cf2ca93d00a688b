/**
 * Fieldwork's records as the platform keeps them, each a kind of the generic document store
 * (kernel/Documents.ts, `DocumentStores`): projects (owned by an account), ingest keys,
 * participants, devices and challenges (owned by their project). Each Schema is the record's one
 * declaration; docs/fieldwork.md "Storage" says why each exists.
 */
import { Schema } from "effect"
import { documentKind } from "../kernel/Documents.ts"
import { Timestamp } from "../kernel/Time.ts"
import { IngestKey, ProjectSettings } from "./ProjectSchemas.ts"
import { Answers } from "./Schemas.ts"

export const ProjectRecord = Schema.Struct({
  id: Schema.String,
  account_id: Schema.String,
  ...ProjectSettings.fields,
  created_at: Timestamp,
  updated_at: Timestamp,
  version: Schema.Int
})
export type ProjectRecord = typeof ProjectRecord.Type

export const ProjectDocuments = documentKind("fieldwork_project", ProjectRecord, (r) => r.account_id)

/**
 * An ingest key: its id is derived from the key's hash (`ingestKeyId`), so a call's key is found
 * with one read; only the hash is kept.
 */
export const IngestKeyRecord = Schema.Struct({
  ...IngestKey.fields,
  account_id: Schema.String,
  key_hash: Schema.String,
  version: Schema.Int
})
export type IngestKeyRecord = typeof IngestKeyRecord.Type

export const IngestKeyDocuments = documentKind("fieldwork_ingest_key", IngestKeyRecord, (r) => r.project_id)

/** A take of a participant, as the participant record counts it (the item is in the dataset). */
export const ParticipantTake = Schema.Struct({ id: Schema.String, prompt_id: Schema.String })
export type ParticipantTake = typeof ParticipantTake.Type

export const StoredConsent = Schema.Struct({
  version: Schema.String,
  given: Schema.Record(Schema.String, Schema.Boolean),
  given_at: Timestamp
})
export type StoredConsent = typeof StoredConsent.Type

/**
 * A participant: id derived from the token's hash like an ingest key's. Once withdrawn, only what
 * refuses the token and finishes the withdrawal is kept (`erased`, docs/fieldwork.md
 * "Withdrawal"): `country`, `region`, `dob`, `answers` and `consent` are emptied.
 */
export const ParticipantRecord = Schema.Struct({
  id: Schema.String,
  project_id: Schema.String,
  account_id: Schema.String,
  dataset_id: Schema.String,
  token_hash: Schema.String,
  device_id: Schema.NullOr(Schema.String),
  /** Null once withdrawn. */
  country: Schema.NullOr(Schema.String),
  region: Schema.NullOr(Schema.String),
  /** Null once withdrawn. */
  dob: Schema.NullOr(Schema.String),
  answers: Answers,
  consent: Schema.NullOr(StoredConsent),
  /** The takes stored, oldest first: what the limits count. */
  takes: Schema.Array(ParticipantTake),
  withdrawn_at: Schema.NullOr(Timestamp),
  created_at: Timestamp,
  version: Schema.Int
})
export type ParticipantRecord = typeof ParticipantRecord.Type

/** The participant withdrawn at `at`, with every field the person gave emptied. */
export const erased = (p: ParticipantRecord, at: string): ParticipantRecord => ({
  ...p,
  country: null,
  region: null,
  dob: null,
  answers: {},
  consent: null,
  withdrawn_at: at
})

/** Whether nothing the person gave is left on the record. */
export const isErased = (p: ParticipantRecord): boolean =>
  p.country === null && p.region === null && p.dob === null && Object.keys(p.answers).length === 0 && p.consent === null

export const ParticipantDocuments = documentKind("fieldwork_participant", ParticipantRecord, (r) => r.project_id)

/** The participants a device started in a project (participants_per_device). */
export const DeviceRecord = Schema.Struct({
  id: Schema.String,
  project_id: Schema.String,
  participants: Schema.Array(Schema.String),
  created_at: Timestamp,
  version: Schema.Int
})
export type DeviceRecord = typeof DeviceRecord.Type

export const DeviceDocuments = documentKind("fieldwork_device", DeviceRecord, (r) => r.project_id)

/** The device record's id: one per project and device. */
export const deviceRecordId = (projectId: string, deviceId: string) => `dev_${projectId}_${deviceId}`

/** A proof-of-work challenge issued; spent by the first participant made with it. */
export const ChallengeRecord = Schema.Struct({
  id: Schema.String,
  project_id: Schema.String,
  difficulty: Schema.Int,
  expires_at: Timestamp,
  used_at: Schema.NullOr(Timestamp),
  created_at: Timestamp,
  version: Schema.Int
})
export type ChallengeRecord = typeof ChallengeRecord.Type

export const ChallengeDocuments = documentKind("fieldwork_challenge", ChallengeRecord, (r) => r.project_id)
