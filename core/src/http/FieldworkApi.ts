/**
 * The owner's Fieldwork routes in the management contract (added to PlatformApi in http/Api.ts),
 * with `fieldwork:read` / `fieldwork:write` (docs/fieldwork.md). Handlers: FieldworkHandlers.ts.
 * The participant's routes (/ingest/*) are IngestRoutes.ts.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import * as Errors from "./Errors.ts"
import { MAX_ID_LENGTH } from "../kernel/Limits.ts"
import { Text } from "../kernel/Text.ts"
import { Authentication, RequiredPermission } from "./Security.ts"
import {
  ConsentBody,
  CreatedIngestKey,
  CreateIngestKey,
  CreateProject,
  IngestKey,
  IngestKeyList,
  Project,
  ProjectList
} from "../fieldwork/ProjectSchemas.ts"

const Id = Text(1, MAX_ID_LENGTH)

export class FieldworkGroup extends HttpApiGroup.make("fieldwork")
  .add(
    HttpApiEndpoint.get("list", "/fieldwork/projects", { success: ProjectList })
      .annotate(RequiredPermission, "fieldwork:read"),
    HttpApiEndpoint.post("create", "/fieldwork/projects", {
      payload: CreateProject,
      success: Project,
      error: Errors.BadRequest
    }).annotate(RequiredPermission, "fieldwork:write"),
    HttpApiEndpoint.get("get", "/fieldwork/projects/:id", {
      params: { id: Id },
      success: Project,
      error: Errors.NotFound
    }).annotate(RequiredPermission, "fieldwork:read"),
    HttpApiEndpoint.put("consent", "/fieldwork/projects/:id/consent", {
      params: { id: Id },
      payload: ConsentBody,
      success: Project,
      error: [Errors.BadRequest, Errors.NotFound, Errors.Conflict]
    }).annotate(RequiredPermission, "fieldwork:write"),
    HttpApiEndpoint.get("keys", "/fieldwork/projects/:id/ingest-keys", {
      params: { id: Id },
      success: IngestKeyList,
      error: Errors.NotFound
    }).annotate(RequiredPermission, "fieldwork:read"),
    HttpApiEndpoint.post("createKey", "/fieldwork/projects/:id/ingest-keys", {
      params: { id: Id },
      payload: CreateIngestKey,
      success: CreatedIngestKey,
      error: Errors.NotFound
    }).annotate(RequiredPermission, "fieldwork:write"),
    HttpApiEndpoint.delete("revokeKey", "/fieldwork/projects/:id/ingest-keys/:key_id", {
      params: { id: Id, key_id: Id },
      success: IngestKey,
      error: Errors.NotFound
    }).annotate(RequiredPermission, "fieldwork:write")
  )
  .middleware(Authentication)
  .annotateMerge(OpenApi.annotations({
    title: "Fieldwork",
    description: "Voice-collection projects, each feeding a dataset, and the ingest keys their participant pages use."
  }))
{}
