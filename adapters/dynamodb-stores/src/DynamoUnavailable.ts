/**
 * Which DynamoDB failures mean "the table cannot be reached now" (core's StoreUnavailable): the
 * service's own unavailability and throttling (after the SDK's retries), timeouts, and network
 * errors reaching the endpoint. Everything else (a failed condition not handled, a bug) stays a
 * defect.
 */
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
