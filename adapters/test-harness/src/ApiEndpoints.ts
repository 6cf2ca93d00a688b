/**
 * Every endpoint the platform serves, read from its HttpApi definitions (PlatformApi and the
 * SimulatedApi beside it, InferenceApi), for the suites that must cover every endpoint without a
 * hand-written list: the permission matrix and the fuzz suite. An endpoint added to a definition
 * appears here by itself, with the permission it needs, its surface (error shape), the schemas of
 * its path, query and body, and the JSON Schemas of its OpenAPI operation.
 */
import {
  Authentication,
  InferenceApi,
  InferenceKey,
  PlatformApi,
  RequiredPermission,
  SimulatedApi
} from "@model-platform/core/http"
import { isInferencePath } from "@model-platform/core/kernel"
import { type ScopeRule, ScopeRuleAnnotation, scopeRuleOf } from "@model-platform/core/keys"
import type { Permission } from "@model-platform/core/keys"
import { Context, type Schema } from "effect"
import { OpenApi } from "effect/http-api"

/** A JSON Schema as the OpenAPI documents give it (loosely typed: the suites only walk it). */
export type JsonSchema = { readonly [key: string]: any }

export interface ApiEndpoint {
  /** "platform", "simulated" or "inference": the HttpApi it comes from. */
  readonly api: string
  /** `group.endpoint`, the OpenAPI operationId. */
  readonly id: string
  readonly method: string
  /** The path template, with `:name` for path parameters. */
  readonly path: string
  readonly pathParams: ReadonlyArray<string>
  /**
   * What the caller needs: public (no key), or a key with this permission. The inference calls need
   * `inference` (the gateway checks it; InferenceKey documents the bearer key).
   */
  readonly access: { readonly _tag: "public" } | { readonly _tag: "key"; readonly permission: Permission | undefined }
  /** How a key scoped to a machine, plan or rental may use it (KeyScope.ts); "any" for public and /v1 endpoints. */
  readonly scopeRule: ScopeRule
  /** The error shape of its answers: platform {error:{code,message,scope?}} or inference {error:{message,type,code}}. */
  readonly surface: "platform" | "inference"
  readonly querySchema: Schema.Top | undefined
  /** The JSON body schemas (content type application/json), empty for an endpoint without a body. */
  readonly payloadSchemas: ReadonlyArray<Schema.Top>
  readonly successSchemas: ReadonlyArray<Schema.Top>
  /** From the OpenAPI document: the JSON Schema of each query parameter, and of the JSON body. */
  readonly queryJsonSchemas: ReadonlyArray<{ readonly name: string; readonly required: boolean; readonly schema: JsonSchema }>
  readonly bodyJsonSchema: JsonSchema | undefined
  /** The OpenAPI document's components, to resolve `$ref`s in the schemas above. */
  readonly components: JsonSchema
}

interface EndpointLike {
  readonly path: string
  readonly method: string
  readonly query: Schema.Top | undefined
  readonly payload: ReadonlyMap<string, { readonly encoding: { readonly _tag: string }; readonly schemas: ReadonlyArray<Schema.Top> }>
  readonly success: ReadonlySet<Schema.Top>
  readonly annotations: Context.Context<never>
  readonly middlewares: ReadonlySet<{ readonly key: string }>
}

interface ApiLike {
  readonly identifier: string
  readonly groups: { readonly [name: string]: { readonly endpoints: { readonly [name: string]: EndpointLike } } }
}

/** The HttpApis the platform serves (Http.ts AppRoutes), in the order their endpoints are listed. */
export const PLATFORM_APIS: ReadonlyArray<unknown> = [PlatformApi, SimulatedApi, InferenceApi]

const openApiPath = (path: string) => path.replace(/:([A-Za-z_]+)/g, "{$1}")

const endpointsOf = (api: ApiLike): ReadonlyArray<ApiEndpoint> => {
  const document = OpenApi.fromApi(api as never) as JsonSchema
  const out: Array<ApiEndpoint> = []
  for (const [groupName, group] of Object.entries(api.groups)) {
    for (const [name, endpoint] of Object.entries(group.endpoints)) {
      const middlewares = [...endpoint.middlewares].map((m) => m.key)
      const access: ApiEndpoint["access"] = middlewares.includes(Authentication.key)
        ? { _tag: "key", permission: Context.get(endpoint.annotations, RequiredPermission) }
        : middlewares.includes(InferenceKey.key)
        ? { _tag: "key", permission: "inference" }
        : { _tag: "public" }
      const scopeRule = access._tag === "key" && middlewares.includes(Authentication.key)
        ? scopeRuleOf(access.permission, Context.get(endpoint.annotations, ScopeRuleAnnotation))
        : "any"
      const operation = document.paths?.[openApiPath(endpoint.path)]?.[endpoint.method.toLowerCase()] as JsonSchema | undefined
      const json = endpoint.payload.get("application/json")
      out.push({
        api: api.identifier,
        id: `${groupName}.${name}`,
        method: endpoint.method,
        path: endpoint.path,
        pathParams: [...endpoint.path.matchAll(/:([A-Za-z_]+)/g)].map((m) => m[1]!),
        access,
        scopeRule,
        surface: isInferencePath(endpoint.path) ? "inference" : "platform",
        querySchema: endpoint.query,
        payloadSchemas: json === undefined || json.encoding._tag === "Stream" ? [] : json.schemas,
        successSchemas: [...endpoint.success],
        queryJsonSchemas: ((operation?.parameters ?? []) as Array<JsonSchema>)
          .filter((p) => p.in === "query")
          .map((p) => ({ name: p.name as string, required: p.required === true, schema: p.schema as JsonSchema })),
        bodyJsonSchema: operation?.requestBody?.content?.["application/json"]?.schema,
        components: document.components ?? {}
      })
    }
  }
  return out
}

