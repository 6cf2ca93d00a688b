/**
 * How the platform writes its logs (docs/operations.md "Logs"), from the environment:
 *   LOG_FORMAT  json (one JSON object per line, for log collectors) or pretty (for a terminal);
 *               the shell picks the default (Node: pretty, Lambda: json)
 *   LOG_LEVEL   trace, debug, info (default), warn, error, fatal or none
 *
 * A JSON line is flat: `time`, `level`, `message`, then the line's annotations (the request id,
 * an access line's fields), `trace_id`/`span_id` when a trace is being recorded, and `cause` for
 * a failure. Values that are not JSON (a bigint) are written as strings.
 */
import { AccessLogLevel } from "./Requests.ts"
import { Cause, Config, Context, Data, Effect, Layer, Logger, type LogLevel, References, Tracer } from "effect"

export type LogFormat = "json" | "pretty"

const LEVELS: Readonly<Record<string, LogLevel.LogLevel>> = {
  trace: "Trace",
  debug: "Debug",
  info: "Info",
  warn: "Warn",
  warning: "Warn",
  error: "Error",
  fatal: "Fatal",
  none: "None"
}

export interface LoggingSettings {
  readonly format: LogFormat
  readonly level: LogLevel.LogLevel
}

/** LOG_FORMAT or LOG_LEVEL holds a value the platform does not know: the shell refuses to start. */
export class LoggingConfigError extends Data.TaggedError("LoggingConfigError")<{ readonly message: string }> {}

/** LOG_FORMAT and LOG_LEVEL; an unknown value is refused with a message naming what is accepted. */
export const loggingSettings = (defaultFormat: LogFormat): Effect.Effect<LoggingSettings, LoggingConfigError | Config.ConfigError> =>
  Effect.gen(function*() {
    const rawFormat = (yield* Config.String("LOG_FORMAT").pipe(Config.withDefault(""))).trim().toLowerCase()
    const rawLevel = (yield* Config.String("LOG_LEVEL").pipe(Config.withDefault(""))).trim().toLowerCase()
    const format = rawFormat === "" ? defaultFormat : rawFormat
    if (format !== "json" && format !== "pretty") {
      return yield* new LoggingConfigError({ message: `LOG_FORMAT must be json or pretty; it is ${JSON.stringify(rawFormat.slice(0, 40))}.` })
    }
    const level = rawLevel === "" ? "Info" : LEVELS[rawLevel]
    if (level === undefined) {
      return yield* new LoggingConfigError({
        message: `LOG_LEVEL must be one of ${Object.keys(LEVELS).join(", ")}; it is ${JSON.stringify(rawLevel.slice(0, 40))}.`
      })
    }
    return { format, level }
  })

const plain = (value: unknown): unknown => {
  if (typeof value === "bigint") return value.toString()
  if (value instanceof Error) return value.message
  return value
}

const messageText = (message: unknown): string => {
  const parts = Array.isArray(message) ? message : [message]
  return parts.map((part) => (typeof part === "string" ? part : JSON.stringify(plain(part)) ?? String(part))).join(" ")
}

const RESERVED = new Set(["time", "level", "message", "cause", "trace_id", "span_id"])

/** One flat JSON object per line on standard output. */
export const jsonLogger: Logger.Logger<unknown, void> = Logger.make(({ cause, date, fiber, logLevel, message }) => {
  const line: Record<string, unknown> = {
    time: date.toISOString(),
    level: logLevel.toLowerCase(),
    message: messageText(message)
  }
  for (const [key, value] of Object.entries(fiber.getRef(References.CurrentLogAnnotations))) {
    line[RESERVED.has(key) ? `annotation_${key}` : key] = plain(value)
  }
  // Trace ids only where traces are exported (Tracing.ts): Effect's native tracer keeps none.
  const span = fiber.getRef(Tracer.Tracer) === Tracer.nativeTracer ? undefined : Context.getOrUndefined(fiber.context, Tracer.ParentSpan)
  if (span !== undefined && span._tag === "Span" && span.sampled) {
    line.trace_id = span.traceId
    line.span_id = span.spanId
  }
  if (cause.reasons.length > 0) line.cause = Cause.pretty(cause)
  // oxlint-disable-next-line no-console
  console.log(JSON.stringify(line, (_key, value) => (typeof value === "bigint" ? value.toString() : value)))
})

/** The loggers and minimum level of these settings, for a shell to provide under everything it builds. */
export const loggingLayer = (settings: LoggingSettings): Layer.Layer<never> =>
  Layer.mergeAll(
    // The tracer logger keeps attaching log lines to the current span (exported traces show them).
    Logger.layer(settings.format === "json" ? [jsonLogger, Logger.tracerLogger] : [Logger.consolePretty(), Logger.tracerLogger]),
    Layer.succeed(References.MinimumLogLevel, settings.level),
    // One access line per request, at Info (Requests.ts).
    Layer.succeed(AccessLogLevel, "Info")
  )

/** LOG_FORMAT and LOG_LEVEL read from the environment, as a layer. */
export const loggingFromConfig = (defaultFormat: LogFormat): Layer.Layer<never, LoggingConfigError | Config.ConfigError> =>
  Layer.unwrap(Effect.map(loggingSettings(defaultFormat), loggingLayer))
