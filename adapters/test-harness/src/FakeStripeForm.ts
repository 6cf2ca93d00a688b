/**
 * Stripe's request encoding as the fake Stripe reads it: `application/x-www-form-urlencoded`
 * (and query strings) with nested keys in brackets, as the official client writes them
 * (`metadata[order_id]=…`, `line_items[0][price_data][unit_amount]=…`, `expand[0]=…`).
 * Numeric keys make arrays.
 */

export type FormValue = string | FormObject | ReadonlyArray<FormValue>
export interface FormObject {
  readonly [key: string]: FormValue
}

const pathOf = (key: string): Array<string> => {
  const first = key.indexOf("[")
  if (first < 0) return [key]
  const parts = [key.slice(0, first)]
  for (const match of key.slice(first).matchAll(/\[([^\]]*)\]/g)) parts.push(match[1]!)
  return parts
}

const toArrays = (value: unknown): FormValue => {
  if (typeof value === "string") return value
  const record = value as Record<string, unknown>
  const keys = Object.keys(record)
  if (keys.length > 0 && keys.every((k) => /^\d+$/.test(k))) {
    return keys.sort((a, b) => Number(a) - Number(b)).map((k) => toArrays(record[k]))
  }
  return Object.fromEntries(keys.map((k) => [k, toArrays(record[k])]))
}

/** The nested object a Stripe form body or query string encodes. */
export const parseStripeForm = (text: string): FormObject => {
  const root: Record<string, unknown> = {}
  for (const [key, value] of new URLSearchParams(text)) {
    const path = pathOf(key)
    let node = root
    for (let i = 0; i < path.length - 1; i++) {
      const part = path[i]!
      const next = node[part]
      if (typeof next !== "object" || next === null) node[part] = {}
      node = node[part] as Record<string, unknown>
    }
    node[path[path.length - 1]!] = value
  }
  return toArrays(root) as FormObject
}

/** A string field, if present as a string. */
export const str = (form: FormObject, key: string): string | undefined => {
  const value = form[key]
  return typeof value === "string" ? value : undefined
}

/** A nested object field, or an empty one. */
export const obj = (form: FormObject | undefined, key: string): FormObject => {
  const value = form?.[key]
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as FormObject) : {}
}

/** The `expand` list of a request. */
export const expandList = (form: FormObject): ReadonlyArray<string> => {
  const value = form["expand"]
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : typeof value === "string" ? [value] : []
}

/** Metadata: string values only, as Stripe keeps them. */
export const metadataOf = (form: FormObject | undefined): Record<string, string> =>
  Object.fromEntries(Object.entries(obj(form, "metadata")).filter((e): e is [string, string] => typeof e[1] === "string"))
