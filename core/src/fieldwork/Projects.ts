/**
 * The owner's Fieldwork use-cases (docs/fieldwork.md "The owner's endpoints"): projects, each
 * with the dataset its takes go to, a new consent text, and the project's ingest keys.
 */
import { Context, Effect, Layer } from "effect"
import type { Caller } from "../keys/Caller.ts"
import { Datasets } from "../datasets/Datasets.ts"
import { FieldworkError, fieldworkError } from "./FieldworkErrors.ts"
import { hashSecret } from "../keys/Keys.ts"
import { base64url, generateId, randomBytes } from "../kernel/Ids.ts"
import { MAX_TAKE_BYTES } from "../kernel/Limits.ts"
import { DocumentStores } from "../kernel/DocumentStores.ts"
import { updateDocument } from "../kernel/Documents.ts"
import { now } from "../kernel/Time.ts"
import type { ConsentBody, CreatedIngestKey, CreateIngestKey, CreateProject, IngestKey, Project } from "./ProjectSchemas.ts"
import { IngestKeyDocuments, type IngestKeyRecord, ParticipantDocuments, ProjectDocuments, type ProjectRecord } from "./Records.ts"
import type { Question } from "./Schemas.ts"

/** The visible start of an ingest key, `mpi_` then 43 base64url characters. */
export const INGEST_KEY_PREFIX = "mpi_"
export const DEFAULT_CHALLENGE_DIFFICULTY = 16

/** The record id of a key or token: derived from its hash, so a call finds it with one read. */
export const idFromHash = (kind: string, hash: string) => `${kind}_${hash.slice(0, 32)}`

export const toIngestKey = ({ account_id: _account, key_hash: _hash, version: _version, ...shown }: IngestKeyRecord): IngestKey => shown

const invalid = (message: string) => fieldworkError("project_settings_invalid", message)

/** The project's settings from a create body, with the defaults filled in; or why not. */
const settingsOf = (body: CreateProject) => {
  const prompts = body.prompts.map((p, i) => ({ id: p.id ?? `p${i + 1}`, text: p.text }))
  if (new Set(prompts.map((p) => p.id)).size !== prompts.length) return invalid("Two prompts have the same id.")
  const questions: Array<Question> = (body.questions ?? []).map((q) => ({
    id: q.id,
    text: q.text,
    kind: q.kind,
    options: q.options ?? [],
    required: q.required ?? false
  }))
  if (new Set(questions.map((q) => q.id)).size !== questions.length) return invalid("Two questions have the same id.")
  const choiceless = questions.find((q) => (q.kind === "choice" || q.kind === "multi_choice") && q.options.length < 2)
  if (choiceless !== undefined) return invalid(`Question ${choiceless.id} is a ${choiceless.kind} question: give it at least 2 options.`)
  if (new Set(body.consent.scopes.map((s) => s.id)).size !== body.consent.scopes.length) {
    return invalid("Two consent scopes have the same id.")
  }
  const min = body.capture?.min_seconds ?? null
  const max = body.capture?.max_seconds ?? null
  if (min !== null && max !== null && min > max) return invalid("capture.min_seconds is more than capture.max_seconds.")
  const takesPerPrompt = body.limits?.takes_per_prompt ?? 1
  return {
    prompts,
    questions,
    consent: body.consent,
    capture: {
      content_type: "audio/wav" as const,
      channels: 1 as const,
      bits_per_sample: 16 as const,
      sample_rate_hz: body.capture?.sample_rate_hz ?? 16000,
      max_bytes: MAX_TAKE_BYTES,
      min_seconds: min,
      max_seconds: max
    },
    limits: {
      takes_per_prompt: takesPerPrompt,
      takes_per_participant: body.limits?.takes_per_participant ?? prompts.length * takesPerPrompt,
      participants_per_device: body.limits?.participants_per_device ?? 1
    },
    challenge_difficulty: body.challenge_difficulty ?? DEFAULT_CHALLENGE_DIFFICULTY
  }
}

