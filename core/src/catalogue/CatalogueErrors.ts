/**
 * The refusals of the catalogue (docs/architecture.md "Errors"): asking for what it does not list.
 * http/Refusals.ts maps every reason to its status and code.
 */
import { Schema } from "effect"
import { refusalFields, type RefusalOf } from "../kernel/Refusal.ts"

export const CatalogueErrorReasons = ["model_not_found", "machine_not_found", "operator_not_found"] as const
export type CatalogueErrorReason = (typeof CatalogueErrorReasons)[number]

/** A refusal of the catalogue: no model, machine or operator has this id. */
export class CatalogueError extends Schema.TaggedError<CatalogueError>()("CatalogueError", refusalFields(CatalogueErrorReasons)) {
  static readonly reasons = CatalogueErrorReasons
}

export type CatalogueErrorOf<R extends CatalogueErrorReason> = RefusalOf<CatalogueError, R>

export const catalogueError = <R extends CatalogueErrorReason>(reason: R, message: string): CatalogueErrorOf<R> =>
  new CatalogueError({ reason, message }) as CatalogueErrorOf<R>
