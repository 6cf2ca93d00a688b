/**
 * Sample records the contracts write, every field set: a fixed instant to date them from, a random
 * secret hash, a key and a usage record. A contract overrides what its case is about.
 */
import { Effect } from "effect"
import type { UsageRecord } from "@model-platform/core/billing"
import type { KeyRecord } from "@model-platform/core/keys"
import { type Timestamp, toTimestamp } from "@model-platform/core/kernel"

/** A fixed instant plus `ms`. */
export const at = (ms: number): Timestamp => toTimestamp(Date.UTC(2026, 0, 15, 10, 20, 30, 456) + ms)

/** `bytes` random bytes in hex. */
export const randomHexOf = (bytes: number) =>
  Effect.sync(() => Array.from(crypto.getRandomValues(new Uint8Array(bytes)), (b) => b.toString(16).padStart(2, "0")).join(""))

/** 32 random bytes in hex: a secret's hash as the stores keep it. */
export const randomHex = randomHexOf(32)

/** A live inference key of `accountId`, made at `at(0)`. */
export const sampleKey = (id: string, accountId: string, secretHash: string, overrides: Partial<KeyRecord> = {}): KeyRecord => ({
  id,
  account_id: accountId,
  name: "contract key",
  prefix: "mpk_abcdefgh",
  secret_hash: secretHash,
  permissions: ["inference"],
  machine_id: null,
  subscription_id: null,
  rental_id: null,
  agent_id: null,
  created_at: at(0),
  last_used_at: null,
  revoked_at: null,
  ...overrides
})

/** A chat call's usage record of `accountId` at `at(0)`, charged 2,000 of 3,000 list credits. */
export const sampleUsage = (ref: string, accountId: string, fields: Partial<UsageRecord> = {}): UsageRecord => ({
  ref,
  account_id: accountId,
  at: at(0),
  key_id: "key_a",
  agent_id: null,
  machine_id: "m_1",
  service: "chat",
  model: "ref-chat",
  unit: "tokens",
  quantity: 1_500n,
  input_tokens: 1_000n,
  output_tokens: 500n,
  list_credits: 3_000n,
  credits: 2_000n,
  from_allowance: 0n,
  from_trial: 0n,
  ...fields
})
