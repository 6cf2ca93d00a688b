/**
 * GET /metrics: the platform's metrics (Metrics.ts) in Prometheus' text format
 * (docs/operations.md "Metrics"). Answered to a client on the loopback interface that does not
 * say it forwards for another (no `Forwarded` or `X-Forwarded-For` header: a proxy on the same
 * machine is not a loopback client), or to any client sending `Authorization: Bearer
 * <METRICS_TOKEN>` when that is set; else 403 (401 for a wrong token), in the platform's shape.
 *
 * The gauges of things that exist apart from calls (machines' health and cooldown, what the
 * gateway holds, the journal's backlog) are read when scraped, so they are never stale.
 */
import { Clock, Context, Effect, Layer, Metric, Option, Redacted } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { PrometheusMetrics } from "effect/observability"
import { errorResponse } from "../ErrorShape.ts"
import { Catalogue } from "../../catalogue/Catalogue.ts"
import { Gateway } from "../../gateway/Gateway.ts"
import { MachineStatus } from "../../catalogue/MachineStatus.ts"
import { sha256Hex } from "../../kernel/Sha256.ts"
import { CurrentActivity } from "../../gateway/Activity.ts"
import * as M from "../../observability/Metrics.ts"

export const METRICS_PATH = "/metrics"

/** Who may read /metrics besides loopback clients: the bearer of this token (METRICS_TOKEN). */
export class MetricsAccess extends Context.Service<MetricsAccess, {
  readonly token: Redacted.Redacted<string> | undefined
}>()("@model-platform/core/observability/MetricsAccess") {
  static readonly layer = (token: Redacted.Redacted<string> | undefined) => Layer.succeed(MetricsAccess, { token })
}

const LOOPBACK = /^(127\.\d{1,3}\.\d{1,3}\.\d{1,3}|::1|::ffff:127\.\d{1,3}\.\d{1,3}\.\d{1,3})$/

/** A client on this machine that speaks for itself (no proxy header). */
const isLoopbackClient = (request: HttpServerRequest.HttpServerRequest): boolean =>
  Option.match(request.remoteAddress, { onNone: () => false, onSome: (address) => LOOPBACK.test(address) }) &&
  request.headers["forwarded"] === undefined && request.headers["x-forwarded-for"] === undefined

/** Compares digests, so that how long the comparison takes says nothing of the token. */
const sameSecret = (given: string, expected: string): boolean => {
  const a = sha256Hex(given)
  const b = sha256Hex(expected)
  let diff = 0
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i)
  return diff === 0
}

/** Brings the scraped-time gauges up to date. */
const refreshGauges = Effect.gen(function*() {
  const catalogue = yield* Catalogue
  const status = yield* MachineStatus
  const gateway = yield* Gateway
  const activity = yield* CurrentActivity
  const cooling = new Set(yield* gateway.coolingDown)
  for (const machine of catalogue.config.machines) {
    const { health } = yield* status.get(machine.id)
    const labels = { machine: machine.id }
    yield* Metric.update(Metric.withAttributes(M.machineUp, labels), health === "online" || health === "degraded" ? 1 : 0)
    yield* Metric.update(Metric.withAttributes(M.machineCoolingDown, labels), cooling.has(machine.id) ? 1 : 0)
  }
  const held = activity.heldNow(yield* Clock.currentTimeMillis)
  yield* Metric.update(M.reservationsHeld, held.count)
  yield* Metric.update(M.creditsHeld, held.credits)
  yield* Metric.update(M.journalBacklog, activity.journalBacklog())
  // Counters and gauges without labels are shown from the start, at 0, so that alerts on them work.
  yield* Metric.modify(M.reservationsExpired, 0)
  yield* Metric.modify(M.streamsDrained, 0)
  yield* Metric.modify(M.settlementsPending, 0)
  yield* Metric.modify(M.storeUnavailable, 0)
  yield* Metric.modify(M.creditsCharged, 0n)
})

const scrape = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const { token } = yield* MetricsAccess
  const authorization = request.headers["authorization"]
  const bearer = authorization === undefined ? undefined : /^\s*Bearer\s+(.+?)\s*$/i.exec(authorization)?.[1]
  if (!isLoopbackClient(request)) {
    if (token === undefined || bearer === undefined) {
      const how = token === undefined ? "from this machine" : "from this machine, or with `Authorization: Bearer <METRICS_TOKEN>`"
      return errorResponse(METRICS_PATH, 403, `The metrics are answered ${how}.`, "forbidden")
    }
    if (!sameSecret(bearer, Redacted.value(token))) {
      return errorResponse(METRICS_PATH, 401, "The metrics token is not the one configured (METRICS_TOKEN).", "invalid_metrics_token")
    }
  }
  yield* refreshGauges
  const text = yield* PrometheusMetrics.format()
  return HttpServerResponse.text(text, {
    contentType: "text/plain; version=0.0.4; charset=utf-8",
    headers: { "cache-control": "no-store" }
  })
})

/** GET /metrics; needs MetricsAccess, Catalogue, MachineStatus and the Gateway. */
export const MetricsRoute = HttpRouter.add("GET", METRICS_PATH, scrape)
