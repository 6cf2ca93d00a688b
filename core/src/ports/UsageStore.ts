/**
 * Port: usage records, one per completed inference call (DESIGN.md "exactly one usage record").
 * The gateway writes a record once per call ref; writing a ref again changes nothing. Billing
 * (GET /billing/usage, usage.csv, statements, monthly limits) reads them back.
 *
 * Money is integer micro-credits (bigint). Quantities are integer units of the price table's unit
 * (tokens, requests).
 */
import { Context, type Effect } from "effect"
import type { Timestamp } from "../Time.ts"

export interface UsageRecord {
  /** Unique per call (the ledger reservation ref of the call). */
  readonly ref: string
  readonly account_id: string
  /** When the call completed. */
  readonly at: Timestamp
  readonly key_id: string
  readonly agent_id: string | null
  readonly machine_id: string
  /** The price table service the model is billed under (the model's `service`). */
  readonly service: string
  readonly model: string
  /** The unit the quantity counts, e.g. "tokens" or "requests". */
  readonly unit: string
  readonly quantity: bigint
  readonly input_tokens: bigint
  readonly output_tokens: bigint
  /** The call's cost at list price, micro-credits. */
  readonly list_credits: bigint
  /** What was charged, micro-credits (zero while charging is not open). */
  readonly credits: bigint
  /** Micro-credits covered by the plan allowance and by the one-time trial. */
  readonly from_allowance: bigint
  readonly from_trial: bigint
}

export interface UsageQuery {
  readonly account_id: string
  /** Inclusive lower bound. */
  readonly from: Timestamp
  /** Exclusive upper bound. */
  readonly to: Timestamp
  readonly key_id?: string | undefined
  readonly service?: string | undefined
}

export class UsageStore extends Context.Service<UsageStore, {
  /** Writes the record once per ref: "Recorded", or "Duplicate" when the ref exists (nothing changes). */
  readonly record: (record: UsageRecord) => Effect.Effect<"Recorded" | "Duplicate">
  /** The record of one call, if any. */
  readonly byRef: (ref: string) => Effect.Effect<UsageRecord | undefined>
  /** Records of an account in [from, to), oldest first, optionally of one key and one service. */
  readonly list: (query: UsageQuery) => Effect.Effect<ReadonlyArray<UsageRecord>>
  /** Sum of `credits` charged to an account (and optionally one key) in [from, to): monthly limits. */
  readonly spent: (query: UsageQuery) => Effect.Effect<bigint>
}>()("@model-platform/core/ports/UsageStore") {}
