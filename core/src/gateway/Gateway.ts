/**
 * The inference gateway engine (docs/gateway.md "Routing", "Metering", "Streaming"): one call of
 * POST /v1/chat/completions, /v1/embeddings, /v1/forecasts or /v1/images/generations, from the
 * bearer key to the machine's answer, charged exactly once after it completes.
 *
 * Per call, in order:
 *  1. identify the key (ApiKeys.identify: 401 missing_api_key / invalid_api_key; answered from
 *     memory for a key seen lately), check the inference permission (403
 *     key_lacks_inference_permission) and what stands behind the key, read at every call
 *     (KeyStanding.ts: 401 for a revoked agent, 403 agent_expired, subscription_inactive, rental_ended);
 *  2. parse (400 invalid_json) and validate the body (Validation.ts);
 *  3. pick the machines (Dispatch.ts): `machine` in the body or a key pinned to a machine sends the
 *     call there only (403 key_not_scoped_to_machine when they disagree, 503 no_capacity when it is
 *     not serving the model); otherwise the route order (Routing.orderRoutes) of the machines
 *     serving the model now, without those cooling down after failed canaries (Cooldown.ts);
 *  4. admit (Admission.ts), one store step (GatewayStore.admit, shared with the calls admitted meanwhile): the
 *     key still live (else 401, and forgotten), its use recorded, the call counted against the key's rpm (tier from purchased credits; 429
 *     rate_limited with Retry-After), the upper bound of its cost reserved (402
 *     insufficient_credit) — no reservation for a model priced at zero or while charging is
 *     closed. For a key admitted lately the first machine is already being called meanwhile
 *     (speculative dispatch); a refused call's request is aborted and nothing of it is sent;
 *  5. call the machines in route order until one answers (Dispatch.ts): a connection failure, a
 *     timeout before the first byte, or a 404/408/429/5xx answer moves on to the next (502
 *     machine_unreachable / machine_error, or 503 no_capacity, when all fail); another 4xx is the
 *     client's and is passed on (not charged). A failure only makes the machine suspect: a canary
 *     of the gateway's own decides whether it cools down;
 *  6. answer: the machine's JSON (forecasts and embeddings held to the spec's shape, Answers.ts),
 *     or its server-sent events through Streaming.ts; then
 *     settle (Settlement.ts): journal the completed call, settle the reservation to the real cost
 *     and write one usage record (GatewayStore.commit, calls metered meanwhile by other requests
 *     going in the same batch), in the background, retried while the store is unavailable.
 *
 * Store round trips per call (non-streaming, PostgreSQL): one before the answer (admission), one
 * after it (metering), each shared with the other calls of its batch. Purchased credits (for the
 * tier) are kept in process for tierCacheMs, or until their account's notice (kernel/AccountCache.ts).
 */
import { Clock, Context, Effect, Exit, Fiber, Layer, type Result, Stream } from "effect"
import { ApiKeys } from "../keys/ApiKeys.ts"
import type { KeyErrorOf } from "../keys/KeyErrors.ts"
import { Catalogue } from "../catalogue/Catalogue.ts"
import type { MachineConfig } from "../catalogue/CatalogueConfig.ts"
import { chargingGate } from "../catalogue/Charging.ts"
import { gatewayError, type GatewayError, type StandingError } from "./GatewayErrors.ts"
import { hasStanding, makeStandingCheck, NOTHING_BEHIND, type Standing } from "./KeyStanding.ts"
import { Ledger } from "../ledger/Ledger.ts"
import { MachineClient, type MachineFailure, type MachineResponse } from "./MachineClient.ts"
import * as Time from "../kernel/Time.ts"
import { noteCall } from "./CallFacts.ts"
import { boundOf, completionChars, costOf, estimatedUsage, isFree, type Prices, pricesOf, reportedUsage } from "./Metering.ts"
import { shapeAnswer } from "./Answers.ts"
import { machinePath, makeDispatch } from "./Dispatch.ts"
import { makeAdmission } from "./Admission.ts"
import { type Held, makeSettlement } from "./Settlement.ts"
import { makeStreamAnswer } from "./StreamAnswer.ts"
import { type Endpoint, validateCall, type ValidCall } from "./Validation.ts"
import { defaultGatewayConfig, type GatewayConfig, RESERVATION_MARGIN_MS } from "./GatewayConfig.ts"

