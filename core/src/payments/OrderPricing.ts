/**
 * What an order body costs and buys (docs/payments.md "Orders", docs/plans.md "Offers and
 * prices"): credits at the catalogue's credit price, a package, a rental or a plan from the
 * machine's offer (plans/Offers.ts). `price` answers what an order of the body records; `quote`
 * what POST /quotes shows of it.
 */
import { Effect } from "effect"
import type { Catalogue } from "../catalogue/Catalogue.ts"
import { creditsToMicro, MICRO_PER_CREDIT, microToCredits } from "../kernel/Money.ts"
import type { CreateOrder, OrderType, Quote } from "./Orders.ts"
import { rentalPrice, subscriptionPrice } from "../plans/Offers.ts"
import { RENEWAL_ORDER_DAYS } from "../plans/Plans.ts"
import type { OrderDetails } from "../plans/PlanStore.ts"
import { centsToUsd, CURRENCY, formatCredits } from "./OrderRules.ts"
import { orderError } from "./PaymentErrors.ts"

/** What an order body prices to. */
export interface Priced {
  readonly type: OrderType
  readonly title: string
  readonly amount_cents: bigint
  readonly credits: bigint
  readonly machine_id: string | null
  readonly package_id: string | null
  readonly gift: boolean
  /** What a rental or a plan order buys (null for credits and packages). */
  readonly details: OrderDetails | null
}

/** Pricing over the catalogue. */
export const makePricing = (catalogue: Catalogue["Service"]) => {
  const machineName = (machineId: string) => catalogue.machineConfig(machineId)?.name ?? machineId

  /** The machine of a rental or subscription body (404 machine_not_found). */
  const offeringMachine = (machineId: string) => {
    const machine = catalogue.machineConfig(machineId)
    return machine === undefined ? orderError("machine_not_found", `No machine "${machineId}".`) : Effect.succeed(machine)
  }

  const price = Effect.fnUntraced(function*(body: CreateOrder) {
    switch (body.type) {
      case "credits": {
        const perUsd = catalogue.config.prices.credits_per_usd
        if (perUsd === null) {
          return yield* orderError(
            "credit_price_unset",
            "Credit orders are not available yet: no credit price is set. Packages may be bought (GET /packages)."
          )
        }
        const machineId = body.machine_id ?? null
        if (machineId !== null && catalogue.machineConfig(machineId) === undefined) {
          return yield* orderError("machine_not_found", `No machine "${machineId}".`)
        }
        const credits = BigInt(body.amount_usd) * BigInt(perUsd) * MICRO_PER_CREDIT
        const gift = body.gift ?? false
        const what = `${formatCredits(credits)} credits${machineId === null ? "" : ` on ${machineName(machineId)}`}`
        return {
          type: "credits",
          title: gift ? `Gift: ${what}` : what,
          amount_cents: BigInt(body.amount_usd) * 100n,
          credits,
          machine_id: machineId,
          package_id: null,
          gift,
          details: null
        } satisfies Priced
      }
      case "package": {
        const pkg = catalogue.packages.find((p) => p.id === body.package_id)
        if (pkg === undefined) return yield* orderError("package_not_found", `No package "${body.package_id}".`)
        const credits = creditsToMicro(pkg.credits)
        if (credits === undefined) return yield* Effect.die(new Error(`package ${pkg.id}: credits ${pkg.credits} are not exact`))
        const gift = body.gift ?? false
        return {
          type: "package",
          title: gift ? `Gift: ${pkg.name}` : pkg.name,
          amount_cents: BigInt(Math.round(pkg.amount_usd * 100)),
          credits,
          machine_id: pkg.machine_id,
          package_id: pkg.id,
          gift,
          details: null
        } satisfies Priced
      }
      case "rental": {
        const machine = yield* offeringMachine(body.machine_id)
        const { amount_cents, ...rental } = yield* rentalPrice(machine, body)
        const gpus = rental.gpu === 0 ? "" : `, ${rental.gpu} GPU`
        return {
          type: "rental",
          title: `${machine.name}: ${rental.cpu_cores} cores, ${rental.memory_gb} GB${gpus} for ${rental.hours} h`,
          amount_cents,
          credits: 0n,
          machine_id: machine.id,
          package_id: null,
          gift: false,
          details: { kind: "rental", ...rental }
        } satisfies Priced
      }
      case "subscription": {
        const machine = yield* offeringMachine(body.machine_id)
        const renewing = body.renew_subscription_id ?? null
        // A renewal order adds RENEWAL_ORDER_DAYS, priced pro rata of the plan's period.
        const { amount_cents, period_days, plan } = yield* subscriptionPrice(machine, body, renewing === null ? undefined : RENEWAL_ORDER_DAYS)
        return {
          type: "subscription",
          title: renewing === null
            ? `${plan.name} plan on ${machine.name}, ${period_days} days`
            : `${plan.name} plan on ${machine.name}: ${period_days} more days (${renewing})`,
          amount_cents,
          credits: 0n,
          machine_id: machine.id,
          package_id: null,
          gift: false,
          details: { kind: "subscription", plan_id: plan.id, period_days, renew_subscription_id: renewing }
        } satisfies Priced
      }
    }
  })

  const quote = Effect.fn("Orders.quote")(function*(body: CreateOrder) {
    const priced = yield* price(body)
    const common = { amount_usd: centsToUsd(priced.amount_cents), currency: CURRENCY }
    const credits = microToCredits(priced.credits)
    const details = priced.details
    if (details?.kind === "rental") {
      const { kind: _, ...rental } = details
      return { type: "rental", ...common, details: { credits, machine_id: priced.machine_id ?? "", ...rental } } satisfies Quote
    }
    if (details?.kind === "subscription") {
      const { kind: _, ...plan } = details
      return { type: "subscription", ...common, details: { credits, machine_id: priced.machine_id ?? "", ...plan } } satisfies Quote
    }
    return priced.type === "credits"
      ? { type: "credits", ...common, details: { credits, machine_id: priced.machine_id, gift: priced.gift } } satisfies Quote
      : {
        type: "package",
        ...common,
        details: { credits, machine_id: priced.machine_id, package_id: priced.package_id ?? "", gift: priced.gift }
      } satisfies Quote
  })

  return { price, quote } as const
}
