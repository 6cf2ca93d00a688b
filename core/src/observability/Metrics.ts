/**
 * Every metric the platform exposes, in one place (docs/operations.md "Metrics"): their names
 * (OpenTelemetry's GenAI and HTTP semantic conventions in Prometheus form, and the platform's own
 * under `model_platform_`), their buckets and the attributes they take.
 *
 * Labels come from bounded sets only: the operation (from the endpoint), the model and the machine
 * (catalogue ids, set only once a call was validated against the catalogue), the service, the
 * route's template, the status, or an error code the platform defines; never an account, a key or
 * anything a client wrote. Attributes are written with OpenTelemetry's keys (`gen_ai.request.model`),
 * which the Prometheus exposition turns into label names (`gen_ai_request_model`).
 *
 * Metrics live in Effect's metric registry of the platform's context (each shell gives every
 * platform a registry of its own: `MetricsRegistry`), read by GET /metrics (MetricsRoute.ts) and,
 * on Lambda, written as CloudWatch embedded metric format lines.
 */
import { Cause, Effect, Layer, Metric } from "effect"
import { isStoreUnavailable } from "../kernel/StoreUnavailable.ts"

// ---- Buckets: OpenTelemetry's advice for each instrument -------------------------------------

const GEN_AI_DURATION_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92]
const TTFT_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10]
const TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864]
const HTTP_DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10]

// ---- The metrics ----------------------------------------------------------------------------

export const genAiRequestDuration = Metric.histogram("gen_ai_server_request_duration_seconds", {
  description: "Duration of inference calls, from the request to the last byte of the answer (a stream: its end), in seconds.",
  boundaries: GEN_AI_DURATION_BUCKETS
})

export const genAiTimeToFirstToken = Metric.histogram("gen_ai_server_time_to_first_token_seconds", {
  description: "Time from an inference request to the first token handed to the client (a stream: its first event; " +
    "a whole answer: the answer), in seconds, for calls that answered.",
  boundaries: TTFT_BUCKETS
})

export const genAiTokenUsage = Metric.histogram("gen_ai_client_token_usage", {
  description: "Tokens per metered inference call, by gen_ai_token_type (input, output).",
  boundaries: TOKEN_BUCKETS
})

export const httpRequestDuration = Metric.histogram("http_server_request_duration_seconds", {
  description: "Duration of HTTP requests, by route template and status, in seconds (a stream: until its last byte).",
  boundaries: HTTP_DURATION_BUCKETS
})

export const creditsCharged = Metric.counter("model_platform_credits_charged_total", {
  description: "Micro-credits (millionths of a credit) charged for metered inference calls, exact.",
  bigint: true,
  incremental: true
})

export const callsInFlight = Metric.gauge("model_platform_calls_in_flight", {
  description: "Inference calls being answered now (a stream counts until its end)."
})

export const settlementsPending = Metric.gauge("model_platform_settlements_pending", {
  description: "Answered calls whose metering (settlement and usage record) is not written to the store yet."
})

export const reservationsHeld = Metric.gauge("model_platform_reservations_held", {
  description: "Reservations this process holds for calls in progress."
})

export const creditsHeld = Metric.gauge("model_platform_credits_held", {
  description: "Micro-credits held by the reservations this process holds for calls in progress.",
  bigint: true
})

export const reservationsExpired = Metric.counter("model_platform_reservations_expired_total", {
  description: "Reservations released by the sweeper because their call never completed (a process died mid-call).",
  incremental: true
})

export const machineUp = Metric.gauge("model_platform_machine_up", {
  description: "1 while the health checker sees the machine online or degraded, 0 when offline or unknown."
})

export const machineCoolingDown = Metric.gauge("model_platform_machine_cooling_down", {
  description: "1 while the gateway skips the machine after failed canaries (cooldown), else 0."
})

export const journalBacklog = Metric.gauge("model_platform_metering_journal_backlog", {
  description: "Entries of this process's metering journal not yet confirmed in the store (answered calls and open reservations)."
})

export const storeUnavailable = Metric.counter("model_platform_store_unavailable_total", {
  description: "Operations that found the store unreachable, by the store operation that failed.",
  incremental: true
})

