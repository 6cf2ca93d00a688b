/**
 * The machine health checker: polls every machine of the catalogue through the MachineClient port
 * (`models(machine, timeoutMs)` = GET {base_url}/models) and writes what it saw to MachineStatus,
 * which the catalogue (/machines, /models, /route), GET /v1/models and the router read.
 *
 * One probe of machine M decides M's state from what it answered (`observedState`, pure):
 *
 * | M's answer                                                 | health   | serving_now              |
 * |------------------------------------------------------------|----------|--------------------------|
 * | no answer: unreachable, error status, bad body, timeout    | offline  | []                       |
 * | a model list, in time, naming none of M's serverless models | degraded | []                       |
 * | a model list naming some, answered after `slowMs`           | degraded | the configured ones named |
 * | a model list naming some (or M has no serverless models)    | online   | the configured ones named |
 *
 * serving_now keeps the catalogue's order and only the catalogue's models: a model the machine
 * serves but the catalogue does not list is not offered. "degraded" is reachable but not fully
 * useful: the router sends a model's calls to online machines first, then to degraded ones that
 * serve it, and never to a machine that does not serve it (Routing.ts).
 *
 * Rounds: the first at once when the layer starts, then `intervalMs` after each round ends; all
 * machines of a round in parallel, each bounded by `timeoutMs` (the client's own timeout, and a
 * guard here in case a client overruns it). One failed probe is enough to mark a machine offline,
 * and one good answer brings it back. Probes of one machine never overlap (a per-machine lock), so
 * an older answer never overwrites a newer one.
 *
 * `reportFailure(machineId)`: the gateway saw a call to the machine fail (unreachable, timeout,
 * dropped); the checker probes that machine now, in the background, unless a probe of it is
 * already running. The probe decides: a dropped stream on a healthy machine changes nothing.
 *
 * Pure core: the only I/O is the MachineClient port (core/src/gateway/MachineHttp.ts in the
 * shells). On Lambda the loop runs while the container runs (frozen between invocations, it polls
 * again soon after it thaws).
 */
import { Clock, Context, Duration, Effect, Exit, FiberSet, Layer, Option, Semaphore } from "effect"
import type { CatalogueConfig, MachineConfig } from "../catalogue/CatalogueConfig.ts"
import { MachineClient } from "./MachineClient.ts"
import { repeatInBackground } from "../kernel/BackgroundJobs.ts"
import { type MachineState, MachineStatus } from "../catalogue/MachineStatus.ts"

export interface HealthCheckerOptions {
  /** Time between the end of one round and the start of the next. */
  readonly intervalMs: number
  /** Time a machine has to answer GET /models. */
  readonly timeoutMs: number
  /** An answer slower than this marks the machine degraded (still serving). */
  readonly slowMs: number
}

export const defaultHealthCheckerOptions: HealthCheckerOptions = { intervalMs: 5_000, timeoutMs: 2_000, slowMs: 1_000 }

/** What one probe saw: the models listed and how long the answer took, or no answer. */
export type Probe =
  | { readonly _tag: "Answered"; readonly models: ReadonlyArray<string>; readonly elapsedMs: number }
  | { readonly _tag: "NoAnswer"; readonly reason: string }

/** The state a probe gives a machine (the table above). */
export const observedState = (
  machine: Pick<MachineConfig, "serverless_models">,
  probe: Probe,
  slowMs: number = defaultHealthCheckerOptions.slowMs
): MachineState => {
  if (probe._tag === "NoAnswer") return { health: "offline", serving_now: [] }
  const listed = new Set(probe.models)
  const serving = machine.serverless_models.filter((model) => listed.has(model))
  if (machine.serverless_models.length > 0 && serving.length === 0) return { health: "degraded", serving_now: [] }
  return { health: probe.elapsedMs > slowMs ? "degraded" : "online", serving_now: serving }
}

