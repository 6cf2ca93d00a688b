/**
 * Port: the inference gateway's writes per call, in as few store round trips as the store allows
 * (docs/gateway.md "Admission in one store step", docs/performance.md "Where it stands").
 *
 * - `admit`, before the call: confirm the key is still live, record its use (last_used_at), count
 *   the call in its rpm window and, when it is within the limit, reserve the cost bound.
 * - `commit`, after it: settle each call's reservation and write its usage record.
 * Both take batches: the gateway groups the calls that arrive while a batch is being written
 * (core/src/kernel/Batcher.ts), so under load many calls share one store round trip.
 *
 * A store that can do a batch in one statement implements it (Postgres: `gateway_admit` per
 * admission in one statement, `gateway_commit`); the others provide `GatewayStoreComposed`, the same steps through KeyStore,
 * RateLimitStore, LedgerStore and UsageStore. The shared contract (adapters/contract-kit
 * GatewayStoreContract) holds both to the same answers.
 */
import { Context, Effect, Layer } from "effect"
import { reserveOrdered } from "../ledger/Ledger.ts"
import type { Timestamp } from "../kernel/Time.ts"
import { KeyStore } from "../keys/KeyStore.ts"
import {
  type Draw,
  LedgerStore,
  type OrderedReservation,
  type ReserveInOrderResult,
  type Settlement
} from "../ledger/LedgerStore.ts"
import { hitProblem, RateLimitStore } from "../kernel/RateLimitStore.ts"
import { type UsageRecord, usageRecordProblem, UsageStore } from "../billing/UsageStore.ts"
import type { AccountId, KeyId } from "../kernel/Ids.ts"

export interface Admission {
  readonly account_id: AccountId
  readonly key_id: KeyId
  /** Set the key's last_used_at to this (never backwards); undefined: leave it. */
  readonly touch_at: Timestamp | undefined
  /**
   * The rpm counter: `RateLimitStore.hit(bucket, window_start, window_ms)`, `hits` times (1 when
   * absent: a lease takes its calls' hits ahead, docs/performance.md "Credit leases"). Every hit
   * is counted; the admission is refused when its first hit passes `limit`.
   */
  readonly rate: {
    readonly bucket: string
    readonly window_start: number
    readonly window_ms: number
    readonly limit: number
    readonly hits?: number | undefined
  }
  /** The cost bound to reserve (`LedgerStore.reserveInOrder`'s request); undefined: none. */
  readonly reservation: OrderedReservation | undefined
}

export type AdmissionResult =
  /** The key was revoked (or is gone) since it was read: nothing counted, touched or reserved. */
  | { readonly _tag: "KeyRevoked" }
  /**
   * Counted past the limit: nothing reserved. `count` is the window's count after the
   * admission's hits (with one hit: the call's place in the window).
   */
  | { readonly _tag: "RateLimited"; readonly count: number }
  /**
   * Counted within the limit (its first hit at least; `count` as above, so `limit - count + hits`
   * of its hits are within the limit when that is less than `hits`); `reserved` is the
   * reservation's outcome when one was asked.
   */
  | { readonly _tag: "Admitted"; readonly count: number; readonly reserved: ReserveInOrderResult | undefined }

/** One completed call to meter. */
export interface Metered {
  /** The settlement of the call's reservation; undefined when it held none (unpriced). */
  readonly settlement: Settlement | undefined
  /**
   * Set when the call drew from a lease (docs/performance.md "Credit leases") instead of holding
   * a reservation of its own: the lease and what the call drew of it. `settlement` is then the
   * draw's (`LedgerStore.draw`), its ref the call's: charged whether or not the lease is still
   * pending ("settled"); a draw replayed answers "not_pending" and the record says what it was
   * charged then.
   */
  readonly drawn?: Omit<Draw, "settlement"> | undefined
  /**
   * The call's usage record, `credits`, `from_allowance` and `from_trial` as the settlement charges
   * them. When the reservation is no longer pending the record is written with what was charged:
   * settled already (a replay), the reservation's `charged` as credits and the record's own grant
   * parts; expired or voided meanwhile, nothing (credits, from_allowance and from_trial 0).
   */
  readonly record: UsageRecord
}

export interface MeteredResult {
  /** "settled"; "not_pending" (charged nothing); "none" (no settlement asked). */
  readonly settlement: "settled" | "not_pending" | "none"
  /** "Duplicate" when a record of the ref existed (nothing changed). */
  readonly record: "Recorded" | "Duplicate"
}

export interface GatewayStoreShape {
  /**
   * Admits calls, each as one atomic step, in the order given (several admissions of one key count
   * one after the other); answers in that order. A broken admission is a defect.
   */
  readonly admit: (admissions: ReadonlyArray<Admission>) => Effect.Effect<ReadonlyArray<AdmissionResult>>
  /**
   * Meters calls, each atomically where the store can (its settlement and record together);
   * answers in the order given.
   */
  readonly commit: (calls: ReadonlyArray<Metered>) => Effect.Effect<ReadonlyArray<MeteredResult>>
}

