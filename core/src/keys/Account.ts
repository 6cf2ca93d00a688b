/** Accounts: the owner of keys, credits and everything billed. */
import { Schema } from "effect"
import { Key } from "./Keys.ts"
import { Timestamp } from "../kernel/Time.ts"
import type { AccountId } from "../kernel/Ids.ts"

export interface AccountRecord {
  readonly id: AccountId
  readonly email: string
  readonly created_at: Timestamp
}

/** GET /me: the account and the calling key. */
export const Me = Schema.Struct({
  id: Schema.String,
  email: Schema.String,
  created_at: Timestamp,
  key: Key
})
export type Me = typeof Me.Type
