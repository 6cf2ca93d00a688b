/**
 * The inference calls (POST /v1/chat/completions, /v1/embeddings, /v1/forecasts, /forecasts,
 * /v1/images/generations) answered by a plain node:http listener on the server's own port, beside
 * the HttpApi router that answers everything else (docs/performance.md "The /v1 listener"): the
 * router's per-request work (route matching, four middlewares, the response's conversion) was a
 * large share of the server's CPU per metered call.
 *
 * The answers are the router's: the same `answerCall` (core http/InferenceRoutes.ts), the same body
 * bound (core http/RequestLimits.ts), the same request id, access line and HTTP metric
 * (core observability/Requests.ts `observeAnswer`). Whatever the plain path would have to judge
 * otherwise goes to the router: a query string, dot segments or any other spelling of the path,
 * a declared body over the bound, `Expect: 100-continue`, a head over MAX_HEADER_BYTES, and every
 * request while spans are exported (the router makes each request's server span).
 */
import { answerCall, CALL_ROUTES, errorResponse, headBytes, tracing } from "@model-platform/core/http"
import { Catalogue } from "@model-platform/core/catalogue"
import { Gateway } from "@model-platform/core/gateway"
import { inferenceBodyLimit, MAX_HEADER_BYTES } from "@model-platform/core/kernel"
import { observeAnswer, REQUEST_ID_HEADER } from "@model-platform/core/observability"
import { Effect, Fiber, Latch, Layer, Stream } from "effect"
import { HttpServerResponse } from "effect/http"
import type { IncomingMessage, Server, ServerResponse } from "node:http"

/** Takes a request (and answers it), or returns false for the router to answer it. */
type Taker = (request: IncomingMessage, response: ServerResponse) => boolean

/**
 * Where a server's requests are offered to the /v1 listener before its router: `install` on the
 * node:http server when it is made, `V1Listener.layer` sets the taker once the gateway is built.
 */
export class V1Gate {
  private taker: Taker | undefined = undefined

  set(taker: Taker | undefined): void {
    this.taker = taker
  }

  /** Offers every "request" event of `server` to the taker first. */
  install(server: Server): Server {
    const emit = server.emit.bind(server) as (event: string, ...args: Array<unknown>) => boolean
    server.emit = ((event: string, ...args: Array<unknown>) => {
      if (event === "request" && this.taker?.(args[0] as IncomingMessage, args[1] as ServerResponse) === true) return true
      return emit(event, ...args)
    }) as Server["emit"]
    return server
  }
}

/** As the router's `request.text`: UTF-8, a leading byte order mark dropped. */
const textDecoder = new TextDecoder()

/** The request's body as text, or undefined once it passed `limit` bytes; fails when the client went away. */
const readBody = (request: IncomingMessage, limit: number): Effect.Effect<string | undefined> =>
  Effect.callback<string | undefined>((resume) => {
    const chunks: Array<Buffer> = []
    let bytes = 0
    const onData = (chunk: Buffer) => {
      bytes += chunk.length
      if (bytes > limit) {
        done()
        request.pause()
        resume(Effect.succeed(undefined))
      } else {
        chunks.push(chunk)
      }
    }
    const onEnd = () => {
      done()
      resume(Effect.succeed(textDecoder.decode(Buffer.concat(chunks, bytes))))
    }
    // A client that went away mid-body: the router's handler calls with an empty body; so do we.
    const onClose = () => {
      done()
      resume(Effect.succeed(""))
    }
    const done = () => {
      request.off("data", onData)
      request.off("end", onEnd)
      request.off("close", onClose)
    }
    request.on("data", onData)
    request.on("end", onEnd)
    request.on("close", onClose)
  })

const headersOf = (response: HttpServerResponse.HttpServerResponse, requestId: string): Record<string, string> => {
  const headers: Record<string, string> = { ...response.headers, [REQUEST_ID_HEADER]: requestId }
  const body = response.body
  if (body._tag === "Uint8Array" || body._tag === "Stream") {
    if (body.contentType !== undefined && headers["content-type"] === undefined) headers["content-type"] = body.contentType
  }
  if (body._tag === "Uint8Array") headers["content-length"] = String(body.contentLength)
  return headers
}

