/**
 * The datasets' routes in the management contract (added to PlatformApi in http/Api.ts), with
 * `datasets:read` / `datasets:write` (docs/datasets.md). Handlers: DatasetsHandlers.ts.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import * as Errors from "./Errors.ts"
import { MAX_ID_LENGTH } from "../kernel/Limits.ts"
import { Text } from "../kernel/Text.ts"
import { Authentication, RequiredPermission } from "./Security.ts"
import {
  CreateDataset,
  Dataset,
  DatasetDeleted,
  DatasetExport,
  DatasetExportList,
  DatasetExportManifest,
  DatasetItem,
  DatasetItemList,
  DatasetKind,
  DatasetList,
  DatasetSource,
  ReviewItem
} from "../datasets/Schemas.ts"

const Id = Text(1, MAX_ID_LENGTH)

export class DatasetsGroup extends HttpApiGroup.make("datasets")
  .add(
    HttpApiEndpoint.get("list", "/datasets", {
      query: { source: Schema.optionalKey(DatasetSource), kind: Schema.optionalKey(DatasetKind) },
      success: DatasetList
    }).annotate(RequiredPermission, "datasets:read"),
    HttpApiEndpoint.post("create", "/datasets", {
      payload: CreateDataset,
      success: Dataset,
      error: Errors.BadRequest
    }).annotate(RequiredPermission, "datasets:write"),
    HttpApiEndpoint.get("get", "/datasets/:id", {
      params: { id: Id },
      success: Dataset,
      error: Errors.NotFound
    }).annotate(RequiredPermission, "datasets:read"),
    HttpApiEndpoint.delete("delete", "/datasets/:id", {
      params: { id: Id },
      success: DatasetDeleted,
      error: Errors.NotFound
    }).annotate(RequiredPermission, "datasets:write"),
    HttpApiEndpoint.get("items", "/datasets/:id/items", {
      params: { id: Id },
      success: DatasetItemList,
      error: Errors.NotFound
    }).annotate(RequiredPermission, "datasets:read"),
    HttpApiEndpoint.post("review", "/datasets/:id/items/:item_id/review", {
      params: { id: Id, item_id: Id },
      payload: ReviewItem,
      success: DatasetItem,
      error: Errors.NotFound
    }).annotate(RequiredPermission, "datasets:write"),
    HttpApiEndpoint.post("export", "/datasets/:id/exports", {
      params: { id: Id },
      success: DatasetExport,
      error: Errors.NotFound
    }).annotate(RequiredPermission, "datasets:write"),
    HttpApiEndpoint.get("exports", "/datasets/:id/exports", {
      params: { id: Id },
      success: DatasetExportList,
      error: Errors.NotFound
    }).annotate(RequiredPermission, "datasets:read"),
    HttpApiEndpoint.get("exportManifest", "/datasets/:id/exports/:export_id", {
      params: { id: Id, export_id: Id },
      success: DatasetExportManifest,
      error: Errors.NotFound
    }).annotate(RequiredPermission, "datasets:read")
  )
  .middleware(Authentication)
  .annotateMerge(OpenApi.annotations({
    title: "Datasets",
    description: "Datasets of audio, images, video or text, from fieldwork, voices or uploads: counts, items, reviews, exports and deletion."
  }))
{}
