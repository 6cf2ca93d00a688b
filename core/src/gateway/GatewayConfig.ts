/**
 * The gateway's settings (Gateway.layer takes any of them; the rest are these defaults): timeouts,
 * streaming limits, retries and cooldowns, the tier cache, metering inline or after the answer,
 * speculative dispatch and the store batches. docs/gateway.md explains each where it acts.
 */
export interface GatewayConfig {
  /** Time allowed until a machine's answer head arrives (a non-streamed answer comes whole). */
  readonly firstByteTimeoutMs: number
  /**
   * A streamed call may last this long; past it the stream ends with an error event (charged for
   * what the machine sent, docs/gateway.md "Streaming").
   */
  readonly maxStreamMs: number
  /**
   * Bytes of a stream held for a client that reads more slowly than its machine writes; a client
   * that falls this far behind is cut (an error event) and the call drained and charged.
   */
  readonly streamBufferBytes: number
  /** Keep-alive comment interval while a stream waits for its first event. */
  readonly keepAliveMs: number
  /** How long a stream is read on after its client left. */
  readonly drainTimeoutMs: number
  /** At most this many such drains at once; beyond, the call is billed on its estimate at once. */
  readonly maxDrains: number
  /** Machines tried per call at most. */
  readonly maxAttempts: number
  /**
   * Canaries failing in a row after which a machine is skipped for cooldownMs (a client's failed
   * call only starts a canary: docs/gateway.md "Cooldown", Cooldown.ts).
   */
  readonly cooldownFailures: number
  readonly cooldownMs: number
  /** Time a canary has for its whole answer. */
  readonly canaryTimeoutMs: number
  /** Pause between two canaries of one chain. */
  readonly canaryRetryMs: number
  /** After a canary passed, the same kind of failure starts no new canary for this long. */
  readonly canaryQuietMs: number
  /**
   * How long an account's purchased credits (its tier, so its rpm) are kept in process where the
   * shell sends no account notices; with notices, until the account's notice (kernel/AccountCache.ts).
   */
  readonly tierCacheMs: number
  /** The rpm window. */
  readonly rateWindowMs: number
  /**
   * Settle and record before the answer ends (the body is sent after metering; a stream's last
   * bytes after it), instead of in the background after it. For hosts that freeze the process
   * once a response is sent (Lambda). Costs the latency of settlement and the usage record.
   */
  readonly settleInline: boolean
  /**
   * Call the first machine while admission runs, for keys admitted within speculationWindowMs
   * (docs/gateway.md "Admission in one store step"). Off: the machine is called after admission.
   */
  readonly speculativeDispatch: boolean
  /**
   * How lately a key's call must have been admitted for its next to be speculated. The cost of a
   * wrong guess is bounded by the rule, not by this window: once per key after each admitted call.
   */
  readonly speculationWindowMs: number
  /** At most this many admissions, or calls' settlements and usage records, go in one store step. */
  readonly storeBatch: number
  /**
   * settleInline: how long metering is retried while the store is unavailable before the call
   * answers 503 store_unavailable instead of its answer (Settlement.ts).
   */
  readonly inlineRetryMs: number
  /**
   * Admit a key's calls from credit leases (docs/performance.md "Credit leases"): one store step
   * reserves for many calls and takes their rpm hits ahead. Only while account notices are live
   * (a PostgreSQL server); elsewhere every call's admission is a store step, as when off.
   */
  readonly creditLeases: boolean
}

export const defaultGatewayConfig: GatewayConfig = {
  firstByteTimeoutMs: 300_000,
  maxStreamMs: 600_000,
  streamBufferBytes: 1_048_576,
  keepAliveMs: 5_000,
  drainTimeoutMs: 60_000,
  maxDrains: 64,
  maxAttempts: 3,
  cooldownFailures: 3,
  cooldownMs: 30_000,
  canaryTimeoutMs: 30_000,
  canaryRetryMs: 50,
  canaryQuietMs: 1_000,
  tierCacheMs: 10_000,
  rateWindowMs: 60_000,
  settleInline: false,
  speculativeDispatch: true,
  speculationWindowMs: 60_000,
  storeBatch: 64,
  inlineRetryMs: 5_000,
  creditLeases: false
}

/** A reservation outlives the longest call and its drain by this margin before it expires. */
export const RESERVATION_MARGIN_MS = 5 * 60_000
