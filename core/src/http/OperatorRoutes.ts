/**
 * The operator API (docs/operations.md "The operator console"), every route behind an operator
 * key (`Authorization: Bearer mpo_…`, OperatorKeys.ts), never an account key:
 *
 *   GET  /admin/api/accounts?email=|id=|key=      find accounts (`key`: a key's visible prefix, or a whole secret)
 *   GET  /admin/api/accounts/{id}                  balance, tier, keys, plans, recent calls, activity
 *   POST /admin/api/accounts/{id}/credits          {amount_credits, reason, reference?}: a credit adjustment
 *   POST /admin/api/accounts/{id}/keys/{key}/revoke {reason?}: revoke any key
 *   GET  /admin/api/machines                       health, cooldown, calls in flight
 *   GET  /admin/api/calls/{ref}                    a call's usage record, reservation, ledger entries, journal lines
 *   POST /admin/api/catalogue/reload               read the catalogue again (where the shell can)
 *   GET  /admin/api/audit?month=YYYY-MM            the audit log, newest first
 *
 * Refusals answer in the platform's error shape; bad input is 400 and changes nothing.
 */
import { Clock, Context, Effect, Layer, Option, Schema, SchemaIssue } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { errorResponse } from "./ErrorShape.ts"
import { bearerSecret } from "../gateway/Gateway.ts"
import { type AccountQuery, Operator, OperatorRefused } from "../operator/Operator.ts"
import { OperatorKeys } from "../operator/OperatorKeys.ts"

export const ADMIN_API = "/admin/api"

/**
 * Reloads the catalogue, where the shell can (the Node server: CATALOGUE_FILE, adapters/node-http
 * Reload.ts): what changed, or why not. None: 501 (Lambda: a new deployment reads it).
 */
export class CatalogueReloader extends Context.Service<CatalogueReloader, {
  readonly reload: Effect.Effect<{ readonly before: unknown; readonly after: unknown }, { readonly message: string }>
}>()("@model-platform/core/operator/CatalogueReloader") {}

const json = (body: unknown, status = 200) =>
  HttpServerResponse.setHeaders(HttpServerResponse.jsonUnsafe(body, { status }), { "cache-control": "no-store" })

const refused = (path: string, status: number, code: string, message: string) =>
  HttpServerResponse.setHeader(errorResponse(path, status, message, code), "cache-control", "no-store")

const pathOf = (request: HttpServerRequest.HttpServerRequest) => new URL(request.url, "http://x").pathname

/** The operator behind the request's key, or the refusal to answer. */
const operatorOf = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const keys = yield* OperatorKeys
  const secret = bearerSecret(request.headers["authorization"])
  if (!keys.configured) {
    return refused(pathOf(request), 403, "operator_api_off", "No operator key is configured (OPERATOR_KEYS; `./platform admin new-key <name>` makes one).")
  }
  if (secret === "") return refused(pathOf(request), 401, "missing_operator_key", "Send an operator key: `Authorization: Bearer mpo_…`.")
  const name = keys.operatorOf(secret)
  return name ?? refused(pathOf(request), 401, "invalid_operator_key", "The operator key is not one of OPERATOR_KEYS.")
})

const formatter = SchemaIssue.makeFormatterStandardSchemaV1()

/** The JSON body decoded by `schema`, or a 400 naming what is wrong. */
const bodyOf = <A, I>(schema: Schema.Codec<A, I>) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const text = yield* Effect.orElseSucceed(request.text, () => "")
    let raw: unknown
    try {
      raw = text === "" ? {} : JSON.parse(text)
    } catch {
      return yield* Effect.fail(refused(pathOf(request), 400, "invalid_json", "The request body is not valid JSON."))
    }
    return yield* Schema.decodeUnknownEffect(schema)(raw).pipe(
      Effect.mapError((error) => {
        const issues = formatter(error.issue).issues.map((i) =>
          `${(i.path ?? []).map((p) => (typeof p === "object" ? String(p.key) : String(p))).join(".") || "body"}: ${i.message}`
        )
        return refused(pathOf(request), 400, "invalid_request", issues.join("; "))
      })
    )
  })

const Reason = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(500))
const CreditAdjustment = Schema.Struct({
  amount_credits: Schema.Number,
  reason: Reason,
  reference: Schema.optionalKey(Schema.String.check(Schema.isPattern(/^[A-Za-z0-9_.:-]{1,100}$/)))
})
const Revocation = Schema.Struct({ reason: Schema.optionalKey(Reason) })

