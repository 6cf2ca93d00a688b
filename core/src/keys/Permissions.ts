/**
 * Permissions of API keys and the rule for granting them: a key can only grant
 * permissions it holds, and agent keys never hold `manage`.
 */
import { Schema } from "effect"

export const PermissionValues = [
  "inference", "read", "manage",
  "datasets:read", "datasets:write",
  "fieldwork:read", "fieldwork:write",
  "voices:speak", "voices:batch", "voices:train", "voices:admin",
  "wallets:read", "wallets:write"
] as const

export const Permission = Schema.Literals(PermissionValues)
export type Permission = typeof Permission.Type

export const DEFAULT_PERMISSIONS: ReadonlyArray<Permission> = ["inference"]

/** The permissions in `requested` that `holder` does not hold (empty when the grant is allowed). */
export const ungrantable = (
  holder: ReadonlyArray<Permission>,
  requested: ReadonlyArray<Permission>
): ReadonlyArray<Permission> => requested.filter((p) => !holder.includes(p))

/** Requested permissions without duplicates, in the canonical order of the spec. */
export const normalize = (requested: ReadonlyArray<Permission>): ReadonlyArray<Permission> =>
  PermissionValues.filter((p) => requested.includes(p))