/** Writes `response` to the client and returns its status once the last byte is handed to the socket. */
const send = (
  nodeResponse: ServerResponse,
  response: HttpServerResponse.HttpServerResponse,
  requestId: string
): Effect.Effect<number> => {
  const body = response.body
  if (nodeResponse.destroyed) return Effect.succeed(response.status)
  nodeResponse.writeHead(response.status, headersOf(response, requestId))
  if (body._tag === "Uint8Array") {
    nodeResponse.end(body.body)
    return Effect.succeed(response.status)
  }
  if (body._tag !== "Stream") {
    nodeResponse.end()
    return Effect.succeed(response.status)
  }
  // As the router's Node server writes a stream: a slow reader holds the next chunk back.
  const drained = Latch.makeUnsafe()
  nodeResponse.on("drain", () => drained.openUnsafe())
  return body.stream.pipe(
    Stream.orDie,
    Stream.runForEachArray((array) => {
      const chunk = array.length > 1 ? Buffer.concat(array) : array[0]
      if (nodeResponse.write(chunk)) return Effect.void
      drained.closeUnsafe()
      return drained.await
    }),
    Effect.interruptible,
    Effect.matchCause({
      onSuccess: () => {
        nodeResponse.end()
        return response.status
      },
      onFailure: () => {
        // A stream that broke after its head was sent can only be cut short.
        nodeResponse.destroy()
        return response.status
      }
    })
  )
}

/** As RequestLimits.ts answers a body over the bound, mid-read. */
const tooLarge = (path: string, limit: number) =>
  HttpServerResponse.setHeader(
    errorResponse(path, 413, `The request body is larger than ${limit} bytes, the most ${path} takes.`, "payload_too_large"),
    "connection",
    "close"
  )

export const V1Listener = {
  /**
   * Sets `gate`'s taker to answer the call routes, for as long as the layer lives: built under the
   * router's server, it is released after the server stopped listening and finished or gave up
   * its requests (its shutdown timeout), and then interrupts the calls still running.
   */
  layer: (gate: V1Gate): Layer.Layer<never, never, Gateway | Catalogue> =>
    Layer.effectDiscard(Effect.gen(function*() {
      // Spans are made by the router's server: with an exporter, every request goes there.
      if (yield* tracing) return
      const gateway = yield* Gateway
      const limit = inferenceBodyLimit((yield* Catalogue).config)
      const context = yield* Effect.context<never>()
      const running = new Set<Fiber.Fiber<void>>()

      const answer = (request: IncomingMessage, nodeResponse: ServerResponse, path: string) => (requestId: string) =>
        Effect.flatMap(readBody(request, limit), (text) => {
          if (text === undefined) {
            // The rest of the body is not read: the connection cannot carry another request.
            nodeResponse.once("finish", () => request.socket.destroySoon())
            return send(nodeResponse, tooLarge(path, limit), requestId)
          }
          const authorization = request.headers["authorization"]
          return Effect.flatMap(
            answerCall(gateway, CALL_ROUTES.get(path)!, authorization, text),
            (response) => send(nodeResponse, response, requestId)
          )
        })

      const take: Taker = (request, nodeResponse) => {
        const url = request.url ?? ""
        if (request.method !== "POST" || !CALL_ROUTES.has(url)) return false
        const declared = request.headers["content-length"]
        if (declared !== undefined && !(/^\d+$/.test(declared) && Number(declared) <= limit)) return false
        if (request.headers["expect"] !== undefined) return false
        if (headBytes({ method: "POST", url, headers: request.headers as Record<string, string> }) > MAX_HEADER_BYTES) return false
        const incomingId = request.headers[REQUEST_ID_HEADER]
        const program = observeAnswer("POST", typeof incomingId === "string" ? incomingId : undefined, url, answer(request, nodeResponse, url))
        const fiber = Effect.runForkWith(context)(program)
        running.add(fiber)
        fiber.addObserver(() => running.delete(fiber))
        // As the router's server: a client that closed before its answer ended interrupts the call.
        nodeResponse.on("close", () => {
          if (!nodeResponse.writableEnded) fiber.interruptUnsafe()
        })
        return true
      }
      gate.set(take)
      yield* Effect.addFinalizer(() =>
        Effect.suspend(() => {
          gate.set(undefined)
          return Fiber.interruptAll(running)
        })
      )
    }))
}
