/** The handlers of the datasets' routes (DatasetsApi.ts): each calls a use-case of Datasets.ts. */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { PlatformApi } from "./Api.ts"
import { CurrentCaller } from "./Security.ts"
import { answered } from "./Refusals.ts"
import { Datasets } from "../datasets/Datasets.ts"

export const DatasetsHandlers = HttpApiBuilder.group(PlatformApi, "datasets", Effect.fnUntraced(function*(handlers) {
  const datasets = answered(yield* Datasets)
  return handlers
    .handle("list", ({ query }) => Effect.flatMap(CurrentCaller, (caller) => datasets.list(caller, query)))
    .handle("create", ({ payload }) => Effect.flatMap(CurrentCaller, (caller) => datasets.create(caller, payload)))
    .handle("get", ({ params }) => Effect.flatMap(CurrentCaller, (caller) => datasets.get(caller, params.id)))
    .handle("delete", ({ params }) => Effect.flatMap(CurrentCaller, (caller) => datasets.remove(caller, params.id)))
    .handle("items", ({ params }) => Effect.flatMap(CurrentCaller, (caller) => datasets.itemsOf(caller, params.id)))
    .handle("review", ({ params, payload }) =>
      Effect.flatMap(CurrentCaller, (caller) => datasets.review(caller, params.id, params.item_id, payload)))
    .handle("export", ({ params }) => Effect.flatMap(CurrentCaller, (caller) => datasets.createExport(caller, params.id)))
    .handle("exports", ({ params }) => Effect.flatMap(CurrentCaller, (caller) => datasets.listExports(caller, params.id)))
    .handle("exportManifest", ({ params }) =>
      Effect.flatMap(CurrentCaller, (caller) => datasets.exportManifest(caller, params.id, params.export_id)))
}))
