/**
 * Machine failure accounting (docs/gateway.md "Cooldown"): which machines the router skips for a
 * while, and why. A failed client call never counts against a machine by itself, because the
 * call may have failed because of what it carried (a body the machine resets above its own size
 * limit, an input that crashes it). It makes the machine *suspect*: the gateway then sends a canary
 * of its own, a tiny well-formed call of the same model and endpoint (streamed when the failed
 * call streamed), at most one canary chain in flight per machine. Only canaries count:
 *
 * - a canary that completes (a 2xx answered whole; for a stream, read to its end) clears the
 *   suspicion, and for `canaryQuietMs` after it the same kind of failure starts no new canary;
 * - a canary that fails as a machine fails (no connection, no answer in time, 404/408/409/425/429
 *   or 5xx, a body or stream that breaks off, a body that is not JSON) is followed by another,
 *   `canaryRetryMs` later, until `cooldownFailures` canaries in a row failed: then the machine is
 *   skipped for `cooldownMs`;
 * - a canary answered with another 4xx proves nothing either way (the machine refused our own
 *   small call): the chain ends and nothing is counted.
 *
 * So what a client sends can cause at most a canary, never a cooldown; a machine that is really
 * broken (refusing connections, dropping every stream after its head) fails its canaries and is
 * cooled down within a few canaries of the first failure, for sequential callers too.
 */
import { Clock, Effect, FiberSet, Stream } from "effect"
import type { MachineConfig, ModelConfig } from "../catalogue/CatalogueConfig.ts"
import { type MachineClient, MachineFailure } from "./MachineClient.ts"
import type { Endpoint } from "./Validation.ts"

export interface CooldownConfig {
  /** Canaries failing in a row after which a machine is skipped for cooldownMs. */
  readonly cooldownFailures: number
  readonly cooldownMs: number
  /** Time a canary has for its whole answer. */
  readonly canaryTimeoutMs: number
  /** Pause between two canaries of one chain. */
  readonly canaryRetryMs: number
  /** After a canary of one kind succeeded, failures of that kind start no canary for this long. */
  readonly canaryQuietMs: number
}

/** What a canary imitates: the model, its endpoint, and whether the failed call streamed. */
export interface CanaryShape {
  readonly endpoint: Endpoint
  readonly model: ModelConfig
  readonly stream: boolean
}

const RETRYABLE_STATUS = new Set([404, 408, 409, 425, 429])
/** A machine's answer that means "try another machine": it is not the client's fault. */
export const isRetryableStatus = (status: number): boolean => status >= 500 || RETRYABLE_STATUS.has(status)

/** The path under a machine's base_url for an endpoint ("/v1/embeddings" -> "/embeddings"). */
export const machinePath = (endpoint: Endpoint): string => endpoint.slice(3)

/** The canary's body: the smallest well-formed call of the model at its endpoint. */
export const canaryBody = (shape: CanaryShape): Record<string, unknown> => {
  const model = shape.model.id
  switch (shape.endpoint) {
    case "/v1/chat/completions":
      return shape.stream
        ? { model, messages: [{ role: "user", content: "ping" }], max_tokens: 1, stream: true, stream_options: { include_usage: true } }
        : { model, messages: [{ role: "user", content: "ping" }], max_tokens: 1 }
    case "/v1/embeddings":
      return { model, input: "ping" }
    case "/v1/forecasts":
      return { model, history: [1, 2, 3, 4], horizon: 1 }
    case "/v1/images/generations":
      return { model, prompt: "ping", n: 1 }
  }
}

type CanaryResult = "passed" | "failed" | "inconclusive"

const drain = <E>(body: Stream.Stream<Uint8Array, E>) =>
  Stream.runFold(body, () => [] as Array<Uint8Array>, (chunks, chunk) => {
    chunks.push(chunk)
    return chunks
  })

const decoder = new TextDecoder()

const concatText = (chunks: ReadonlyArray<Uint8Array>): string => {
  let text = ""
  for (const c of chunks) text += decoder.decode(c, { stream: true })
  return text + decoder.decode()
}

const parsesAsJson = (text: string): boolean => {
  try {
    JSON.parse(text)
    return true
  } catch {
    return false
  }
}

