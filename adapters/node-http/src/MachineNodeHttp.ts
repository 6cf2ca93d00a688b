/**
 * The MachineClient port over node:http / node:https with keep-alive Agents: the Node shell's
 * machine client (core's MachineHttp.ts, over `fetch`, stays the one for Lambda). Same semantics
 * as MachineHttp.ts, at a fraction of the CPU per call (docs/performance.md):
 *
 * - `post` resolves when the response head arrives: any status is a MachineResponse (the gateway
 *   classifies it); no connection (refused, reset before the head, DNS) is MachineFailure
 *   "unreachable"; no head within `firstByteTimeoutMs` is "timeout" (the request is destroyed).
 *   Interrupting the effect destroys the request, so the machine sees its socket close.
 * - The body is a Stream of the chunks as they arrive, read with backpressure (a slow consumer
 *   slows the reading of the socket); a break while it streams (the connection reset or closed
 *   before the end of the body) ends it with "dropped"; interrupting its consumption destroys
 *   the response and so the connection.
 * - Like undici's fetch, a request is never re-sent: a connection reset before the head is
 *   "unreachable" even on a reused keep-alive socket (the machine may have read the call). Idle
 *   connections are dropped before the machine's announced `Keep-Alive: timeout` runs out (Node's
 *   Agent reads that hint), which keeps such races rare.
 * - `models` is GET {base_url}/models within `timeoutMs` (head and body), for the health checker.
 */
import { NodeStream } from "@effect/platform-node"
import {
  encodeBody,
  MachineClient,
  MachineFailure,
  type MachineResponse,
  type MachineTarget,
  machineUrl
} from "@model-platform/core/gateway"
import { Effect, Layer, Result, Stream } from "effect"
import * as Http from "node:http"
import * as Https from "node:https"

export interface MachineNodeHttpOptions {
  /** Connections per machine at most (default: unlimited, as undici's fetch). */
  readonly maxSockets?: number | undefined
  /** Idle connections kept per machine (default 256). */
  readonly maxFreeSockets?: number | undefined
}

const ACCEPT = "application/json, text/event-stream"

const describe = (error: unknown): string => {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code
    return typeof code === "string" && !error.message.includes(code) ? `${error.message} (${code})` : error.message
  }
  return String(error)
}

/** Where a request goes, parsed once per base URL and path. */
interface Target {
  readonly secure: boolean
  readonly hostname: string
  readonly port: string
  readonly path: string
}

const headersOf = (headers: Http.IncomingHttpHeaders): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const name in headers) {
    const value = headers[name]
    if (typeof value === "string") out[name] = value
    else if (value !== undefined) out[name] = value.join(", ")
  }
  return out
}