// ---- Results and errors -------------------------------------------------------------------

export type GatewayResponse =
  /** A whole body: the machine's JSON (or its client error), passed on as it came. */
  | { readonly _tag: "Body"; readonly status: number; readonly contentType: string; readonly body: Uint8Array }
  /** Server-sent events. */
  | { readonly _tag: "Events"; readonly stream: Stream.Stream<Uint8Array> }

/**
 * Why a call is refused: the gateway's own refusals (GatewayError: validation, admission,
 * dispatch), and the refusals of the key and its standing; http answers each in the inference
 * shape (http/InferenceRefusals.ts toInferenceError).
 */
export type CallFailure = GatewayError | KeyErrorOf<"missing_api_key" | "invalid_api_key"> | StandingError

export class Gateway extends Context.Service<Gateway, {
  /**
   * One inference call. `authorization` is the Authorization header (or undefined), `body` the raw
   * request body text.
   */
  readonly call: (
    endpoint: Endpoint,
    authorization: string | undefined,
    body: string
  ) => Effect.Effect<GatewayResponse, CallFailure>
  /** Waits until every background settlement and stream drain has finished (tests, shutdown). */
  readonly idle: Effect.Effect<void>
  /** Machines currently skipped after failed canaries (for operators and tests). */
  readonly coolingDown: Effect.Effect<ReadonlyArray<string>>
}>()("@model-platform/core/gateway/Gateway") {
  static readonly layer = (config: Partial<GatewayConfig> = {}) => Layer.effect(Gateway, make({ ...defaultGatewayConfig, ...config }))
}

// ---- Pure helpers -------------------------------------------------------------------------

/**
 * The secret in an Authorization header: "Bearer <secret>"; "" when there is none, or when another
 * scheme is used (401 missing_api_key, as the management API answers: docs/api-decisions.md "Keys").
 */
export const bearerSecret = (header: string | undefined): string => {
  if (header === undefined) return ""
  const match = /^\s*Bearer\s+(.*)$/i.exec(header)
  return match === null ? "" : match[1]!.trim()
}

export { isRetryableStatus, machinePath } from "./Dispatch.ts"

const concat = (chunks: ReadonlyArray<Uint8Array>): Uint8Array => {
  if (chunks.length === 1) return chunks[0]!
  let length = 0
  for (const c of chunks) length += c.length
  const out = new Uint8Array(length)
  let offset = 0
  for (const c of chunks) {
    out.set(c, offset)
    offset += c.length
  }
  return out
}

const decoder = new TextDecoder()
const encoder = new TextEncoder()

/** A request sent to a machine speculatively, before the call was admitted. */
interface Early {
  readonly machine: MachineConfig
  readonly fiber: Fiber.Fiber<Result.Result<MachineResponse, MachineFailure>>
}

/** Whether a reservation made for one machine may pay a call on another (no pinned credits in it). */
const usableOn = (held: Held, machineId: string) =>
  held.machineId === machineId || held.allocations.every((a) => a.machine_id === null)

// ---- The service --------------------------------------------------------------------------

