/**
 * The statuses of the fieldwork ingest flow's refusals (docs/architecture.md "Errors"; docs/
 * fieldwork.md), answered on its own routes (IngestRoutes.ts) in the platform's error shape with
 * the reason as the code. Total over the reasons like Refusals.ts (core/test/http/Refusals.test.ts
 * checks it at run time).
 */
import { IngestError } from "../fieldwork/FieldworkErrors.ts"

export type IngestStatus = 400 | 401 | 403 | 404 | 409 | 413 | 415 | 429

export const INGEST_REFUSALS = {
  missing_ingest_key: 401,
  invalid_ingest_key: 401,
  origin_not_allowed: 403,
  too_many_challenges: 429,
  challenge_not_found: 400,
  challenge_expired: 400,
  challenge_used: 409,
  challenge_not_solved: 400,
  device_limit_reached: 409,
  invalid_device_id: 400,
  invalid_answers: 400,
  missing_participant_token: 401,
  invalid_participant_token: 401,
  participant_withdrawn: 401,
  consent_incomplete: 400,
  consent_required: 403,
  payload_too_large: 413,
  unsupported_media_type: 415,
  missing_prompt: 400,
  prompt_not_found: 404,
  missing_content_sha256: 400,
  checksum_mismatch: 400,
  invalid_meta: 400,
  invalid_wav: 400,
  wav_not_mono: 400,
  wav_not_16_bit: 400,
  wav_sample_rate: 400,
  take_too_short: 400,
  take_too_long: 400,
  take_limit_reached: 409,
  dataset_deleted: 409,
  invalid_json: 400,
  invalid_request: 400
} as const satisfies { readonly [R in IngestError["reason"]]: IngestStatus }

/** The status an ingest refusal answers with (its code is its reason). */
/** The refusal classes only the ingest routes answer, for the totality test. */
export const IngestErrorClasses = [IngestError] as const

export const ingestStatusOf = (error: IngestError): IngestStatus => INGEST_REFUSALS[error.reason]
