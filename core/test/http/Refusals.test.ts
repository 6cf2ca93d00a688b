/**
 * The one mapping from area errors to HTTP (http/Refusals.ts, docs/architecture.md "Errors"): it
 * is total over every reason of every area error an area exports, each answers with a platform
 * error of its status, the reason's code (or the table's) and the message as given, and
 * `answered` maps only area errors.
 */
import { Effect, Exit } from "effect"
import { describe, expect, it } from "vitest"
import * as accounts from "../../src/accounts/index.ts"
import * as agents from "../../src/agents/index.ts"
import * as billing from "../../src/billing/index.ts"
import * as catalogue from "../../src/catalogue/index.ts"
import * as datasets from "../../src/datasets/index.ts"
import * as fieldwork from "../../src/fieldwork/index.ts"
import * as gateway from "../../src/gateway/index.ts"
import * as kernel from "../../src/kernel/index.ts"
import * as keys from "../../src/keys/index.ts"
import * as ledger from "../../src/ledger/index.ts"
import * as operator from "../../src/operator/index.ts"
import * as payments from "../../src/payments/index.ts"
import * as plans from "../../src/plans/index.ts"
import * as Errors from "../../src/http/Errors.ts"
import { answered, AreaErrorClasses, REFUSALS, refusalOf, toPlatformError } from "../../src/http/Refusals.ts"
import { INFERENCE_REFUSALS, InferenceErrorClasses, toInferenceError } from "../../src/http/InferenceRefusals.ts"
import { INGEST_REFUSALS, IngestErrorClasses, ingestStatusOf } from "../../src/http/IngestRefusals.ts"
import { GatewayError, rateLimited } from "../../src/gateway/GatewayErrors.ts"
import { IngestError } from "../../src/fieldwork/FieldworkErrors.ts"
import { inferenceTypeForStatus } from "../../src/kernel/Errors.ts"
import { standingError } from "../../src/gateway/GatewayErrors.ts"
import { keyError } from "../../src/keys/KeyErrors.ts"
import { OrderError } from "../../src/payments/PaymentErrors.ts"

type ReasonClass = (new (args: { reason: string; message: string }) => { readonly _tag: string; readonly reason: string }) & {
  readonly reasons: ReadonlyArray<string>
  readonly fields: { readonly reason: { readonly literals: ReadonlyArray<string> } }
}

/** The reasons of an area error, as its schema decodes them. */
const reasonsOf = (Class: ReasonClass) => Class.fields.reason.literals

/** The area errors the areas export: refusal classes (kernel/Refusal.ts), which keep their reasons. */
const AREAS = [accounts, agents, billing, catalogue, datasets, fieldwork, gateway, kernel, keys, ledger, operator, payments, plans]
const exportedAreaErrors = AREAS.flatMap((area) =>
  Object.values(area).filter((value): value is ReasonClass =>
    typeof value === "function" && Array.isArray((value as Partial<ReasonClass>).reasons) &&
    Array.isArray((value as Partial<ReasonClass>).fields?.reason?.literals)))

const STATUS_OF_CLASS = new Map<unknown, number>([
  [Errors.BadRequest, 400],
  [Errors.Unauthorized, 401],
  [Errors.PaymentRequired, 402],
  [Errors.Forbidden, 403],
  [Errors.NotFound, 404],
  [Errors.Conflict, 409],
  [Errors.Gone, 410],
  [Errors.TooEarly, 425],
  [Errors.TooManyRequests, 429],
  [Errors.ServiceUnavailable, 503]
])

