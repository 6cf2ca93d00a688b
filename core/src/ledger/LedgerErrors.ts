/**
 * The refusals of the ledger (docs/architecture.md "Errors"). http/Refusals.ts maps every reason
 * to its status and code.
 */
import { Schema } from "effect"
import { refusalFields, type RefusalOf } from "../kernel/Refusal.ts"

export const LedgerErrorReasons = [
  /** GET /credits/activity: limit out of its range. */
  "invalid_limit"
] as const
export type LedgerErrorReason = (typeof LedgerErrorReasons)[number]

/** A refusal of the ledger's reads. */
export class LedgerError extends Schema.TaggedError<LedgerError>()("LedgerError", refusalFields(LedgerErrorReasons)) {
  static readonly reasons = LedgerErrorReasons
}

export type LedgerErrorOf<R extends LedgerErrorReason> = RefusalOf<LedgerError, R>

export const ledgerError = <R extends LedgerErrorReason>(reason: R, message: string): LedgerErrorOf<R> =>
  new LedgerError({ reason, message }) as LedgerErrorOf<R>
