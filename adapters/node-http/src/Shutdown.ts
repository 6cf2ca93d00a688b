/**
 * The Node server's graceful shutdown (docs/operations.md "Shutdown"). On SIGTERM (or SIGINT):
 *  1. readiness answers 503 `draining` at once (core http/observe/Health.ts), so the load
 *     balancer stops sending new requests;
 *  2. for SHUTDOWN_GRACE_S more the server still takes new connections (those already on their
 *     way are answered); not after SIGINT (Ctrl-C at a terminal: nobody balances load there);
 *  3. then it stops listening, and the requests in flight, streams included, run to their end, for
 *     at most SHUTDOWN_TIMEOUT_S (Server.ts `shutdownTimeoutMs`); one still running then is cut;
 *  4. then the layers below close in order: the gateway waits for its background metering
 *     (settlements written, journal closed), the database pools close;
 *  5. the process exits 0. A second signal meanwhile exits at once (1).
 */
import type { Lifecycle } from "@model-platform/core/http"
import { Cause, Config, Data, Effect, Exit, Runtime } from "effect"

export const ShutdownConfig = Config.all({
  /** Seconds new connections are still taken once draining began. */
  graceSeconds: Config.Number("SHUTDOWN_GRACE_S").pipe(Config.withDefault(5)),
  /** Seconds the requests in flight (a 600 s stream among them) have to finish once the server stopped listening. */
  timeoutSeconds: Config.Number("SHUTDOWN_TIMEOUT_S").pipe(Config.withDefault(600))
})

export class ShutdownConfigError extends Data.TaggedError("ShutdownConfigError")<{ readonly message: string }> {}

/** The shutdown's settings, in milliseconds; a negative or non-finite value is refused. */
export const shutdownSettings: Effect.Effect<ShutdownSettings, ShutdownConfigError | Config.ConfigError> = Effect.gen(function*() {
  const { graceSeconds, timeoutSeconds } = yield* ShutdownConfig
  for (const [name, value] of [["SHUTDOWN_GRACE_S", graceSeconds], ["SHUTDOWN_TIMEOUT_S", timeoutSeconds]] as const) {
    if (!Number.isFinite(value) || value < 0) {
      return yield* new ShutdownConfigError({ message: `${name} must be a number of seconds, 0 or more; it is ${value}.` })
    }
  }
  return { graceMs: Math.round(graceSeconds * 1000), timeoutMs: Math.round(timeoutSeconds * 1000) }
})

/** The stop signal received, for the readiness message and the log. */
let received: string | undefined
const remember = (signal: string) => () => {
  if (received !== undefined) {
    // A second signal: the operator wants it gone now.
    console.error(`${signal} received while draining: exiting now`)
    process.exit(1)
  }
  received = signal
}

/** The stop signal this process received, if any (a worker told to stop by its primary asks, Workers.ts). */
export const stopSignalReceived = (): string | undefined => received

export interface ShutdownSettings {
  readonly graceMs: number
  readonly timeoutMs: number
}

/** Names the stop signals (for the readiness message and the log) and makes a second one exit at once. */
export const listenForStopSignals = Effect.sync(() => {
  // Before runMain's own listeners (which interrupt the main fiber).
  process.prependListener("SIGTERM", remember("SIGTERM"))
  process.prependListener("SIGINT", remember("SIGINT"))
})

/**
 * Steps 1 and 2 of the module's comment, before the server is closed (closing it is the rest):
 * readiness turns 503 and new connections are taken for the grace.
 */
export const drain = (lifecycle: Effect.Effect<Lifecycle["Service"]>, settings: ShutdownSettings) =>
  Effect.gen(function*() {
    const why = received ?? "stopping"
    const graceMs = why === "SIGINT" ? 0 : settings.graceMs
    yield* (yield* lifecycle).drain(why)
    yield* Effect.logInfo(
      `${why}: draining. Readiness answers 503; new connections are taken for ${graceMs / 1000} s more, ` +
        `then requests in flight have up to ${settings.timeoutMs / 1000} s to finish`
    )
    yield* Effect.sleep(graceMs)
    yield* Effect.logInfo("draining: no new connections; waiting for the requests in flight")
  })

/**
 * runMain's teardown: a stop signal (the main fiber interrupted) after a clean drain is success,
 * exit 0; a failure keeps its code.
 */
export const teardown: Runtime.Teardown = (exit, onExit) =>
  Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause) ? onExit(0) : Runtime.defaultTeardown(exit, onExit)
