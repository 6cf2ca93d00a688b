/**
 * The operator audit log (docs/operations.md "The operator console"): every operator action, who
 * (the operator key's name), when, what (the action and its target), the reason given, and the
 * state before and after. Kept as documents (kernel/Documents.ts) whose owner is the month
 * (`YYYY-MM`), so a month's entries are read at once, newest first; never changed or removed.
 */
import { Effect, Schema } from "effect"
import { generateId } from "../kernel/Ids.ts"
import { documentKind } from "../kernel/Documents.ts"
import { DocumentStores } from "../kernel/DocumentStores.ts"
import * as Time from "../kernel/Time.ts"

export const AuditAction = Schema.Literals(["credit_adjustment", "key_revoked", "catalogue_reloaded"])
export type AuditAction = typeof AuditAction.Type

export const AuditEntry = Schema.Struct({
  id: Schema.String,
  created_at: Schema.String,
  version: Schema.Number,
  operator: Schema.String,
  action: AuditAction,
  /** What was acted on: an account, a key, the catalogue. */
  target: Schema.String,
  reason: Schema.NullOr(Schema.String),
  /** JSON values, money as strings of credits. */
  before: Schema.Unknown,
  after: Schema.Unknown
})
export type AuditEntry = typeof AuditEntry.Type

export const AuditDocuments = documentKind("operator_audit", AuditEntry, (entry) => entry.created_at.slice(0, 7))

/** Writes one entry, now. */
export const audit = (entry: Omit<AuditEntry, "id" | "created_at" | "version">) =>
  Effect.gen(function*() {
    const record: AuditEntry = { ...entry, id: yield* generateId("audit"), created_at: yield* Time.now, version: 0 }
    yield* (yield* DocumentStores).of(AuditDocuments).insert(record)
    return record
  })

/** A month's entries (`YYYY-MM`), newest first. */
export const auditOf = (month: string) =>
  Effect.flatMap(DocumentStores, (stores) => stores.of(AuditDocuments).list(month))
