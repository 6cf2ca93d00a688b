/**
 * Port: usage records, one per completed inference call (DESIGN.md "exactly one usage record").
 * The gateway writes a record once per call ref; writing a ref again changes nothing. Billing
 * (GET /billing/usage, usage.csv, statements, monthly limits) reads them back.
 *
 * Money is integer micro-credits (bigint). Quantities are integer units of the price table's unit
 * (tokens, requests). Every amount is >= 0 and the ref is non-empty (`usageRecordProblem`); a store
 * dies on a record that breaks this, as on any other store failure.
 *
 * Listing order: oldest `at` first; records of one `at` by ref (so that every store answers the
 * same order). Refs are unique across accounts (they are reservation refs).
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
  /** Records of an account in [from, to), oldest first (then by ref), optionally of one key and one service. */
  readonly list: (query: UsageQuery) => Effect.Effect<ReadonlyArray<UsageRecord>>
  /** Sum of `credits` charged to an account (and optionally one key) in [from, to): monthly limits. */
  readonly spent: (query: UsageQuery) => Effect.Effect<bigint>
}>()("@model-platform/core/ports/UsageStore") {}

/** Why a store must refuse this record, or undefined. Pure, shared by the stores. */
export const usageRecordProblem = (record: UsageRecord): string | undefined => {
  if (record.ref.length === 0) return "the ref must be non-empty"
  for (
    const field of [
      "quantity",
      "input_tokens",
      "output_tokens",
      "list_credits",
      "credits",
      "from_allowance",
      "from_trial"
    ] as const
  ) {
    if (record[field] < 0n) return `${field} must be >= 0, got ${record[field]}`
  }
  return undefined
}

/** Whether a record answers a query: its account, at in [from, to), and the key and service asked for. */
export const matchesUsageQuery = (query: UsageQuery, record: UsageRecord): boolean =>
  record.account_id === query.account_id &&
  record.at >= query.from &&
  record.at < query.to &&
  (query.key_id === undefined || record.key_id === query.key_id) &&
  (query.service === undefined || record.service === query.service)

/** The listing order: oldest `at` first, then by ref. */
export const byTimeThenRef = (a: UsageRecord, b: UsageRecord): number =>
  a.at < b.at ? -1 : a.at > b.at ? 1 : a.ref < b.ref ? -1 : a.ref > b.ref ? 1 : 0
