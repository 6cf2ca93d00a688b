/**
 * Validates values against OpenAI's own OpenAPI document with Ajv, JSON Schema draft 2020-12: the
 * component schemas the tests name and those they refer to, kept in openai-schemas.json
 * (scripts/openai-schemas.ts makes it from the whole document), or a whole document at
 * OPENAI_OPENAPI_PATH.
 *
 * The document still uses the OpenAPI 3.0 keyword `nullable: true`: each such schema is rewritten
 * to `{anyOf: [<schema without nullable>, {type: "null"}]}` first, or valid chunks such as
 * `finish_reason: null` would be rejected. `discriminator` and the `x-*`
 * keywords are ignored; the formats unixtime, float, double, int64 and binary accept any value of
 * their type.
 *
 *   import { validate, assertValid } from "@model-platform/reference-machine/test/openaiSchema"
 *   expect(validate("CreateChatCompletionResponse", body)).toEqual([])
 */
import * as Ajv2020Module from "ajv/dist/2020.js"
import * as AjvFormatsModule from "ajv-formats"
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"

type ValidateFn = ((value: unknown) => boolean) & {
  errors?: ReadonlyArray<{ instancePath: string; message?: string; params?: unknown }> | null
}
interface AjvLike {
  addSchema(schema: object, key: string): unknown
  addFormat(name: string, format: true): unknown
  getSchema(ref: string): ValidateFn | undefined
}
type AjvCtor = new(options: Record<string, unknown>) => AjvLike
type FormatsPlugin = (ajv: AjvLike, options?: unknown) => unknown

// CommonJS interop: under Node's ESM loader the namespace's default is module.exports itself.
const unwrap = <T>(m: unknown): T => {
  let x: any = m
  while (x !== null && typeof x === "object" && "default" in x) x = x.default
  return x as T
}
const Ajv2020 = unwrap<AjvCtor>(Ajv2020Module)
const addFormats = unwrap<FormatsPlugin>(AjvFormatsModule)

/** OpenAI's document, or the part of it the tests use (beside this file). */
export const OPENAPI_PATH = process.env.OPENAI_OPENAPI_PATH ??
  fileURLToPath(new URL("./openai-schemas.json", import.meta.url))

/** Rewrites every `nullable: true` schema into a union with null (a new tree; the input is untouched). */
export const rewriteNullable = (node: unknown): unknown => {
  if (Array.isArray(node)) return node.map(rewriteNullable)
  if (node === null || typeof node !== "object") return node
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(node)) {
    if (k === "nullable") continue
    out[k] = rewriteNullable(v)
  }
  if ((node as Record<string, unknown>).nullable === true) return { anyOf: [out, { type: "null" }] }
  return out
}

const DOC_KEY = "openai"
let ajv: AjvLike | undefined
const cache = new Map<string, ValidateFn>()

const instance = (): AjvLike => {
  if (ajv !== undefined) return ajv
  const doc = JSON.parse(readFileSync(OPENAPI_PATH, "utf8")) as Record<string, unknown>
  const a = new Ajv2020({ strict: false, allErrors: true, validateSchema: false, discriminator: false })
  addFormats(a)
  for (const f of ["unixtime", "float", "double", "int64", "binary", "int32"]) a.addFormat(f, true)
  a.addSchema(rewriteNullable(doc) as object, DOC_KEY)
  ajv = a
  return a
}

const validator = (componentName: string): ValidateFn => {
  const hit = cache.get(componentName)
  if (hit !== undefined) return hit
  const fn = instance().getSchema(`${DOC_KEY}#/components/schemas/${componentName}`)
  if (fn === undefined) throw new Error(`no component schema ${componentName} in ${OPENAPI_PATH}`)
  cache.set(componentName, fn)
  return fn
}

/**
 * Validates `value` against `#/components/schemas/<componentName>`; returns the errors as
 * "<instancePath> <message>" lines, empty when valid.
 */
export const validate = (componentName: string, value: unknown): Array<string> => {
  const fn = validator(componentName)
  if (fn(value)) return []
  return (fn.errors ?? []).map((e) => `${e.instancePath || "/"} ${e.message ?? "is invalid"} ${JSON.stringify(e.params ?? {})}`)
}

/** Throws when `value` does not validate, listing the errors. */
export const assertValid = (componentName: string, value: unknown): void => {
  const errors = validate(componentName, value)
  if (errors.length > 0) {
    throw new Error(`${componentName} does not validate:\n  ${errors.join("\n  ")}\n${JSON.stringify(value).slice(0, 2000)}`)
  }
}
