/**
 * The refusals of the keys area (docs/architecture.md "Errors"): authenticating a key, making and
 * revoking keys, and the scope rule (KeyScope.ts). A reason is the spec's error code where it has
 * one; http/Refusals.ts maps every reason to its status and code.
 */
import { Schema } from "effect"
import { refusalFields, type RefusalOf } from "../kernel/Refusal.ts"

export const KeyErrorReasons = [
  /** No bearer secret was sent. */
  "missing_api_key",
  /** The secret is malformed, unknown, revoked, or its account is gone. */
  "invalid_api_key",
  /** A key may grant only the permissions it holds (`scope`: the first one it lacks). */
  "key_lacks_permission",
  /** A scoped key acting beyond its machine, plan or rental (KeyScope.ts). */
  "key_scope_too_narrow",
  /** A new key scoped by more than one of machine_id, subscription_id and rental_id. */
  "scopes_conflict",
  /** A new key's machine is not in the catalogue. */
  "machine_not_found",
  /** A new key's plan is not one of the caller's account. */
  "subscription_not_found",
  /** A new key's rental is not one of the caller's account. */
  "rental_not_found",
  /** No key of the caller's account has this id. */
  "key_not_found"
] as const
export type KeyErrorReason = (typeof KeyErrorReasons)[number]

/** A refusal of the keys area; `scope` names what a key lacks (key_lacks_permission). */
export class KeyError extends Schema.TaggedError<KeyError>()("KeyError", {
  ...refusalFields(KeyErrorReasons),
  scope: Schema.optionalKey(Schema.String)
}) {
  static readonly reasons = KeyErrorReasons
}

export type KeyErrorOf<R extends KeyErrorReason> = RefusalOf<KeyError, R>

export const keyError = <R extends KeyErrorReason>(reason: R, message: string, scope?: string): KeyErrorOf<R> =>
  new KeyError(scope === undefined ? { reason, message } : { reason, message, scope }) as KeyErrorOf<R>
