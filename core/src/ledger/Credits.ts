/**
 * Credits as the account sees them: the balance by scope, the activity feed, gift or credit
 * tickets and their redemption. JSON shapes only; the ledger behind them lives elsewhere.
 */
import { Schema } from "effect"
import { MAX_SHORT_TEXT_LENGTH } from "../kernel/Limits.ts"
import { CreditAmount } from "../kernel/Money.ts"
import { isText } from "../kernel/Text.ts"
import { Timestamp } from "../kernel/Time.ts"

/** Credits usable anywhere (machine_id null) or pinned to one machine. */
export const ScopedCredits = Schema.Struct({
  machine_id: Schema.NullOr(Schema.String),
  credits: CreditAmount
})
export type ScopedCredits = typeof ScopedCredits.Type

/** GET /credits. */
export const CreditBalance = Schema.Struct({
  total_credits: CreditAmount,
  by_scope: Schema.Array(ScopedCredits)
})
export type CreditBalance = typeof CreditBalance.Type

export const ActivityTypeValues = ["usage", "credit_added", "plan_credit_granted", "credit_reversed"] as const
export const ActivityType = Schema.Literals(ActivityTypeValues)
export type ActivityType = typeof ActivityType.Type

/**
 * One entry of GET /credits/activity (newest first). `credits` is the signed change to the
 * balance: negative for usage and for credits taken back by a refund or a dispute
 * (`credit_reversed`), positive for credits added and plan grants (docs/resources.md).
 */
export const ActivityEntry = Schema.Struct({
  id: Schema.String,
  type: ActivityType,
  credits: CreditAmount,
  machine_id: Schema.NullOr(Schema.String),
  at: Timestamp
})
export type ActivityEntry = typeof ActivityEntry.Type

export const ActivityList = Schema.Struct({ data: Schema.Array(ActivityEntry) })
export type ActivityList = typeof ActivityList.Type

/**
 * A gift or credit ticket: a code that grants credits to whoever redeems it. `code` is masked for
 * a key without `manage` (payments/OrderRules.ts ticketCodeFor).
 */
export const Ticket = Schema.Struct({
  code: Schema.String,
  credits: CreditAmount,
  machine_id: Schema.NullOr(Schema.String),
  redeemed: Schema.Boolean,
  redeemed_by_you: Schema.Boolean
})
export type Ticket = typeof Ticket.Type

/** GET /tickets: tickets this account bought, including unredeemed ones. */
export const TicketList = Schema.Struct({ data: Schema.Array(Ticket) })
export type TicketList = typeof TicketList.Type

/** POST /credits/redeem body. */
export const RedeemTicket = Schema.Struct({
  code: Schema.String.check(
    isText,
    Schema.isNonEmpty({ message: "code must not be empty" }),
    Schema.isMaxLength(MAX_SHORT_TEXT_LENGTH)
  )
})
export type RedeemTicket = typeof RedeemTicket.Type

/** POST /credits/redeem response. */
export const RedeemResponse = Schema.Struct({
  redeemed: Schema.Boolean,
  credits: CreditAmount,
  machine_id: Schema.NullOr(Schema.String)
})
export type RedeemResponse = typeof RedeemResponse.Type
