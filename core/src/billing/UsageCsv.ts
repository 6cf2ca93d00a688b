/**
 * The usage CSV (GET /billing/usage.csv): one line per usage record under the spec's header
 * (USAGE_CSV_COLUMNS), or one line per group of a report. Pure text functions; the route streams
 * them a page of records at a time (http/UsageHandlers.ts).
 *
 * - RFC 4180: CRLF line ends; a field holding a comma, a double quote, CR or LF is quoted, its
 *   quotes doubled.
 * - Spreadsheet formula injection: a text field that begins with =, +, -, @, tab or CR gets a
 *   leading single quote (OWASP's advice), so a spreadsheet opening the file shows it as text
 *   instead of running it. Key names, agent ids and model ids are client or operator text; times
 *   and amounts never begin with those characters and are written as they are.
 * - Amounts are exact decimal credits from micro-credits (no float): 1500 micro-credits is
 *   `0.0015`; quantities are integers of the record's unit.
 */
import type { UsageLine } from "./UsageStore.ts"
import { USAGE_CSV_COLUMNS } from "./Schemas.ts"

/** The header of the per-record CSV, exactly the spec's columns. */
export const USAGE_CSV_HEADER = `${USAGE_CSV_COLUMNS.join(",")}\r\n`

/** The columns of the per-group CSV: the JSON report's rows. */
export const USAGE_GROUP_CSV_COLUMNS = ["key", "label", "calls", "list_credits", "credits"] as const
export const USAGE_GROUP_CSV_HEADER = `${USAGE_GROUP_CSV_COLUMNS.join(",")}\r\n`

const NEEDS_QUOTES = /[",\r\n]/
const FORMULA_START = /^[=+\-@\t\r]/
/** Either of the two: most fields match neither, and one test tells (the export writes millions). */
const SPECIAL = /^[=+\-@\t\r]|[",\r\n]/

/** One field of RFC 4180, quoted only when it must be. */
export const csvField = (value: string): string =>
  NEEDS_QUOTES.test(value) ? `"${value.replaceAll("\"", "\"\"")}"` : value

/** A text field: guarded against formula injection, then quoted as needed. */
export const csvText = (value: string): string =>
  SPECIAL.test(value) ? csvField(FORMULA_START.test(value) ? `'${value}` : value) : value

/**
 * Micro-credits as exact decimal credits: no trailing zeros, no decimal point for whole credits.
 * String work on the integer's digits (one bigint conversion, no bigint division).
 */
export const creditsText = (micro: bigint): string => {
  const digits = micro < 0n ? (-micro).toString() : micro.toString()
  const sign = micro < 0n ? "-" : ""
  const cut = digits.length - 6
  const whole = cut > 0 ? digits.slice(0, cut) : "0"
  let fraction = cut > 0 ? digits.slice(cut) : digits.padStart(6, "0")
  let end = 6
  while (end > 0 && fraction.charCodeAt(end - 1) === 48) end--
  fraction = fraction.slice(0, end)
  return end === 0 ? `${sign}${whole}` : `${sign}${whole}.${fraction}`
}

/** One record's line, in USAGE_CSV_COLUMNS order. */
export const usageRecordLine = (r: UsageLine): string =>
  `${r.at},${csvText(r.service)},${csvText(r.model)},${csvText(r.unit)},${r.quantity},${csvText(r.key_id)},` +
  `${csvText(r.agent_id ?? "")},${creditsText(r.from_allowance)},${creditsText(r.from_trial)},` +
  `${creditsText(r.list_credits)},${creditsText(r.credits)},${csvText(r.ref)}\r\n`

/** One group's line, in USAGE_GROUP_CSV_COLUMNS order. */
export const usageGroupLine = (g: {
  readonly key: string
  readonly label: string
  readonly calls: bigint
  readonly list_credits: bigint
  readonly credits: bigint
}): string =>
  `${csvText(g.key)},${csvText(g.label)},${g.calls},${creditsText(g.list_credits)},${creditsText(g.credits)}\r\n`

/**
 * Parses CSV text back into rows of fields (RFC 4180, CRLF or LF line ends): for tests and for a
 * reader of the export; the platform itself only writes CSV.
 */
export const parseCsv = (text: string): Array<Array<string>> => {
  const rows: Array<Array<string>> = []
  let row: Array<string> = []
  let field = ""
  let quoted = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!
    if (quoted) {
      if (c === "\"" && text[i + 1] === "\"") {
        field += "\""
        i++
      } else if (c === "\"") quoted = false
      else field += c
    } else if (c === "\"") quoted = true
    else if (c === ",") {
      row.push(field)
      field = ""
    } else if (c === "\n" || (c === "\r" && text[i + 1] === "\n")) {
      if (c === "\r") i++
      row.push(field)
      rows.push(row)
      row = []
      field = ""
    } else field += c
  }
  if (field !== "" || row.length > 0) {
    row.push(field)
    rows.push(row)
  }
  return rows
}
