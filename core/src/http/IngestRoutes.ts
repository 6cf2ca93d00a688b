/**
 * The participant flow's routes, `/ingest/*` (docs/fieldwork.md): an ingest key and one of its
 * origins on every call, CORS for those origins, answers and refusals in the platform's JSON shape.
 * Plain routes rather than the HttpApi: their key is not a platform key, their take body is audio,
 * and their answers depend on the caller's origin.
 */
import { Effect, Layer, Schema, SchemaIssue } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { errorResponse } from "./ErrorShape.ts"
import { INGEST_ITEMS_PATH } from "../fieldwork/IngestViews.ts"
import { Ingest, type IngestCaller } from "../fieldwork/Ingest.ts"
import { type IngestError, ingestError } from "../fieldwork/FieldworkErrors.ts"
import { ingestStatusOf } from "./IngestRefusals.ts"
import { INGEST_ENDPOINTS } from "../fieldwork/IngestViews.ts"
import { CreateParticipant, GiveConsent } from "../fieldwork/Schemas.ts"

/** The request headers the flow sends, allowed by a preflight. */
const FLOW_HEADERS = "authorization, content-type, x-participant-token, x-content-sha256, x-fieldwork-meta, x-device-id"

const header = (request: HttpServerRequest.HttpServerRequest, name: string): string | undefined => request.headers[name]

const pathOf = (request: HttpServerRequest.HttpServerRequest) => new URL(request.url, "http://x").pathname

const bearerOf = (request: HttpServerRequest.HttpServerRequest) => {
  const value = header(request, "authorization")
  if (value === undefined) return undefined
  const match = /^Bearer\s+(.+)$/i.exec(value.trim())
  return match === null ? "" : match[1]!.trim()
}

/**
 * The origin a call comes from: its Origin header; else, for a browser's same-origin call (which
 * carries no Origin on GET), the platform's own origin, vouched for by Sec-Fetch-Site, a header no
 * page can set; else none.
 */
const originOf = (request: HttpServerRequest.HttpServerRequest, selfOrigin: string | undefined): string | undefined => {
  const origin = header(request, "origin")
  if (origin !== undefined) return origin
  return header(request, "sec-fetch-site") === "same-origin" ? selfOrigin : undefined
}

