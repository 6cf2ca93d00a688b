/**
 * The refusals of the datasets area (docs/architecture.md "Errors"). A reason is the spec's error
 * code; http/Refusals.ts maps every reason to its status.
 */
import { Schema } from "effect"
import { refusalFields, type RefusalOf } from "../kernel/Refusal.ts"

export const DatasetErrorReasons = [
  /** No live dataset of the caller's account has this id. */
  "dataset_not_found",
  /** The dataset is being deleted: nothing more can be added to it. */
  "dataset_deleted",
  /** No item of the dataset has this id. */
  "item_not_found",
  /** No export of the dataset has this id. */
  "export_not_found"
] as const
export type DatasetErrorReason = (typeof DatasetErrorReasons)[number]

/** A refusal of the datasets area. */
export class DatasetError extends Schema.TaggedError<DatasetError>()("DatasetError", refusalFields(DatasetErrorReasons)) {
  static readonly reasons = DatasetErrorReasons
}

export type DatasetErrorOf<R extends DatasetErrorReason> = RefusalOf<DatasetError, R>

export const datasetError = <R extends DatasetErrorReason>(reason: R, message: string): DatasetErrorOf<R> =>
  new DatasetError({ reason, message }) as DatasetErrorOf<R>
