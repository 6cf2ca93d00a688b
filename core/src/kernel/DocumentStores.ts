/**
 * Port: the document store of any kind of record (kernel/Documents.ts), for areas whose records
 * need no store of their own (datasets, fieldwork): `of(kind)` answers that kind's store. Each
 * shell provides one generic implementation (memory, PostgreSQL's `documents` table, DynamoDB
 * items), so an area adding a kind of record adds no table, item code or wiring. Two calls with the
 * same kind answer stores over the same records.
 */
import { Context } from "effect"
import type { DocumentKind, DocumentStore, VersionedRecord } from "./Documents.ts"

export class DocumentStores extends Context.Service<DocumentStores, {
  readonly of: <R extends VersionedRecord>(kind: DocumentKind<R>) => DocumentStore<R>
}>()("@model-platform/core/kernel/DocumentStores") {}
