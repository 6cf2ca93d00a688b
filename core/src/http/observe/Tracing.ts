/**
 * Traces (docs/operations.md "Traces"): exported over OTLP/HTTP (JSON) when
 * OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set, with OpenTelemetry's
 * other standard variables (OTEL_SERVICE_NAME, default `model-platform`; OTEL_RESOURCE_ATTRIBUTES;
 * OTEL_EXPORTER_OTLP_HEADERS; OTEL_SDK_DISABLED...). What is traced:
 * - a server span per HTTP request (Effect's HTTP server: method, route, status; a `traceparent`
 *   sent by the client is its parent);
 * - a span per inference call with the GenAI attributes (Calls.ts);
 * - a client span per attempt at a machine (`observeMachineClient`), whose `traceparent` header
 *   the machine gets, so its own spans join the trace;
 * - the platform's named spans (`Effect.fn("ApiKeys.identify")`...).
 * Without an endpoint nothing is traced and nothing is sent to machines.
 */
import { Config, ConfigProvider, Effect, Layer, Tracer } from "effect"
import { FetchHttpClient, HttpTraceContext } from "effect/http"
import { OtlpSerialization, OtlpTracer } from "effect/observability"
import { MachineClient } from "../../gateway/MachineClient.ts"

/** Whether spans are recorded somewhere (a tracer other than Effect's native one, which keeps none). */
export const tracing: Effect.Effect<boolean> = Effect.withFiber((fiber) =>
  Effect.succeed(fiber.getRef(Tracer.Tracer) !== Tracer.nativeTracer)
)

/**
 * OpenTelemetry's defaults where Effect's reader has none: OTEL_TRACES_EXPORTER is `otlp` unless
 * set (so an endpoint alone turns export on, as the specification says).
 */
const OTEL_DEFAULTS = ConfigProvider.fromUnknown({ OTEL_TRACES_EXPORTER: "otlp" })

/** The OTLP trace exporter the OTEL_* variables describe; nothing when no endpoint is set. */
export const tracingFromConfig: Layer.Layer<never> = Layer.unwrap(
  Effect.gen(function*() {
    const serviceName = yield* Config.String("OTEL_SERVICE_NAME").pipe(Config.withDefault("model-platform"))
    const provider = yield* ConfigProvider.ConfigProvider
    return OtlpTracer.layerFromConfig({ resource: { serviceName } }).pipe(
      Layer.provide(Layer.succeed(ConfigProvider.ConfigProvider, ConfigProvider.orElse(provider, OTEL_DEFAULTS)))
    )
  }).pipe(Effect.orDie)
).pipe(Layer.provide(OtlpSerialization.layerJson), Layer.provide(FetchHttpClient.layer))

/** The MachineClient of `client`, each POST in a client span whose `traceparent` the machine receives. */
export const observeMachineClient = <E, R>(client: Layer.Layer<MachineClient, E, R>): Layer.Layer<MachineClient, E, R> =>
  Layer.effect(
    MachineClient,
    Effect.map(MachineClient, (machines) =>
      MachineClient.of({
        ...machines,
        post: (machine, path, body, options) =>
          Effect.flatMap(tracing, (traced) =>
            traced
              ? Effect.useSpan(`POST ${path}`, {
                kind: "client",
                attributes: { "http.request.method": "POST", "url.path": path, "model_platform.machine": machine.id }
              }, (span) =>
                machines.post(machine, path, body, {
                  ...options,
                  headers: { ...options.headers, traceparent: HttpTraceContext.toHeaders(span)["traceparent"]! }
                }).pipe(
                  Effect.tap((response) => Effect.sync(() => span.attribute("http.response.status_code", response.status))),
                  Effect.withParentSpan(span)
                ))
              : machines.post(machine, path, body, options))
      }))
  ).pipe(Layer.provide(client))
