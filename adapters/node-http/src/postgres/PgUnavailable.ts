/**
 * Which PostgreSQL failures mean "the database cannot be reached now" (core's StoreUnavailable):
 * @effect/sql-pg's ConnectionError (refused, dropped or closed connections, failed connects), and
 * the SQLSTATEs of a server going away or not yet back: 57P01 admin_shutdown, 57P02
 * crash_shutdown, 57P03 cannot_connect_now. Everything else (a constraint, a bug) stays a defect.
 */
import { AccountStore } from "@model-platform/core/ports/AccountStore"
import { GatewayStore } from "@model-platform/core/ports/GatewayStore"
import { IdempotencyStore } from "@model-platform/core/ports/IdempotencyStore"
import { KeyStore } from "@model-platform/core/ports/KeyStore"
import { LedgerStore } from "@model-platform/core/ports/LedgerStore"
import { OrderStore } from "@model-platform/core/ports/OrderStore"
import { PeopleStore } from "@model-platform/core/ports/PeopleStore"
import { RateLimitStore } from "@model-platform/core/ports/RateLimitStore"
import { markUnavailable } from "@model-platform/core/ports/StoreUnavailable"
import { UsageStore } from "@model-platform/core/ports/UsageStore"
import { type Context, Effect, Layer } from "effect"

const field = (u: unknown, name: string): unknown =>
  typeof u === "object" && u !== null ? (u as Record<string, unknown>)[name] : undefined

export const isPgUnavailable = (defect: unknown): boolean => {
  if (field(defect, "_tag") !== "SqlError") return false
  const reason = field(defect, "reason")
  if (field(reason, "_tag") === "ConnectionError") return true
  const code = field(field(reason, "cause"), "code")
  return typeof code === "string" && (/^57P0[123]$/.test(code) || code.startsWith("08"))
}

const marked = <I, S extends object>(tag: Context.Key<I, S>) =>
  Layer.effect(tag, Effect.map(tag, (service) => markUnavailable(tag.key, service, isPgUnavailable)))

/** Every store of the platform with its connection failures marked StoreUnavailable. */
export const markedPlatformStores = Layer.mergeAll(
  marked(AccountStore),
  marked(KeyStore),
  marked(IdempotencyStore),
  marked(LedgerStore),
  marked(OrderStore),
  marked(UsageStore),
  marked(RateLimitStore),
  marked(GatewayStore),
  marked(PeopleStore)
)
