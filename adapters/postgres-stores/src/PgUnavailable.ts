/**
 * Which PostgreSQL failures mean "the database cannot be reached now" (core's StoreUnavailable):
 * @effect/sql-pg's ConnectionError (refused, dropped or closed connections, failed connects), and
 * the SQLSTATEs of a server going away or not yet back: 57P01 admin_shutdown, 57P02
 * crash_shutdown, 57P03 cannot_connect_now. Everything else (a constraint, a bug) stays a defect.
 */

const field = (u: unknown, name: string): unknown =>
  typeof u === "object" && u !== null ? (u as Record<string, unknown>)[name] : undefined

export const isPgUnavailable = (defect: unknown): boolean => {
  if (field(defect, "_tag") !== "SqlError") return false
  const reason = field(defect, "reason")
  if (field(reason, "_tag") === "ConnectionError") return true
  const code = field(field(reason, "cause"), "code")
  return typeof code === "string" && (/^57P0[123]$/.test(code) || code.startsWith("08"))
}