export const streamsDrained = Metric.counter("model_platform_streams_drained_total", {
  description: "Streams whose client left before the end and which the gateway read on to meter them (a drain).",
  incremental: true
})

const OPERATION = "gen_ai_operation_name"
const MODEL = "gen_ai_request_model"

/**
 * Every metric above by its name as GET /metrics shows it, with the labels it may carry (in
 * Prometheus form): deploy/observability queries only these (a test holds it to that).
 */
export const METRIC_LABELS: Readonly<Record<string, ReadonlyArray<string>>> = {
  [genAiRequestDuration.id]: [OPERATION, MODEL, "machine", "error_type"],
  [genAiTimeToFirstToken.id]: [OPERATION, MODEL, "machine"],
  [genAiTokenUsage.id]: [OPERATION, MODEL, "gen_ai_token_type"],
  [httpRequestDuration.id]: ["http_request_method", "http_route", "http_response_status_code"],
  [creditsCharged.id]: [OPERATION, MODEL],
  [callsInFlight.id]: [OPERATION],
  [settlementsPending.id]: [],
  [reservationsHeld.id]: [],
  [creditsHeld.id]: [],
  [reservationsExpired.id]: [],
  [machineUp.id]: ["machine"],
  [machineCoolingDown.id]: ["machine"],
  [journalBacklog.id]: [],
  [storeUnavailable.id]: ["store"],
  [streamsDrained.id]: []
}

/**
 * A metric registry for one platform: each shell provides it under everything it builds, so two
 * platforms in one process (tests) keep their metrics apart.
 */
export const MetricsRegistry: Layer.Layer<never> = Layer.sync(Metric.MetricRegistry, () => new Map())

// ---- Recording ------------------------------------------------------------------------------

/** Attribute sets kept per metric by `seriesOf` before it starts over. */
const SERIES_KEPT = 1_000

/**
 * `Metric.withAttributes(metric, attributes)`, made once per attribute set and kept: a metric
 * instance keys its series by a JSON string it builds when first used, so an instance made afresh
 * per call builds that string per call. The sets are few (operations, models, machines, error
 * types, statuses); past SERIES_KEPT the kept ones are dropped and made again.
 */
export const seriesOf = <Input, State>(metric: Metric.Metric<Input, State>) => {
  const kept = new Map<string, Metric.Metric<Input, State>>()
  return (attributes: Readonly<Record<string, string>>): Metric.Metric<Input, State> => {
    let key = ""
    for (const name in attributes) key += `${name}\u0000${attributes[name]}\u0001`
    let series = kept.get(key)
    if (series === undefined) {
      if (kept.size >= SERIES_KEPT) kept.clear()
      series = Metric.withAttributes(metric, attributes)
      kept.set(key, series)
    }
    return series
  }
}

const httpRequestSeries = seriesOf(httpRequestDuration)
const storeUnavailableSeries = seriesOf(storeUnavailable)

export interface HttpRequestLabels {
  readonly method: string
  /** The route's template ("/keys/:id"), "unmatched" when none answered. */
  readonly route: string
  readonly status: number
}

/** OpenTelemetry's method values: a method outside them is "_OTHER" (a client may send any token). */
const HTTP_METHODS = new Set(["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"])

export const recordHttpRequest = (labels: HttpRequestLabels, seconds: number): Effect.Effect<void> =>
  Metric.update(
    httpRequestSeries({
      "http.request.method": HTTP_METHODS.has(labels.method) ? labels.method : "_OTHER",
      "http.route": labels.route,
      "http.response.status_code": String(labels.status)
    }),
    seconds
  )

/** Counts an outage of the store met while answering, by the store operation that met it ("KeyStore.findByHash"). */
export const countStoreUnavailable = (cause: Cause.Cause<unknown>): Effect.Effect<void> => {
  for (const reason of cause.reasons) {
    const found = Cause.isDieReason(reason) ? reason.defect : Cause.isFailReason(reason) ? reason.error : undefined
    if (isStoreUnavailable(found)) return Metric.update(storeUnavailableSeries({ store: found.store }), 1)
  }
  return Effect.void
}
