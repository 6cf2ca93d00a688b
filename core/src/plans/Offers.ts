/**
 * What a machine offers to rent and to subscribe to, and what an order of it costs (docs/plans.md
 * "Offers and prices"). The catalogue shows a machine's `rent` and `subscribe` offers as configured
 * (free JSON); an order reads them with the schemas here, and a machine whose offer does not read
 * as one cannot be ordered from (400 naming machine_id).
 *
 * Money is exact: prices per hour and per period are decimal USD in the catalogue, read as
 * micro-USD (6 decimals at most; more, and the offer cannot be ordered), summed as integers, and
 * charged in whole cents rounded up.
 */
import { Effect, Option, Schema } from "effect"
import type { MachineConfig } from "../catalogue/CatalogueConfig.ts"
import { planError, type PlanErrorReason } from "./PlanErrors.ts"
import { creditsToMicro } from "../kernel/Money.ts"
import type { RentalOrderBody, SubscriptionOrderBody } from "./Schemas.ts"

const NonNegative = Schema.Number.check(Schema.isGreaterThanOrEqualTo(0))
const Count = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/** A machine's `rent` offer: USD per hour per unit, the hours and the most of each unit a rental may take. */
export const RentOffer = Schema.Struct({
  currency: Schema.Literal("USD"),
  usd_per_hour: Schema.Struct({ cpu_core: NonNegative, memory_gb: NonNegative, gpu: NonNegative, storage_gb: NonNegative }),
  min_hours: Count,
  max_hours: Count,
  max: Schema.Struct({ cpu_cores: Count, memory_gb: Count, gpu: Count, storage_gb: Count })
})
export type RentOffer = typeof RentOffer.Type

/** One plan of a machine's `subscribe` offer. */
export const PlanOffer = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  usd_per_period: NonNegative,
  /** The models a key scoped to the plan may call. */
  models: Schema.Array(Schema.String),
  payment_methods: Schema.Array(Schema.Literals(["card", "stablecoin"]))
})
export type PlanOffer = typeof PlanOffer.Type

/** A machine's `subscribe` offer: its plans, each paid per period of `period_days`. */
export const SubscribeOffer = Schema.Struct({
  currency: Schema.Literal("USD"),
  period_days: Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)),
  plans: Schema.Array(PlanOffer)
})
export type SubscribeOffer = typeof SubscribeOffer.Type

const decodeRent = Schema.decodeUnknownOption(RentOffer)
const decodeSubscribe = Schema.decodeUnknownOption(SubscribeOffer)

/** The machine's rent offer, when it has one that can be ordered. */
export const rentOfferOf = (machine: MachineConfig): RentOffer | undefined =>
  machine.rent === null ? undefined : Option.getOrUndefined(decodeRent(machine.rent))

/** The machine's subscribe offer, when it has one that can be ordered. */
export const subscribeOfferOf = (machine: MachineConfig): SubscribeOffer | undefined =>
  machine.subscribe === null ? undefined : Option.getOrUndefined(decodeSubscribe(machine.subscribe))

/** Micro-USD of a decimal USD amount, when it has at most 6 decimals. */
const microUsd = (usd: number): bigint | undefined => creditsToMicro(usd)

/** Whole cents of micro-USD, rounded up (a price is never rounded down). */
export const centsOf = (micro: bigint): bigint => (micro + 9_999n) / 10_000n

/** A rental as priced: what it takes, for how long, and its price. */
export interface RentalPrice {
  readonly cpu_cores: number
  readonly memory_gb: number
  readonly gpu: number
  readonly storage_gb: number
  readonly hours: number
  readonly amount_cents: bigint
}

const fieldError = <R extends PlanErrorReason>(reason: R, field: string, message: string) =>
  planError(reason, `${field}: ${message}`)

/**
 * The price of renting `body` from `machine`: each value within the offer (400 naming the field),
 * hours x the sum of each unit's price per hour, in cents rounded up.
 */
export const rentalPrice = (machine: MachineConfig, body: RentalOrderBody) =>
  Effect.gen(function*() {
    const offer = rentOfferOf(machine)
    if (offer === undefined) return yield* fieldError("rental_not_offered", "machine_id", `machine "${machine.id}" offers no rentals`)
    const gpu = body.gpu ?? 0
    const storage = body.storage_gb ?? 0
    const within: ReadonlyArray<readonly [string, number, number]> = [
      ["cpu_cores", body.cpu_cores, offer.max.cpu_cores],
      ["memory_gb", body.memory_gb, offer.max.memory_gb],
      ["gpu", gpu, offer.max.gpu],
      ["storage_gb", storage, offer.max.storage_gb]
    ]
    for (const [field, value, most] of within) {
      if (value > most) return yield* fieldError("rental_out_of_range", field, `at most ${most} on ${machine.id}, got ${value}`)
    }
    if (body.hours < offer.min_hours || body.hours > offer.max_hours) {
      return yield* fieldError("rental_out_of_range", "hours", `from ${offer.min_hours} to ${offer.max_hours} on ${machine.id}, got ${body.hours}`)
    }
    const rates = [
      [offer.usd_per_hour.cpu_core, body.cpu_cores],
      [offer.usd_per_hour.memory_gb, body.memory_gb],
      [offer.usd_per_hour.gpu, gpu],
      [offer.usd_per_hour.storage_gb, storage]
    ] as const
    let perHour = 0n
    for (const [usd, units] of rates) {
      const micro = microUsd(usd)
      if (micro === undefined) return yield* fieldError("price_inexact", "machine_id", `machine "${machine.id}" has a rent price that cannot be charged exactly`)
      perHour += micro * BigInt(units)
    }
    return {
      cpu_cores: body.cpu_cores,
      memory_gb: body.memory_gb,
      gpu,
      storage_gb: storage,
      hours: body.hours,
      amount_cents: centsOf(perHour * BigInt(body.hours))
    } satisfies RentalPrice
  })

/** A plan as priced: the plan, its period and its price per period. */
export interface SubscriptionPrice {
  readonly plan: PlanOffer
  readonly period_days: number
  readonly amount_cents: bigint
}

/**
 * The price of one period of `body.plan_id` on `machine` (400 naming machine_id or plan_id), or of
 * `days` of it (pro rata of its period, rounded up like every price).
 */
export const subscriptionPrice = (machine: MachineConfig, body: Pick<SubscriptionOrderBody, "plan_id">, days?: number) =>
  Effect.gen(function*() {
    const offer = subscribeOfferOf(machine)
    if (offer === undefined) return yield* fieldError("plan_not_offered", "machine_id", `machine "${machine.id}" offers no plans`)
    const plan = offer.plans.find((p) => p.id === body.plan_id)
    if (plan === undefined) {
      return yield* fieldError("plan_not_offered", "plan_id", `machine "${machine.id}" offers the plans ${offer.plans.map((p) => `"${p.id}"`).join(", ") || "(none)"}, not "${body.plan_id}"`)
    }
    const micro = microUsd(plan.usd_per_period)
    if (micro === undefined) return yield* fieldError("price_inexact", "plan_id", `plan "${plan.id}" has a price that cannot be charged exactly`)
    if (days === undefined) return { plan, period_days: offer.period_days, amount_cents: centsOf(micro) } satisfies SubscriptionPrice
    const period = BigInt(offer.period_days)
    const prorated = (micro * BigInt(days) + period - 1n) / period
    return { plan, period_days: days, amount_cents: centsOf(prorated) } satisfies SubscriptionPrice
  })
