/**
 * The MachineClient port over HTTP with the web-standard `fetch`, so the same code runs on Node
 * (undici, which keeps connections alive per origin) and on Lambda.
 *
 * - `post` resolves when the response head arrives: any status is a MachineResponse (the gateway
 *   classifies it); no connection is MachineFailure "unreachable"; no head within
 *   `firstByteTimeoutMs` is "timeout". Interrupting the effect aborts the request.
 * - The body is a Stream of the bytes as they arrive; a break while it streams ends it with
 *   MachineFailure "dropped"; interrupting its consumption cancels the read and so the request.
 */
import { Effect, Layer, Result, Stream } from "effect"
import { MachineClient, MachineFailure, type MachineResponse, type MachineTarget } from "./MachineClient.ts"

const JSON_HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" }

const describe = (error: unknown): string => {
  if (error instanceof Error) {
    const cause = (error as { cause?: unknown }).cause
    return cause instanceof Error ? `${error.message}: ${cause.message}` : error.message
  }
  return String(error)
}

const headersOf = (headers: Headers): Record<string, string> => {
  const out: Record<string, string> = {}
  headers.forEach((value, name) => {
    out[name] = value
  })
  return out
}

const bodyOf = (machine: MachineTarget, response: Response): Stream.Stream<Uint8Array, MachineFailure> => {
  if (response.body === null) return Stream.empty
  return Stream.fromReadableStream({
    // The Response, not only its body, stays reachable until the body is read: Node's fetch
    // (undici) cancels the body of a Response that is garbage-collected, and the body then reads
    // as empty (a machine's answer lost between its head and its read, under a young collection).
    evaluate: () => response.body!,
    onError: (error) =>
      new MachineFailure({
        machine_id: machine.id,
        reason: "dropped",
        message: `The answer of machine ${machine.id} broke off: ${describe(error)}`
      })
  })
}

/**
 * The JSON text of a call's body, or MachineFailure "unsendable" when it has none (nested too deep
 * for JSON.stringify, a BigInt, a cycle): a body never kills the client, and nothing is sent.
 */
export const encodeBody = (machine: MachineTarget, body: unknown): Result.Result<string, MachineFailure> => {
  try {
    return Result.succeed(JSON.stringify(body))
  } catch (error) {
    return Result.fail(
      new MachineFailure({
        machine_id: machine.id,
        reason: "unsendable",
        message: `The body of a call to machine ${machine.id} cannot be encoded as JSON: ${describe(error)}`
      })
    )
  }
}

/** Joins a base URL (with or without a trailing slash) and a path starting with "/". */
export const machineUrl = (baseUrl: string, path: string): string =>
  (baseUrl.endsWith("/") ? baseUrl.slice(0, -1) : baseUrl) + path

export const makeMachineHttp = (fetchImpl: typeof fetch = globalThis.fetch): MachineClient["Service"] => {
  const request = (
    machine: MachineTarget,
    path: string,
    init: RequestInit,
    timeoutMs: number
  ): Effect.Effect<Response, MachineFailure> =>
    Effect.tryPromise({
      try: (signal) => fetchImpl(machineUrl(machine.base_url, path), { ...init, signal }),
      catch: (error) =>
        new MachineFailure({
          machine_id: machine.id,
          reason: "unreachable",
          message: `Machine ${machine.id} could not be reached: ${describe(error)}`
        })
    }).pipe(
      Effect.timeoutOrElse({
        duration: timeoutMs,
        orElse: () =>
          Effect.fail(
            new MachineFailure({
              machine_id: machine.id,
              reason: "timeout",
              message: `Machine ${machine.id} did not answer within ${timeoutMs} ms.`
            })
          )
      })
    )

  return MachineClient.of({
    post: (machine, path, body, options) =>
      Effect.flatMap(Effect.fromResult(encodeBody(machine, body)), (text) =>
        Effect.map(
          request(
            machine,
            path,
            { method: "POST", headers: options.headers === undefined ? JSON_HEADERS : { ...options.headers, ...JSON_HEADERS }, body: text },
            options.firstByteTimeoutMs
          ),
          (response): MachineResponse => ({
            status: response.status,
            headers: headersOf(response.headers),
            body: bodyOf(machine, response)
          })
        )),
    models: (machine, timeoutMs) =>
      Effect.gen(function*() {
        const response = yield* request(machine, "/models", { method: "GET" }, timeoutMs)
        const fail = (message: string) =>
          new MachineFailure({ machine_id: machine.id, reason: "dropped", message })
        if (response.status !== 200) {
          yield* Effect.promise(() => response.body?.cancel() ?? Promise.resolve())
          return yield* fail(`Machine ${machine.id} answered GET /models with status ${response.status}.`)
        }
        const json = yield* Effect.tryPromise({
          try: () => response.json() as Promise<unknown>,
          catch: (error) => fail(`Machine ${machine.id} answered GET /models with a body that is not JSON: ${describe(error)}`)
        }).pipe(
          Effect.timeoutOrElse({
            duration: timeoutMs,
            orElse: () => Effect.fail(fail(`Machine ${machine.id} did not finish GET /models within ${timeoutMs} ms.`))
          })
        )
        const data = typeof json === "object" && json !== null ? (json as { data?: unknown }).data : undefined
        if (!Array.isArray(data)) return yield* fail(`Machine ${machine.id} answered GET /models without a data list.`)
        return data.flatMap((m) =>
          typeof m === "object" && m !== null && typeof (m as { id?: unknown }).id === "string" ? [(m as { id: string }).id] : []
        )
      })
  })
}

/** MachineClient over fetch (Node and Lambda). */
export const MachineHttpLayer: Layer.Layer<MachineClient> = Layer.sync(MachineClient, () => makeMachineHttp())
