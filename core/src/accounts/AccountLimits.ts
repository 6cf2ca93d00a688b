/**
 * Rate limits of the account service (docs/limits.md "Accounts"): fixed windows counted in the
 * RateLimitStore, so every process shares them. Each ceremony step that costs something (a mail,
 * a stored flow) counts per client address, and per email where there is one.
 */
import { Clock, Effect } from "effect"
import { type RateLimitStore, windowStartOf } from "../kernel/RateLimitStore.ts"
import { accountError } from "./AccountErrors.ts"

export interface AccountLimit {
  readonly bucket: string
  readonly max: number
  readonly windowMs: number
}

const HOUR = 60 * 60_000
const DAY = 24 * HOUR

/** The limits; the values are in docs/limits.md. */
export const ACCOUNT_LIMITS = {
  /** Sign-up ceremonies begun from one address. */
  signUpPerAddress: { bucket: "acct:signup:addr", max: 20, windowMs: HOUR },
  /** Confirmation mails to one email (sign-ups finished and links sent again). */
  confirmationPerEmail: { bucket: "acct:confirm:email", max: 5, windowMs: HOUR },
  /** Sign-in ceremonies begun from one address. */
  signInPerAddress: { bucket: "acct:signin:addr", max: 60, windowMs: 10 * 60_000 },
  /**
   * Sign-in attempts with one person's passkeys, from any address: a passkey names its person, so
   * this is the per-email limit of a discoverable-credential sign-in (guessing costs nothing else).
   */
  signInPerEmail: { bucket: "acct:signin:email", max: 30, windowMs: 10 * 60_000 },
  /** Recovery requests from one address. */
  recoveryPerAddress: { bucket: "acct:recover:addr", max: 10, windowMs: HOUR },
  /** Recovery requests for one email. */
  recoveryPerEmail: { bucket: "acct:recover:email", max: 3, windowMs: DAY }
} as const satisfies Record<string, AccountLimit>

/** Counts one hit of `limit` for `key`; rate_limited (with the seconds to wait) past its max. */
export const countHit = (store: RateLimitStore["Service"], limit: AccountLimit, key: string) =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const start = windowStartOf(now, limit.windowMs)
    const count = yield* store.hit(`${limit.bucket}:${key}`, start, limit.windowMs)
    if (count > limit.max) {
      const retry_after_seconds = Math.max(1, Math.ceil((start + limit.windowMs - now) / 1000))
      return yield* accountError("rate_limited", `Too many attempts; try again in ${retry_after_seconds} s.`, {
        retry_after_seconds
      })
    }
  })