export interface Cooldown {
  /** A call to the machine failed in a way that may be the machine's fault: check it with a canary. */
  readonly suspect: (machine: MachineConfig, shape: CanaryShape) => Effect.Effect<void>
  /** Whether the router skips the machine at `now`. */
  readonly isCoolingDown: (machineId: string, now: number) => boolean
  /** The machines skipped now. */
  readonly coolingDown: Effect.Effect<ReadonlyArray<string>>
  /** Waits until no canary runs (tests, shutdown). */
  readonly idle: Effect.Effect<void>
}

/** Failure accounting over a machine client; canaries run in a fiber set of the caller's scope. */
export const makeCooldown = (config: CooldownConfig, machines: MachineClient["Service"]) =>
  Effect.gen(function*() {
    const canaries = yield* FiberSet.make<void, never>()
    const until = new Map<string, number>()
    const inFlight = new Set<string>()
    const quietUntil = new Map<string, number>()

    /** One canary: whether the machine answered a well-formed call whole. */
    const canary = (machine: MachineConfig, shape: CanaryShape): Effect.Effect<CanaryResult> =>
      Effect.gen(function*() {
        const response = yield* machines.post(machine, machinePath(shape.endpoint), canaryBody(shape), {
          firstByteTimeoutMs: config.canaryTimeoutMs
        })
        const chunks = yield* drain(response.body)
        if (isRetryableStatus(response.status)) return "failed" as const
        if (response.status < 200 || response.status >= 300) return "inconclusive" as const
        if (shape.stream) return "passed" as const
        // A body that is not JSON is a broken answer, as for a client's call.
        return parsesAsJson(concatText(chunks)) ? "passed" as const : "failed" as const
      }).pipe(
        Effect.timeoutOrElse({
          duration: config.canaryTimeoutMs,
          orElse: () => Effect.succeed("failed" as const)
        }),
        Effect.catch((_: MachineFailure) => Effect.succeed("failed" as const)),
        Effect.catchDefect((defect) =>
          Effect.as(Effect.logError(`gateway: canary of ${machine.id} died`, defect), "inconclusive" as const)
        )
      )

    const kindOf = (machine: MachineConfig, shape: CanaryShape) =>
      `${machine.id} ${shape.endpoint} ${shape.model.id} ${shape.stream ? "stream" : "whole"}`

    const chain = (machine: MachineConfig, shape: CanaryShape) =>
      Effect.gen(function*() {
        for (let i = 0; i < config.cooldownFailures; i++) {
          if (i > 0) yield* Effect.sleep(config.canaryRetryMs)
          const result = yield* canary(machine, shape)
          if (result === "failed") continue
          if (result === "passed") quietUntil.set(kindOf(machine, shape), (yield* Clock.currentTimeMillis) + config.canaryQuietMs)
          return
        }
        until.set(machine.id, (yield* Clock.currentTimeMillis) + config.cooldownMs)
        yield* Effect.logWarning(
          `gateway: machine ${machine.id} failed ${config.cooldownFailures} canaries of ${shape.model.id} in a row; skipped for ${config.cooldownMs} ms`
        )
      }).pipe(Effect.ensuring(Effect.sync(() => inFlight.delete(machine.id))))

    const suspect = (machine: MachineConfig, shape: CanaryShape): Effect.Effect<void> =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        if (inFlight.has(machine.id) || (quietUntil.get(kindOf(machine, shape)) ?? 0) > now) return Effect.void
        if (quietUntil.size > 10_000) quietUntil.clear() // bounded: forgetting costs one canary
        inFlight.add(machine.id)
        return Effect.asVoid(FiberSet.run(canaries, chain(machine, shape)))
      })

    const isCoolingDown = (machineId: string, now: number) => (until.get(machineId) ?? 0) > now

    return {
      suspect,
      isCoolingDown,
      coolingDown: Effect.map(Clock.currentTimeMillis, (now) => [...until.entries()].filter(([, t]) => t > now).map(([id]) => id)),
      idle: FiberSet.awaitEmpty(canaries)
    } satisfies Cooldown
  })
