/**
 * The refusals of the fieldwork projects (docs/architecture.md "Errors"). A reason is the spec's
 * error code where it has one; http/Refusals.ts maps every reason to its status and code. The
 * participants' ingest flow (Ingest.ts) refuses with IngestError, answered on its own routes with
 * the statuses of http/IngestRefusals.ts.
 */
import { Schema } from "effect"
import { refusalFields, type RefusalOf } from "../kernel/Refusal.ts"

export const FieldworkErrorReasons = [
  /** A project's settings contradict themselves (duplicate ids, too few options, min above max). */
  "project_settings_invalid",
  /** No fieldwork project of the caller's account has this id. */
  "project_not_found",
  /** A new consent text needs a new version. */
  "consent_version_exists",
  /** No ingest key of the project has this id. */
  "ingest_key_not_found"
] as const
export type FieldworkErrorReason = (typeof FieldworkErrorReasons)[number]

/** A refusal of the fieldwork projects. */
export class FieldworkError extends Schema.TaggedError<FieldworkError>()("FieldworkError", refusalFields(FieldworkErrorReasons)) {
  static readonly reasons = FieldworkErrorReasons
}

export type FieldworkErrorOf<R extends FieldworkErrorReason> = RefusalOf<FieldworkError, R>

export const fieldworkError = <R extends FieldworkErrorReason>(reason: R, message: string): FieldworkErrorOf<R> =>
  new FieldworkError({ reason, message }) as FieldworkErrorOf<R>

export const IngestErrorReasons = [
  // The ingest key and its origin (GET /ingest/project and every flow route).
  "missing_ingest_key",
  "invalid_ingest_key",
  "origin_not_allowed",
  // The device's challenge (GET /ingest/challenge, POST /ingest/participant).
  "too_many_challenges",
  "challenge_not_found",
  "challenge_expired",
  "challenge_used",
  "challenge_not_solved",
  "device_limit_reached",
  "invalid_device_id",
  "invalid_answers",
  // The participant and their consent.
  "missing_participant_token",
  "invalid_participant_token",
  "participant_withdrawn",
  "consent_incomplete",
  "consent_required",
  // A take (TakeChecks.ts), in the order they are checked, then its limits and its dataset.
  "payload_too_large",
  "unsupported_media_type",
  "missing_prompt",
  "prompt_not_found",
  "missing_content_sha256",
  "checksum_mismatch",
  "invalid_meta",
  "invalid_wav",
  "wav_not_mono",
  "wav_not_16_bit",
  "wav_sample_rate",
  "take_too_short",
  "take_too_long",
  "take_limit_reached",
  /** The project's dataset began its deletion while the take was written. */
  "dataset_deleted",
  // A body the routes cannot read.
  "invalid_json",
  "invalid_request"
] as const
export type IngestErrorReason = (typeof IngestErrorReasons)[number]

/** A refusal of the participants' ingest flow (Ingest.ts), answered on its own routes (http/IngestRoutes.ts). */
export class IngestError extends Schema.TaggedError<IngestError>()("IngestError", refusalFields(IngestErrorReasons)) {
  static readonly reasons = IngestErrorReasons
}

export type IngestErrorOf<R extends IngestErrorReason> = RefusalOf<IngestError, R>

export const ingestError = <R extends IngestErrorReason>(reason: R, message: string): IngestErrorOf<R> =>
  new IngestError({ reason, message }) as IngestErrorOf<R>