/** Every endpoint of the platform's HttpApis. */
export const platformEndpoints = (): ReadonlyArray<ApiEndpoint> =>
  PLATFORM_APIS.flatMap((api) => endpointsOf(api as ApiLike))

/** `GET /orders/:id` style label. */
export const labelOf = (endpoint: ApiEndpoint) => `${endpoint.method} ${endpoint.path}`

// ---- Minimal valid values from JSON Schema ------------------------------------------------

const resolve = (schema: JsonSchema, components: JsonSchema): JsonSchema => {
  let s = schema
  for (let i = 0; i < 32 && typeof s.$ref === "string"; i++) {
    const name = (s.$ref as string).replace(/^#\/components\/schemas\//, "")
    s = components.schemas?.[name] ?? {}
  }
  return s
}

/**
 * The smallest value a JSON Schema accepts, as far as this walk can tell: required properties only
 * (and the first optional ones up to minProperties),
 * the first branch of a union (skipping null), the first enum value, the minimum of a number, the
 * shortest string. Good enough for a body that passes decoding; handlers may still refuse it.
 */
export const minimalValue = (schema: JsonSchema | undefined, components: JsonSchema, depth = 0): unknown => {
  if (schema === undefined || depth > 20) return {}
  const s = resolve(schema, components)
  if ("const" in s) return s.const
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[0]
  const branches = (s.anyOf ?? s.oneOf) as Array<JsonSchema> | undefined
  if (branches !== undefined && branches.length > 0) {
    const nonNull = branches.find((b) => resolve(b, components).type !== "null") ?? branches[0]!
    return minimalValue(nonNull, components, depth + 1)
  }
  if (Array.isArray(s.allOf) && s.allOf.length > 0) return minimalValue(s.allOf[0], components, depth + 1)
  const type = Array.isArray(s.type) ? s.type.find((t: string) => t !== "null") : s.type
  switch (type) {
    case "object": {
      const out: Record<string, unknown> = {}
      for (const key of (s.required ?? []) as Array<string>) {
        out[key] = minimalValue(s.properties?.[key], components, depth + 1)
      }
      // minProperties beyond the required ones: optional properties in order, skipping those no
      // value satisfies (`not`).
      const least = typeof s.minProperties === "number" ? s.minProperties : 0
      for (const [key, sub] of Object.entries((s.properties ?? {}) as Record<string, JsonSchema>)) {
        if (Object.keys(out).length >= least) break
        if (key in out || "not" in resolve(sub, components)) continue
        out[key] = minimalValue(sub, components, depth + 1)
      }
      return out
    }
    case "array": {
      const n = typeof s.minItems === "number" ? s.minItems : 0
      return Array.from({ length: n }, () => minimalValue(s.items, components, depth + 1))
    }
    case "string":
      return "x".repeat(Math.max(1, typeof s.minLength === "number" ? s.minLength : 1))
    case "integer":
    case "number": {
      if (typeof s.minimum === "number") return type === "integer" ? Math.ceil(s.minimum) : s.minimum
      if (typeof s.exclusiveMinimum === "number") {
        const max = typeof s.exclusiveMaximum === "number" ? s.exclusiveMaximum : s.exclusiveMinimum + 2
        return type === "integer" ? Math.floor(s.exclusiveMinimum) + 1 : (s.exclusiveMinimum + max) / 2
      }
      return 1
    }
    case "boolean":
      return false
    case "null":
      return null
    default:
      return {}
  }
}

/** The minimal valid JSON body of an endpoint, or undefined when it takes none. */
export const minimalBody = (endpoint: ApiEndpoint): unknown =>
  endpoint.bodyJsonSchema === undefined ? undefined : minimalValue(endpoint.bodyJsonSchema, endpoint.components)

/** The query string (with its "?") of an endpoint's required query parameters at minimal values. */
export const minimalQuery = (endpoint: ApiEndpoint): string => {
  const required = endpoint.queryJsonSchemas.filter((q) => q.required)
  if (required.length === 0) return ""
  const params = new URLSearchParams()
  for (const q of required) params.set(q.name, String(minimalValue(q.schema, endpoint.components)))
  return `?${params.toString()}`
}

/** The endpoint's path with every parameter set to `value(name)` (percent-encoded). */
export const fillPath = (endpoint: ApiEndpoint, value: (name: string) => string): string =>
  endpoint.path.replace(/:([A-Za-z_]+)/g, (_, name: string) => encodeURIComponent(value(name)))