const make = (config: GatewayConfig) =>
  Effect.gen(function*() {
    const apiKeys = yield* ApiKeys
    const catalogue = yield* Catalogue
    const ledger = yield* Ledger
    const machines = yield* MachineClient
    const standingOf = yield* makeStandingCheck

    const cfg = catalogue.config
    // Dispatch: candidates, attempts, failure accounting (canaries, cooldown).
    const dispatch = yield* makeDispatch(config, cfg, machines)
    const prices = new Map<string, Prices>(cfg.models.map((m) => [m.id, pricesOf(m)]))
    const reservationTtlMs = Math.max(config.firstByteTimeoutMs, config.maxStreamMs) + config.drainTimeoutMs +
      RESERVATION_MARGIN_MS

    // Settlement, and the background work that outlives requests (Settlement.ts).
    const settlement = yield* makeSettlement({
      storeBatch: config.storeBatch,
      settleInline: config.settleInline,
      inlineRetryMs: config.inlineRetryMs,
      reservationTtlMs,
      creditLeases: config.creditLeases
    })
    const { forkAfter, release } = settlement

    // Admission (Admission.ts): the key still live, its use, the rpm count, the first reservation.
    const admission = yield* makeAdmission({
      tierCacheMs: config.tierCacheMs,
      rateWindowMs: config.rateWindowMs,
      speculativeDispatch: config.speculativeDispatch,
      speculationWindowMs: config.speculationWindowMs,
      storeBatch: config.storeBatch,
      reservationTtlMs
    }, cfg, settlement)

    /** The whole body of an answer: at once where the client can (MachineClient.ts `bytes`). */
    const readAll = (response: MachineResponse) =>
      response.bytes ?? Effect.map(Stream.runCollect(response.body), (chunks) => concat(Array.from(chunks)))

    /** Reads (and forgets) the body of an answer we do not pass on, briefly, so the connection is reused. */
    const discard = (response: MachineResponse) =>
      readAll(response).pipe(
        Effect.map((bytes) => decoder.decode(bytes).slice(0, 300)),
        Effect.timeoutOption(1_000),
        Effect.catch(() => Effect.succeedNone),
        Effect.map((text) => (text._tag === "Some" ? text.value : ""))
      )

    /** Aborts a speculative request (its answer, if it came, read and dropped). */
    const abandoning = Effect.fnUntraced(function*(early: Early) {
      yield* Fiber.interrupt(early.fiber)
      const exit = yield* Fiber.await(early.fiber)
      if (exit._tag === "Success" && exit.value._tag === "Success") yield* forkAfter(Effect.asVoid(discard(exit.value.success)))
    })
    const abandonEarly = (early: Early | undefined) => early === undefined ? Effect.void : abandoning(early)
    /** Aborts an answer no one will read: its read begun and interrupted ("interrupting it aborts the request": MachineClient.ts). */
    const abort = (response: MachineResponse) =>
      Effect.flatMap(Effect.forkChild(readAll(response), { startImmediately: true }), Fiber.interrupt)
    /** A speculative request whose call ended without taking its answer (its client left): aborted, answer and all. */
    const dropping = Effect.fnUntraced(function*(early: Early) {
      yield* Fiber.interrupt(early.fiber)
      const exit = yield* Fiber.await(early.fiber)
      if (exit._tag === "Success" && exit.value._tag === "Success") yield* abort(exit.value.success)
    })

    /** A streamed answer: the machine's events, passed on as they come (StreamAnswer.ts). */
    const streamAnswer = yield* makeStreamAnswer(config, dispatch, settlement)

    // -- one call --
    // Every generator function a call runs (`calling` below, the steps above) is made once, when the
    // service is built (Effect.fnUntraced), never inside the call: a generator function made per call
    // keeps the whole call's state alive past the young generation's collections (docs/gateway.md
    // "Code on the call path").
    /**
     * The standing each key had at its last call (bounded as admission's key state), to guess its
     * machine while the standing is read again: for routing a speculative request only, never for
     * money or for a refusal.
     */
    const lastStanding = new Map<string, Standing>()

    const calling = Effect.fnUntraced(function*(endpoint: Endpoint, authorization: string | undefined, text: string) {
      const caller = yield* apiKeys.identify(bearerSecret(authorization))
      if (!caller.key.permissions.includes("inference")) {
        return yield* gatewayError("key_lacks_inference_permission", "This key lacks the \"inference\" permission.")
      }
      // What stands behind the key (its agent, plan or rental), read at every call: the same rule
      // as on the management API (KeyStanding.ts). Its refusal comes before anything the body says.
      // For a key with something behind it the read runs while the body is read, and, for a key
      // admitted lately, while the machine is called speculatively (below).
      const now = yield* Clock.currentTimeMillis
      const reading = hasStanding(caller.key)
        ? yield* Effect.forkChild(standingOf(caller.key, now), { startImmediately: true })
        : undefined
      const validated = yield* Effect.exit(Effect.suspend(() => {
        let raw: unknown
        try {
          raw = JSON.parse(text)
        } catch {
          return gatewayError("invalid_json", "The request body is not valid JSON.")
        }
        return validateCall(endpoint, raw, cfg)
      }))
      const path = machinePath(endpoint)
      const bodyOf = (vc: ValidCall) =>
        vc.stream
          ? { ...vc.body, stream_options: { ...(typeof vc.body.stream_options === "object" ? vc.body.stream_options : {}), include_usage: true } }
          : vc.body
      const post = (machine: MachineConfig, vc: ValidCall) =>
        Effect.result(machines.post(machine, path, bodyOf(vc), { firstByteTimeoutMs: config.firstByteTimeoutMs }))

      // Speculative dispatch: for a key admitted lately, the first machine is called while
      // admission runs (and the key's standing is read); nothing of its answer reaches the client
      // unless the call is admitted, and a refused call's request is aborted (docs/gateway.md
      // "Admission in one store step").
      const likely = admission.likelyAdmitted(caller, now)
      const speculate = (vc: ValidCall, machine: MachineConfig) =>
        Effect.map(Effect.forkChild(post(machine, vc), { startImmediately: true }), (fiber) => ({ machine, fiber }))
      let early: Early | undefined
      let standing = NOTHING_BEHIND
      if (reading !== undefined) {
        // The machine of the key's last standing, called while this one is read.
        const guess = lastStanding.get(caller.key.id)
        if (likely && guess !== undefined && Exit.isSuccess(validated)) {
          const guessed = yield* Effect.exit(dispatch.candidatesFor(validated.value, caller, guess, now))
          if (Exit.isSuccess(guessed)) early = yield* speculate(validated.value, guessed.value.machines[0]!)
        }
        // Refused: what was sent is aborted, and the key is not speculated for until admitted again.
        standing = yield* Fiber.join(reading).pipe(Effect.onError(() => Effect.andThen(abandonEarly(early), admission.refused(caller))))
        if (lastStanding.size >= 10_000) lastStanding.clear()
        lastStanding.set(caller.key.id, standing)
      }
      // (Nothing was called speculatively for a body that failed.)
      if (Exit.isFailure(validated)) return yield* Effect.failCause(validated.cause)
      const vc = validated.value
      yield* noteCall({ model: vc.model.id })
      const { allowance, machines: candidates } = yield* dispatch.candidatesFor(vc, caller, standing, now).pipe(
        Effect.onError(() => Effect.andThen(abandonEarly(early), admission.refused(caller)))
      )
      const agent = standing.agent
      const price = prices.get(vc.model.id)!
      const charging = chargingGate(cfg.payments, now).open
      const priced = charging && !isFree(price)
      const bound = priced ? costOf(price, boundOf(vc)) : undefined

      // A reservation made again for another machine claims the call's monthly limits too.
      const reserve = (machineId: string) =>
        Effect.map(
          Effect.flatMap(admission.claimsFor(caller, vc.model.service, now, allowance, agent), ({ budgets, grants }) =>
            ledger.reserve(caller.account.id, machineId, bound ?? 0n, Time.toTimestamp(now + reservationTtlMs), budgets, grants)),
          (r) =>
            r._tag === "Reserved"
              ? { ref: r.ref, machineId, allocations: r.allocations, grants: r.grants, expiresAt: now + reservationTtlMs } satisfies Held
              : r
        ).pipe(Effect.tap((r) => ("_tag" in r ? Effect.void : settlement.opened([r.ref]))))

      const first = candidates[0]!
      // A guess that routed elsewhere than the standing read: its request is aborted.
      if (early !== undefined && early.machine !== first) {
        yield* abandonEarly(early)
        early = undefined
      }
      if (early === undefined && likely) early = yield* speculate(vc, first)
      const speculated = early
      // The speculative request is settled once: taken by the first attempt, or abandoned at a
      // refusal. A call that ends otherwise (its client left once admission had answered: admission
      // is uninterruptible) aborts it when its scope closes, so the machine stops; the call is not
      // charged, its client having received nothing (docs/gateway.md "Admission in one store step").
      let earlySettled = false
      const abandon = Effect.suspend(() => {
        earlySettled = true
        return abandonEarly(speculated)
      })
      if (speculated !== undefined) yield* Effect.addFinalizer(() => earlySettled ? Effect.void : dropping(speculated))

      // The call's reservation, a scoped resource: released when the call ends, unless metering took it.
      const held = yield* settlement.hold(admission.admit({ caller, endpoint, now, first, bound, service: vc.model.service, allowance, agent }).pipe(Effect.onError(() => abandon)))

      const attempts = dispatch.attempts({
        call: vc,
        candidates,
        // A reservation holding credits pinned to another machine is made again for this one.
        // Uninterruptible, so that a reservation made is always in the hold, where it is released.
        prepare: (machine) =>
          Effect.uninterruptible(Effect.suspend(() => {
            const current = held.current()
            if (!priced || (current !== undefined && usableOn(current, machine.id))) return Effect.succeed(true)
            return Effect.andThen(
              release(held.take()),
              Effect.map(reserve(machine.id), (r) => {
                if ("_tag" in r) return false
                held.put(r)
                return true
              })
            )
          })),
        send: (machine, attempt) =>
          attempt === 1 && machine === first && speculated !== undefined
            ? Effect.tap(Fiber.join(speculated.fiber), () => Effect.sync(() => void (earlySettled = true)))
            : post(machine, vc),
        discard
      })

      const { machine, response } = yield* attempts
      yield* noteCall({ machine: machine.id })
      if (response.status >= 400) {
        // The client's own error (400, 413, ...): passed on, not charged.
        const bytes = yield* readAll(response).pipe(Effect.orElseSucceed(() => new Uint8Array()))
        yield* release(held.take())
        return {
          _tag: "Body",
          status: response.status,
          contentType: response.headers["content-type"] ?? "application/json",
          body: bytes
        } satisfies GatewayResponse as GatewayResponse
      }
      if (vc.stream) {
        const stream = yield* Effect.uninterruptible(Effect.suspend(() => streamAnswer(caller, vc, machine, price, response, held.take())))
        return { _tag: "Events", stream } satisfies GatewayResponse as GatewayResponse
      }
      const read = yield* Effect.result(readAll(response))
      if (read._tag === "Failure") {
        yield* dispatch.suspect(machine, vc)
        return yield* gatewayError("machine_error", `Machine ${machine.id} broke off its answer; retry with backoff.`)
      }
      const bytes = read.success
      let json: unknown
      try {
        json = JSON.parse(decoder.decode(bytes))
      } catch {
        yield* dispatch.suspect(machine, vc)
        return yield* gatewayError("machine_error", `Machine ${machine.id} answered with a body that is not JSON.`)
      }
      // Forecasts and embeddings are held to the spec's shape (Answers.ts); the rest goes on as it came.
      const answer = shapeAnswer(vc, json)
      if (answer._tag === "Broken") {
        yield* dispatch.suspect(machine, vc)
        return yield* gatewayError("machine_error", `Machine ${machine.id} answered with ${answer.reason}; nothing is charged, retry with backoff.`)
      }
      const answered = answer._tag === "Rewritten" ? encoder.encode(JSON.stringify(answer.json)) : bytes
      const reported = reportedUsage(vc, json)
      const usage = reported ?? estimatedUsage(vc, completionChars(json))
      if (reported === undefined) yield* Effect.logWarning(`gateway: machine ${machine.id} reported no usage; billing an estimate`)
      // Journaled before the answer is handed over, then settled: in the background, or inline.
      yield* Effect.uninterruptible(Effect.suspend(() =>
        settlement.complete({ caller, call: vc, machineId: machine.id, price, held: held.take(), usage })
      ))
      return { _tag: "Body", status: response.status, contentType: "application/json", body: answered } satisfies GatewayResponse as GatewayResponse
    })
    const call = (endpoint: Endpoint, authorization: string | undefined, text: string) =>
      Effect.scoped(calling(endpoint, authorization, text))

    return Gateway.of({
      call,
      idle: Effect.andThen(settlement.idle, dispatch.idle),
      coolingDown: dispatch.coolingDown
    })
  })