export const makeMachineNodeHttp = (options: MachineNodeHttpOptions = {}): MachineClient["Service"] & {
  /** Closes the kept-alive connections (the layer does it when its scope closes). */
  readonly destroy: () => void
} => {
  const agentOptions: Http.AgentOptions = {
    keepAlive: true,
    maxSockets: options.maxSockets ?? Infinity,
    maxFreeSockets: options.maxFreeSockets ?? 256,
    // The most recently used connection first: the warm ones stay warm, the rest time out.
    scheduling: "lifo"
  }
  const httpAgent = new Http.Agent(agentOptions)
  const httpsAgent = new Https.Agent(agentOptions)

  const targets = new Map<string, Target>()
  const targetOf = (machine: MachineTarget, path: string): Target => {
    const key = machine.base_url + "\u0000" + path
    let target = targets.get(key)
    if (target === undefined) {
      const url = new URL(machineUrl(machine.base_url, path))
      target = {
        secure: url.protocol === "https:",
        hostname: url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname,
        port: url.port,
        path: url.pathname + url.search
      }
      if (targets.size > 1024) targets.clear()
      targets.set(key, target)
    }
    return target
  }

  const unreachable = (machine: MachineTarget, error: unknown) =>
    new MachineFailure({
      machine_id: machine.id,
      reason: "unreachable",
      message: `Machine ${machine.id} could not be reached: ${describe(error)}`
    })
  const timedOut = (machine: MachineTarget, timeoutMs: number) =>
    new MachineFailure({
      machine_id: machine.id,
      reason: "timeout",
      message: `Machine ${machine.id} did not answer within ${timeoutMs} ms.`
    })
  const dropped = (machine: MachineTarget, message: string) =>
    new MachineFailure({ machine_id: machine.id, reason: "dropped", message })

  /**
   * Sends a request and resumes with the response at its head. The request is destroyed on
   * timeout and on interruption.
   */
  const send = (
    machine: MachineTarget,
    path: string,
    method: "GET" | "POST",
    payload: Buffer | undefined,
    timeoutMs: number,
    extra?: Readonly<Record<string, string>>
  ): Effect.Effect<Http.IncomingMessage, MachineFailure> =>
    Effect.callback<Http.IncomingMessage, MachineFailure>((resume) => {
      const target = targetOf(machine, path)
      const headers: Http.OutgoingHttpHeaders = payload === undefined
        ? { ...extra, accept: ACCEPT }
        : { ...extra, "content-type": "application/json", "content-length": payload.length, accept: ACCEPT }
      let done = false
      const finish = (effect: Effect.Effect<Http.IncomingMessage, MachineFailure>) => {
        if (done) return
        done = true
        clearTimeout(timer)
        resume(effect)
      }
      const req = (target.secure ? Https : Http).request({
        host: target.hostname,
        port: target.port,
        path: target.path,
        method,
        headers,
        agent: target.secure ? httpsAgent : httpAgent
      })
      req.on("response", (res) => {
        if (done) {
          res.destroy()
          return
        }
        finish(Effect.succeed(res))
      })
      // Stays attached: errors after the head (the body breaking) surface on the response.
      req.on("error", (error) => finish(Effect.fail(unreachable(machine, error))))
      const timer = setTimeout(() => {
        req.destroy()
        finish(Effect.fail(timedOut(machine, timeoutMs)))
      }, timeoutMs)
      req.end(payload)
      return Effect.sync(() => {
        done = true
        clearTimeout(timer)
        req.destroy()
      })
    })

  const bodyOf = (machine: MachineTarget, res: Http.IncomingMessage): Stream.Stream<Uint8Array, MachineFailure> =>
    NodeStream.fromReadable<Uint8Array, MachineFailure>({
      evaluate: () => res,
      onError: (error) => dropped(machine, `The answer of machine ${machine.id} broke off: ${describe(error)}`)
    })

  /** The whole body, collected as node:http hands it over (no stream machinery: a chat answer is read so). */
  const bytesOf = (machine: MachineTarget, res: Http.IncomingMessage): Effect.Effect<Uint8Array, MachineFailure> =>
    Effect.callback<Uint8Array, MachineFailure>((resume) => {
      const chunks: Array<Buffer> = []
      let length = 0
      let done = false
      const finish = (effect: Effect.Effect<Uint8Array, MachineFailure>) => {
        if (done) return
        done = true
        resume(effect)
      }
      const broke = (reason: string) =>
        finish(Effect.fail(dropped(machine, `The answer of machine ${machine.id} broke off: ${reason}`)))
      res.on("data", (chunk: Buffer) => {
        chunks.push(chunk)
        length += chunk.length
      })
      res.on("end", () => finish(Effect.succeed(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, length))))
      res.on("error", (error) => broke(describe(error)))
      // Closed before its end (its connection lost): the answer is cut short.
      res.on("close", () => {
        if (!res.complete) broke("the connection closed before the end of the answer")
      })
      return Effect.sync(() => res.destroy())
    })

  /**
   * An answer whose body is made into a stream only when read so: a chat answer is read whole
   * (`bytes`), and a stream made per call keeps the call's state alive past the young generation's
   * collections (docs/performance.md "Generators made per call").
   */
  class NodeMachineResponse implements MachineResponse {
    readonly status: number
    readonly headers: Readonly<Record<string, string>>
    readonly machine: MachineTarget
    readonly res: Http.IncomingMessage
    constructor(machine: MachineTarget, res: Http.IncomingMessage) {
      this.status = res.statusCode ?? 0
      this.headers = headersOf(res.headers)
      this.machine = machine
      this.res = res
    }
    get body() {
      return bodyOf(this.machine, this.res)
    }
    get bytes() {
      return bytesOf(this.machine, this.res)
    }
  }

  const post: MachineClient["Service"]["post"] = (machine, path, body, options) =>
    Effect.suspend(() => {
      // A body JSON cannot encode fails as "unsendable", never as a defect.
      const text = encodeBody(machine, body)
      if (Result.isFailure(text)) return Effect.fail(text.failure)
      return Effect.map(
        send(machine, path, "POST", Buffer.from(text.success), options.firstByteTimeoutMs, options.headers),
        (res): MachineResponse => new NodeMachineResponse(machine, res)
      )
    })

  /** The whole body as text (`bytesOf`), or a failure ("dropped") when it breaks off. */
  const readText = (machine: MachineTarget, res: Http.IncomingMessage): Effect.Effect<string, MachineFailure> =>
    Effect.map(bytesOf(machine, res), (bytes) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8"))

  const models: MachineClient["Service"]["models"] = (machine, timeoutMs) =>
    Effect.gen(function*() {
      const fail = (message: string) => dropped(machine, message)
      const res = yield* send(machine, "/models", "GET", undefined, timeoutMs)
      if (res.statusCode !== 200) {
        res.resume()
        return yield* fail(`Machine ${machine.id} answered GET /models with status ${res.statusCode}.`)
      }
      const text = yield* readText(machine, res).pipe(
        Effect.timeoutOrElse({
          duration: timeoutMs,
          orElse: () => Effect.fail(fail(`Machine ${machine.id} did not finish GET /models within ${timeoutMs} ms.`))
        })
      )
      let json: unknown
      try {
        json = JSON.parse(text)
      } catch (error) {
        return yield* fail(`Machine ${machine.id} answered GET /models with a body that is not JSON: ${describe(error)}`)
      }
      const data = typeof json === "object" && json !== null ? (json as { data?: unknown }).data : undefined
      if (!Array.isArray(data)) return yield* fail(`Machine ${machine.id} answered GET /models without a data list.`)
      return data.flatMap((m) =>
        typeof m === "object" && m !== null && typeof (m as { id?: unknown }).id === "string" ? [(m as { id: string }).id] : []
      )
    })

  return {
    ...MachineClient.of({ post, models }),
    destroy: () => {
      httpAgent.destroy()
      httpsAgent.destroy()
    }
  }
}

/** MachineClient over node:http(s) with keep-alive Agents; closes its connections with its scope. */
export const machineNodeHttpLayer = (options: MachineNodeHttpOptions = {}): Layer.Layer<MachineClient> =>
  Layer.effect(
    MachineClient,
    Effect.acquireRelease(Effect.sync(() => makeMachineNodeHttp(options)), (client) => Effect.sync(client.destroy))
  )

/** The Node shell's MachineClient (defaults). */
export const MachineNodeHttpLayer: Layer.Layer<MachineClient> = machineNodeHttpLayer()