/** A route behind an operator key; `handle` gets the operator's name; refusals become answers. */
const operatorRoute = <E, R>(
  method: "GET" | "POST",
  path: HttpRouter.PathInput,
  handle: (operator: string) => Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
) =>
  HttpRouter.add(method, path, Effect.gen(function*() {
    const who = yield* operatorOf
    if (typeof who !== "string") return who
    const request = yield* HttpServerRequest.HttpServerRequest
    return yield* handle(who).pipe(
      Effect.catch((error: unknown) =>
        error instanceof OperatorRefused
          ? Effect.succeed(refused(pathOf(request), error.status, error.code, error.message))
          : HttpServerResponse.isHttpServerResponse(error)
          ? Effect.succeed(error)
          : Effect.die(error)
      )
    )
  }))

const param = (name: string) => Effect.map(HttpRouter.params, (params) => params[name] ?? "")

const query = Effect.map(HttpServerRequest.HttpServerRequest, (request) => new URL(request.url, "http://x").searchParams)

const findAccounts = operatorRoute("GET", `${ADMIN_API}/accounts`, () =>
  Effect.gen(function*() {
    const search = yield* query
    const given: Array<AccountQuery> = []
    for (const by of ["id", "email", "key"] as const) {
      const value = search.get(by)?.trim()
      if (value !== undefined && value !== "") given.push({ by: by === "key" ? "key_prefix" : by, value: value.slice(0, 200) })
    }
    if (given.length !== 1) {
      const request = yield* HttpServerRequest.HttpServerRequest
      return refused(pathOf(request), 400, "invalid_request", "Give exactly one of id, email and key (a key's prefix or whole secret).")
    }
    const found = yield* (yield* Operator).findAccounts(given[0]!)
    return json({ data: found })
  }))

const accountView = operatorRoute("GET", `${ADMIN_API}/accounts/:id`, () =>
  Effect.flatMap(param("id"), (id) => Effect.map(Effect.flatMap(Operator, (o) => o.account(id)), (view) => json(view))))

const adjust = operatorRoute("POST", `${ADMIN_API}/accounts/:id/credits`, (operator) =>
  Effect.gen(function*() {
    const input = yield* bodyOf(CreditAdjustment)
    const id = yield* param("id")
    return json(yield* (yield* Operator).adjustCredits(operator, id, { ...input, reference: input.reference }))
  }))

const revoke = operatorRoute("POST", `${ADMIN_API}/accounts/:id/keys/:key/revoke`, (operator) =>
  Effect.gen(function*() {
    const input = yield* bodyOf(Revocation)
    return json(yield* (yield* Operator).revokeKey(operator, yield* param("id"), yield* param("key"), input.reason ?? null))
  }))

const machines = operatorRoute("GET", `${ADMIN_API}/machines`, () =>
  Effect.map(Effect.flatMap(Operator, (o) => o.machines), (data) => json({ data })))

const call = operatorRoute("GET", `${ADMIN_API}/calls/:ref`, () =>
  Effect.flatMap(param("ref"), (ref) => Effect.map(Effect.flatMap(Operator, (o) => o.call(ref)), (view) => json(view))))

const auditLog = operatorRoute("GET", `${ADMIN_API}/audit`, () =>
  Effect.gen(function*() {
    const month = (yield* query).get("month") ?? new Date(yield* Clock.currentTimeMillis).toISOString().slice(0, 7)
    if (!/^\d{4}-(0[1-9]|1[0-2])$/.test(month)) {
      return refused(`${ADMIN_API}/audit`, 400, "invalid_request", "month is YYYY-MM.")
    }
    return json({ month, data: yield* (yield* Operator).audit(month) })
  }))

const reload = operatorRoute("POST", `${ADMIN_API}/catalogue/reload`, (operator) =>
  Effect.gen(function*() {
    const reloader = yield* Effect.serviceOption(CatalogueReloader)
    if (Option.isNone(reloader)) {
      return refused(`${ADMIN_API}/catalogue/reload`, 501, "reload_unavailable", "This shell reads the catalogue at start only (Lambda: a new deployment).")
    }
    const done = yield* Effect.result(reloader.value.reload)
    if (done._tag === "Failure") {
      return refused(`${ADMIN_API}/catalogue/reload`, 400, "invalid_catalogue", `The catalogue was not reloaded: ${done.failure.message}`)
    }
    yield* (yield* Operator).recordReload(operator, done.success)
    return json({ reloaded: true, ...done.success })
  }))

/** Every operator route; needs Operator and OperatorKeys (and CatalogueReloader where the shell has one). */
export const OperatorApiRoutes = Layer.mergeAll(findAccounts, accountView, adjust, revoke, machines, call, auditLog, reload)
