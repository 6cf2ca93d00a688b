/** Who is calling: the key that authenticated the request and its account. */
import type { AccountRecord } from "./Account.ts"
import type { KeyRecord } from "./Keys.ts"

export interface Caller {
  readonly key: KeyRecord
  readonly account: AccountRecord
}