export class HealthChecker extends Context.Service<HealthChecker, {
  /** Probes every machine now, in parallel, and writes their states; returns when all are done. */
  readonly checkAll: Effect.Effect<void>
  /** Probes one machine now and returns the state written (undefined: no such machine). */
  readonly check: (machineId: string) => Effect.Effect<MachineState | undefined>
  /**
   * A call to the machine failed: probe it now in the background (not when a probe of it is
   * running already). Returns at once.
   */
  readonly reportFailure: (machineId: string) => Effect.Effect<void>
}>()("@model-platform/core/gateway/HealthChecker") {
  /** The checker without a polling loop: rounds run only when asked (tests, on-demand shells). */
  static readonly layerManual = (
    config: CatalogueConfig,
    options: Partial<HealthCheckerOptions> = {}
  ): Layer.Layer<HealthChecker, never, MachineClient | MachineStatus> =>
    Layer.effect(HealthChecker, make(config, { ...defaultHealthCheckerOptions, ...options }))

  /**
   * The checker and its polling loop: the first round at once (on Lambda after the container's
   * first invocation, kernel/BackgroundJobs.ts), then every `intervalMs` after the previous round
   * ends, until the layer's scope closes.
   */
  static readonly layer = (
    config: CatalogueConfig,
    options: Partial<HealthCheckerOptions> = {}
  ): Layer.Layer<HealthChecker, never, MachineClient | MachineStatus> => {
    const settings = { ...defaultHealthCheckerOptions, ...options }
    return Layer.effect(
      HealthChecker,
      Effect.gen(function*() {
        const checker = yield* make(config, settings)
        yield* repeatInBackground(checker.checkAll, Duration.millis(settings.intervalMs))
        return checker
      })
    )
  }
}

const make = (config: CatalogueConfig, options: HealthCheckerOptions) =>
  Effect.gen(function*() {
    const client = yield* MachineClient
    const status = yield* MachineStatus
    const background = yield* FiberSet.make<void, never>()
    const machines = yield* Effect.forEach(config.machines, (machine) =>
      Effect.map(Semaphore.make(1), (lock) => ({ machine, lock })))
    const byId = new Map(machines.map((m) => [m.machine.id, m]))

    /** Asks the machine for its models; never fails (a failure or a defect is no answer). */
    const probe = (machine: MachineConfig): Effect.Effect<Probe> =>
      Effect.gen(function*() {
        const started = yield* Clock.currentTimeMillis
        const exit = yield* client.models({ id: machine.id, base_url: machine.base_url }, options.timeoutMs).pipe(
          Effect.timeoutOption(Duration.millis(options.timeoutMs)),
          Effect.exit
        )
        const elapsedMs = (yield* Clock.currentTimeMillis) - started
        if (Exit.isFailure(exit)) return { _tag: "NoAnswer", reason: String(exit.cause) } as const
        return Option.match(exit.value, {
          onNone: () => ({ _tag: "NoAnswer", reason: `no answer in ${options.timeoutMs} ms` }) as const,
          onSome: (models) => ({ _tag: "Answered", models, elapsedMs }) as const
        })
      })

    type Entry = { readonly machine: MachineConfig; readonly lock: Semaphore.Semaphore }

    /** Probes and writes the state; callers hold the machine's lock. */
    const probeAndWrite = (entry: Entry) =>
      Effect.gen(function*() {
        const seen = yield* probe(entry.machine)
        const next = observedState(entry.machine, seen, options.slowMs)
        const previous = yield* status.get(entry.machine.id)
        yield* status.set(entry.machine.id, next)
        if (previous.health !== next.health) {
          yield* Effect.logInfo(`machine ${entry.machine.id}: ${previous.health} -> ${next.health}`).pipe(
            Effect.annotateLogs({ machine_id: entry.machine.id, ...(seen._tag === "NoAnswer" ? { reason: seen.reason } : {}) })
          )
        }
        return next
      })

    const checkOne = (entry: Entry) => entry.lock.withPermit(probeAndWrite(entry))

    const checkAll = Effect.forEach(machines, checkOne, { concurrency: "unbounded", discard: true }).pipe(
      Effect.withSpan("HealthChecker.checkAll")
    )

    const check = (machineId: string) => {
      const entry = byId.get(machineId)
      return entry === undefined ? Effect.succeed(undefined) : checkOne(entry)
    }

    const reportFailure = (machineId: string) => {
      const entry = byId.get(machineId)
      if (entry === undefined) return Effect.void
      return FiberSet.run(background, entry.lock.withPermitsIfAvailable(1)(probeAndWrite(entry)).pipe(Effect.asVoid)).pipe(
        Effect.asVoid
      )
    }

    return HealthChecker.of({ checkAll, check, reportFailure })
  })