describe("area errors -> HTTP", () => {
  it("every area error an area exports is in a mapping (the platform's, the inference surface's or the ingest flow's), and nothing else is", () => {
    expect(exportedAreaErrors.length).toBeGreaterThan(0)
    expect(new Set<unknown>(exportedAreaErrors)).toEqual(new Set<unknown>([...AreaErrorClasses, ...InferenceErrorClasses, ...IngestErrorClasses]))
    const tags = (AreaErrorClasses as unknown as ReadonlyArray<ReasonClass>).map((C) => new C({ reason: reasonsOf(C)[0]!, message: "" })._tag)
    expect(Object.keys(REFUSALS).sort()).toEqual(tags.sort())
  })

  it("every reason of every area error has exactly one entry, and the table names no other reason", () => {
    for (const Class of AreaErrorClasses as unknown as ReadonlyArray<ReasonClass>) {
      const tag = new Class({ reason: reasonsOf(Class)[0]!, message: "" })._tag
      expect(Object.keys(REFUSALS[tag as keyof typeof REFUSALS]).sort(), tag).toEqual([...reasonsOf(Class)].sort())
    }
  })

  it("each reason answers with its status's platform error, its code and the message as given", () => {
    for (const Class of AreaErrorClasses as unknown as ReadonlyArray<ReasonClass>) {
      expect(reasonsOf(Class)).toEqual(Class.reasons)
      for (const reason of reasonsOf(Class)) {
        const error = new Class({ reason, message: `why ${reason}` }) as Parameters<typeof toPlatformError>[0]
        const { code, status } = refusalOf(error)
        const answered = toPlatformError(error)
        expect(STATUS_OF_CLASS.get(answered.constructor), `${error._tag}.${reason}`).toBe(status)
        expect(answered.error).toEqual({ code, message: `why ${reason}` })
        // A reason finer than the spec's code maps to a code the spec has for that status.
        if (code !== reason) expect(code).toBe(Errors.platformCodeForStatus(status))
      }
    }
  })

  it("answered maps a service's area errors and leaves other failures, successes and plain members alone", async () => {
    const service = answered({
      refuses: (id: string) => Effect.fail(new OrderError({ reason: "order_not_found", message: `No order "${id}".` })),
      platform: Effect.fail(Errors.conflict("conflict", "as it was")),
      succeeds: Effect.succeed(7),
      plain: (n: number) => n + 1,
      value: "kept"
    })
    const refused = await Effect.runPromiseExit(service.refuses("o1"))
    expect(refused).toEqual(Exit.fail(Errors.notFound("order_not_found", `No order "o1".`)))
    expect(await Effect.runPromiseExit(service.platform)).toEqual(Exit.fail(Errors.conflict("conflict", "as it was")))
    expect(await Effect.runPromise(service.succeeds)).toBe(7)
    expect(service.plain(1)).toBe(2)
    expect(service.value).toBe("kept")
  })

  it("a refusal's scope is kept in the answer (the permission a key lacks), and absent when it has none", () => {
    expect(toPlatformError(keyError("key_lacks_permission", "lacks manage", "manage"))).toEqual(
      new Errors.Forbidden({ error: { code: "key_lacks_permission", message: "lacks manage", scope: "manage" } })
    )
    expect(toPlatformError(keyError("key_not_found", "No key \"k\".")).error).toEqual({ code: "key_not_found", message: "No key \"k\"." })
  })
})

describe("the inference surface's refusals (/v1) -> status, OpenAI type and code", () => {
  const SPEC_STATUSES = [400, 401, 402, 403, 404, 429, 502, 503]

  it("every reason of the gateway's refusal has exactly one entry, and the table names no other reason", () => {
    expect(Object.keys(INFERENCE_REFUSALS).sort()).toEqual(InferenceErrorClasses.map((C) => C.name).sort())
    expect(Object.keys(INFERENCE_REFUSALS.GatewayError).sort()).toEqual([...GatewayError.reasons].sort())
    expect(GatewayError.fields.reason.literals).toEqual(GatewayError.reasons)
  })

  it("each reason answers with its status, OpenAI's type of that status, its code and the message as given", () => {
    for (const reason of GatewayError.reasons) {
      const answered = toInferenceError(new GatewayError({ reason, message: `why ${reason}` }))
      expect(SPEC_STATUSES, reason).toContain(answered.status)
      expect(answered.error).toEqual({ message: `why ${reason}`, type: inferenceTypeForStatus(answered.status), code: answered.error.code })
      // The code is the reason, but for a key revoked mid-call: answered as any unknown key.
      expect(answered.error.code).toBe(reason === "key_revoked" ? "invalid_api_key" : reason)
    }
    expect(toInferenceError(rateLimited(7, "slow down"))).toMatchObject({ status: 429, error: { type: "rate_limit_error", code: "rate_limited" } })
    expect(toInferenceError(new GatewayError({ reason: "insufficient_credit", message: "m" })).error.type).toBe("insufficient_quota")
    expect(toInferenceError(new GatewayError({ reason: "no_capacity", message: "m" })).error.type).toBe("server_error")
  })

  it("the key's and its standing's refusals answer with the platform's table in the inference shape", () => {
    expect(toInferenceError(standingError("agent_revoked", "revoked"))).toMatchObject({
      status: 401,
      error: { message: "revoked", type: "authentication_error", code: "invalid_api_key" }
    })
    expect(toInferenceError(keyError("missing_api_key", "none")).status).toBe(401)
  })
})

describe("the ingest flow's refusals -> status and code", () => {
  it("every reason of the ingest refusal has exactly one status, and the table names no other reason", () => {
    expect(Object.keys(INGEST_REFUSALS).sort()).toEqual([...IngestError.reasons].sort())
    expect(IngestError.fields.reason.literals).toEqual(IngestError.reasons)
    for (const reason of IngestError.reasons) {
      expect([400, 401, 403, 404, 409, 413, 415, 429], reason).toContain(ingestStatusOf(new IngestError({ reason, message: "" })))
    }
  })
})
