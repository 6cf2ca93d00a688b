/**
 * The refusals of the fieldwork projects (docs/architecture.md "Errors"). A reason is the spec's
 * error code where it has one; http/Refusals.ts maps every reason to its status and code. (The
 * participants' ingest flow answers with its own IngestRefusal, status included: Ingest.ts.)
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