/** Why an admission's `rate.hits` must be refused (a defect), or undefined: a positive integer, at most 1,000. */
export const hitsProblem = (hits: number | undefined): string | undefined =>
  hits === undefined || (Number.isSafeInteger(hits) && hits >= 1 && hits <= 1_000)
    ? undefined
    : `rate.hits must be an integer from 1 to 1000, got ${hits}`

export class GatewayStore extends Context.Service<GatewayStore, GatewayStoreShape>()(
  "@model-platform/core/gateway/GatewayStore"
) {}

/**
 * The same steps through the individual stores (memory, DynamoDB): a key read, the counter, the
 * reservation (`reserveOrdered`: the store's `reserveInOrder` or the read-allocate-write loop),
 * then per call the settlement and the record.
 */
const composeGatewayStore = (stores: {
  readonly keys: KeyStore["Service"]
  readonly rateLimits: RateLimitStore["Service"]
  readonly ledger: LedgerStore["Service"]
  readonly usage: UsageStore["Service"]
  readonly reserveOrdered: (request: OrderedReservation) => Effect.Effect<ReserveInOrderResult>
}): GatewayStoreShape => {
  // Made once per store, not per call (docs/gateway.md "Code on the call path").
  const admitOne = Effect.fnUntraced(function*(admission: Admission) {
    const key = yield* stores.keys.get(admission.account_id, admission.key_id)
    if (key === undefined || key.revoked_at !== null) return { _tag: "KeyRevoked" } as const
    if (admission.touch_at !== undefined) yield* stores.keys.touch(admission.key_id, admission.touch_at)
    const { bucket, hits = 1, limit, window_ms, window_start } = admission.rate
    let count = 0
    for (let i = 0; i < hits; i++) count = yield* stores.rateLimits.hit(bucket, window_start, window_ms)
    if (count - hits + 1 > limit) return { _tag: "RateLimited", count } as const
    const reserved = admission.reservation === undefined
      ? undefined
      : yield* stores.reserveOrdered(admission.reservation)
    return { _tag: "Admitted", count, reserved } as const
  })
  const drawOne = (draw: Draw) =>
    stores.ledger.draw === undefined
      ? Effect.die(new Error("GatewayStore.commit: a call drew from a lease, and this ledger store has no draw"))
      : Effect.map(stores.ledger.draw(draw), (result) => result === "duplicate" ? "not_pending" as const : "settled" as const)
  const commitOne = Effect.fnUntraced(function*({ drawn, record, settlement }: Metered) {
    const settled = settlement === undefined
      ? "none" as const
      : drawn !== undefined
      ? yield* drawOne({ ...drawn, settlement })
      : yield* stores.ledger.settle(settlement)
    let charged = record
    if (settlement !== undefined && settled === "not_pending") {
      // Settled already: a replay (the gateway's journal, a retry) of a commit that died between
      // its two writes; the record says what was charged then. Expired or voided: nothing.
      const reservation = yield* stores.ledger.reservation(settlement.ref)
      charged = reservation?.status === "settled"
        ? { ...record, credits: reservation.charged ?? 0n }
        : { ...record, credits: 0n, from_allowance: 0n, from_trial: 0n }
    }
    const written = yield* stores.usage.record(charged)
    return { settlement: settled, record: written } satisfies MeteredResult
  })
  return {
    admit: (admissions) => {
      // Every counter is checked before anything is written, as a one-statement store does.
      for (const { rate } of admissions) {
        const problem = hitProblem(rate.bucket, rate.window_start, rate.window_ms) ?? hitsProblem(rate.hits)
        if (problem !== undefined) return Effect.die(new Error(`GatewayStore.admit: ${problem}`))
      }
      return Effect.forEach(admissions, admitOne)
    },
    commit: (calls) => {
      // Every record is checked before anything is written: a record the usage store would refuse
      // must not leave its call (or an earlier one of the batch) settled without its record.
      for (const { record } of calls) {
        const problem = usageRecordProblem(record)
        if (problem !== undefined) return Effect.die(new Error(`GatewayStore.commit: record ${record.ref}: ${problem}`))
      }
      return Effect.forEach(calls, commitOne)
    }
  }
}

export const GatewayStoreComposed: Layer.Layer<
  GatewayStore,
  never,
  KeyStore | RateLimitStore | LedgerStore | UsageStore
> = Layer.effect(
  GatewayStore,
  Effect.gen(function*() {
    const ledger = yield* LedgerStore
    return GatewayStore.of(composeGatewayStore({
      keys: yield* KeyStore,
      rateLimits: yield* RateLimitStore,
      ledger,
      usage: yield* UsageStore,
      reserveOrdered: reserveOrdered(ledger)
    }))
  })
)