/** The platform's own origin: the configured public URL's, else the address the request came to. */
const selfOriginOf = (request: HttpServerRequest.HttpServerRequest, publicUrl: string | undefined): string | undefined => {
  try {
    if (publicUrl !== undefined && publicUrl !== "") return new URL(publicUrl).origin
    if (/^https?:\/\//i.test(request.originalUrl)) return new URL(request.originalUrl).origin
    const host = header(request, "host")
    return host === undefined ? undefined : new URL(`http://${host}`).origin
  } catch {
    return undefined
  }
}

const cors = (origin: string) => ({ "access-control-allow-origin": origin, vary: "Origin" })

const formatter = SchemaIssue.makeFormatterStandardSchemaV1()

/** The JSON body decoded by `schema`, or a 400 refusal naming what is wrong. */
const jsonBody = <A, I>(request: HttpServerRequest.HttpServerRequest, schema: Schema.Codec<A, I>) =>
  Effect.gen(function*() {
    const text = yield* Effect.orElseSucceed(request.text, () => "")
    let value: unknown
    try {
      value = JSON.parse(text)
    } catch {
      return yield* Effect.fail(ingestError("invalid_json", "The request body is not valid JSON."))
    }
    return yield* Schema.decodeUnknownEffect(schema)(value).pipe(
      Effect.mapError((error) => {
        const issues = formatter(error.issue).issues
        const message = issues.map((i) => `${i.path?.length ? `${i.path.join(".")}: ` : ""}${i.message}`).join("; ")
        return ingestError("invalid_request", message || "The request body is not valid.")
      })
    )
  })

type Handler = (
  ingest: Ingest["Service"],
  caller: IngestCaller,
  request: HttpServerRequest.HttpServerRequest
) => Effect.Effect<unknown, IngestError>

/** A flow route: authenticates the key from its origin, runs `handle`, answers with CORS. */
const flowRoute = (method: "GET" | "POST", path: HttpRouter.PathInput, status: number, handle: Handler) =>
  HttpRouter.add(method, path, (request) =>
    Effect.gen(function*() {
      const ingest = yield* Ingest
      const origin = originOf(request, selfOriginOf(request, ingest.publicUrl))
      const path = pathOf(request)
      // Until the key and its origin are known good, no answer is shown to the calling page.
      const caller = yield* Effect.result(ingest.authenticate(bearerOf(request), origin))
      if (caller._tag === "Failure") return refusalResponse(path, caller.failure)
      const headers = { ...cors(origin!), "cache-control": "no-store" }
      const answer = yield* Effect.result(handle(ingest, caller.success, request))
      return answer._tag === "Success"
        ? HttpServerResponse.jsonUnsafe(answer.success, { status, headers })
        : HttpServerResponse.setHeaders(refusalResponse(path, answer.failure), headers)
    }))

const refusalResponse = (path: string, refusal: IngestError) => errorResponse(path, ingestStatusOf(refusal), refusal.message, refusal.reason)

const participantToken = (request: HttpServerRequest.HttpServerRequest) => header(request, "x-participant-token")

/** The preflight of every flow route: it carries no key, so the call itself is checked. */
const Preflight = HttpRouter.add("OPTIONS", "/ingest/*", (request) =>
  Effect.succeed(
    HttpServerResponse.empty({
      status: 204,
      headers: {
        ...(header(request, "origin") === undefined ? {} : cors(header(request, "origin")!)),
        "access-control-allow-methods": "GET, POST, OPTIONS",
        "access-control-allow-headers": FLOW_HEADERS,
        "access-control-max-age": "600"
      }
    })
  ))

export const IngestRoutes = Layer.mergeAll(
  Preflight,
  flowRoute("GET", "/ingest/project", 200, (ingest, caller) => ingest.project(caller)),
  flowRoute("GET", "/ingest/challenge", 200, (ingest, caller) => ingest.challenge(caller)),
  flowRoute("POST", "/ingest/participants", 201, (ingest, caller, request) =>
    Effect.flatMap(jsonBody(request, CreateParticipant), (body) =>
      ingest.createParticipant(caller, body, header(request, "x-device-id")))),
  flowRoute("GET", "/ingest/participant", 200, (ingest, caller, request) => ingest.participant(caller, participantToken(request))),
  flowRoute("POST", "/ingest/participant/consent", 200, (ingest, caller, request) =>
    Effect.flatMap(jsonBody(request, GiveConsent), (body) => ingest.consent(caller, participantToken(request), body))),
  flowRoute("POST", INGEST_ITEMS_PATH, 201, (ingest, caller, request) =>
    Effect.gen(function*() {
      const body = new Uint8Array(yield* Effect.orElseSucceed(request.arrayBuffer, () => new ArrayBuffer(0)))
      const prompt = new URL(request.url, "http://x").searchParams.get("prompt") ?? undefined
      return yield* ingest.addTake(caller, participantToken(request), {
        promptId: prompt,
        contentType: header(request, "content-type"),
        contentSha256: header(request, "x-content-sha256"),
        meta: header(request, "x-fieldwork-meta"),
        body
      })
    })),
  flowRoute("GET", INGEST_ITEMS_PATH, 200, (ingest, caller, request) => ingest.takes(caller, participantToken(request))),
  flowRoute("POST", "/ingest/participant/withdraw", 200, (ingest, caller, request) =>
    ingest.withdraw(caller, participantToken(request)))
)

/** The flow's routes as the fallback route reads an API (405 for another method on their paths). */
export const IngestRouteTable = {
  groups: { ingest: { endpoints: Object.fromEntries(INGEST_ENDPOINTS.map((e) => [`${e.method} ${e.path}`, e])) } }
}