const make = Effect.gen(function*() {
  const stores = yield* DocumentStores
  const datasets = yield* Datasets
  const projects = stores.of(ProjectDocuments)
  const keys = stores.of(IngestKeyDocuments)
  const participants = stores.of(ParticipantDocuments)

  const owned = (caller: Caller, id: string) =>
    Effect.flatMap(projects.get(id), (p) =>
      p === undefined || p.account_id !== caller.account.id
        ? Effect.fail(fieldworkError("project_not_found", `No fieldwork project ${id} in this account.`))
        : Effect.succeed(p))

  const view = (p: ProjectRecord) =>
    Effect.gen(function*() {
      const people = yield* participants.list(p.id)
      const takes = yield* datasets.items.list(p.dataset_id)
      const { account_id: _account, version: _version, ...shown } = p
      return { ...shown, data_type: "audio", participants: people.filter((x) => x.withdrawn_at === null).length, takes: takes.length } satisfies Project
    })

  const create = (caller: Caller, body: CreateProject) =>
    Effect.gen(function*() {
      const settings = settingsOf(body)
      if (settings instanceof FieldworkError) return yield* Effect.fail(settings)
      const dataset = yield* datasets.insertDataset(caller.account.id, {
        name: body.name,
        source: "fieldwork",
        kind: "audio",
        project_id: null
      })
      const at = yield* now
      const record: ProjectRecord = {
        id: yield* generateId("fwp"),
        account_id: caller.account.id,
        dataset_id: dataset.id,
        name: body.name,
        ...settings,
        created_at: at,
        updated_at: at,
        version: 0
      }
      yield* projects.insert(record)
      yield* updateDocument(datasets.datasets, dataset.id, (d) => Effect.succeed({ ...d, project_id: record.id }))
      return yield* view(record)
    })

  const list = (caller: Caller) =>
    Effect.flatMap(projects.list(caller.account.id), (all) => Effect.map(Effect.forEach(all, view), (data) => ({ data })))

  const get = (caller: Caller, id: string) => Effect.flatMap(owned(caller, id), view)

  const setConsent = (caller: Caller, id: string, consent: ConsentBody) =>
    Effect.gen(function*() {
      yield* owned(caller, id)
      if (new Set(consent.scopes.map((s) => s.id)).size !== consent.scopes.length) {
        return yield* invalid("Two consent scopes have the same id.")
      }
      const at = yield* now
      const updated = yield* updateDocument(projects, id, (p) =>
        p.consent.version === consent.version
          ? Effect.fail(fieldworkError(
            "consent_version_exists",
            `The consent text in force is already version ${consent.version}; a new text needs a new version.`
          ))
          : Effect.succeed({ ...p, consent, updated_at: at }))
      return yield* view(updated!)
    })

  const createKey = (caller: Caller, id: string, body: CreateIngestKey) =>
    Effect.gen(function*() {
      const project = yield* owned(caller, id)
      const key = INGEST_KEY_PREFIX + base64url(yield* randomBytes(32))
      const hash = yield* hashSecret(key)
      const record: IngestKeyRecord = {
        id: idFromHash("ik", hash),
        account_id: caller.account.id,
        project_id: project.id,
        name: body.name ?? "ingest key",
        origins: [...new Set(body.origins)],
        key_hash: hash,
        prefix: key.slice(0, 12),
        created_at: yield* now,
        revoked_at: null,
        version: 0
      }
      yield* keys.insert(record)
      return { ...toIngestKey(record), key } satisfies CreatedIngestKey
    })

  const listKeys = (caller: Caller, id: string) =>
    Effect.flatMap(owned(caller, id), (p) => Effect.map(keys.list(p.id), (all) => ({ data: all.map(toIngestKey) })))

  const revokeKey = (caller: Caller, id: string, keyId: string) =>
    Effect.gen(function*() {
      yield* owned(caller, id)
      const at = yield* now
      const revoked = yield* updateDocument(keys, keyId, (k) =>
        Effect.succeed(k.project_id !== id || k.revoked_at !== null ? undefined : { ...k, revoked_at: at }))
      if (revoked === undefined || revoked.project_id !== id) {
        return yield* fieldworkError("ingest_key_not_found", `No ingest key ${keyId} on project ${id}.`)
      }
      return toIngestKey(revoked)
    })

  return { create, list, get, setConsent, createKey, listKeys, revokeKey } as const
})

export class Projects extends Context.Service<Projects, Effect.Success<typeof make>>()(
  "@model-platform/core/fieldwork/Projects"
) {
  static readonly layer = Layer.effect(Projects, make)
}
