/**
 * Which DynamoDB failures mean "the table cannot be reached now" (core's StoreUnavailable): the
 * service's own unavailability and throttling (after the SDK's retries), timeouts, and network
 * errors reaching the endpoint. Everything else (a failed condition not handled, a bug) stays a
 * defect.
 */
import { AccountStore } from "@model-platform/core/ports/AccountStore"
import { IdempotencyStore } from "@model-platform/core/ports/IdempotencyStore"
import { KeyStore } from "@model-platform/core/ports/KeyStore"
import { LedgerStore } from "@model-platform/core/ports/LedgerStore"
import { OrderStore } from "@model-platform/core/ports/OrderStore"
import { PeopleStore } from "@model-platform/core/ports/PeopleStore"
import { RateLimitStore } from "@model-platform/core/ports/RateLimitStore"
import { markUnavailable } from "@model-platform/core/ports/StoreUnavailable"
import { UsageStore } from "@model-platform/core/ports/UsageStore"
import { type Context, Effect, Layer } from "effect"
import { errorName } from "./DynamoErrors.ts"

const UNAVAILABLE_NAMES = new Set([
  "ServiceUnavailable",
  "ServiceUnavailableException",
  "InternalServerError",
  "ThrottlingException",
  "ProvisionedThroughputExceededException",
  "RequestLimitExceeded",
  "TimeoutError",
  "RequestTimeout",
  "RequestTimeoutException"
])
const NETWORK_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH"])

const codeOf = (u: unknown): unknown => typeof u === "object" && u !== null ? (u as { code?: unknown }).code : undefined

export const isDynamoUnavailable = (defect: unknown): boolean => {
  const name = errorName(defect)
  if (name !== undefined && UNAVAILABLE_NAMES.has(name)) return true
  const code = codeOf(defect) ?? codeOf((defect as { cause?: unknown } | null)?.cause)
  return typeof code === "string" && NETWORK_CODES.has(code)
}

const marked = <I, S extends object>(tag: Context.Key<I, S>) =>
  Layer.effect(tag, Effect.map(tag, (service) => markUnavailable(tag.key, service, isDynamoUnavailable)))

/** The DynamoDB stores with their unavailability marked; GatewayStoreComposed is built over them. */
export const markedDynamoStores = Layer.mergeAll(
  marked(AccountStore),
  marked(KeyStore),
  marked(IdempotencyStore),
  marked(LedgerStore),
  marked(OrderStore),
  marked(UsageStore),
  marked(RateLimitStore),
  marked(PeopleStore)
)
