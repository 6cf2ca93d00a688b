/**
 * The reference machine: an OpenAI-compatible HTTP server (plain node:http) serving small,
 * real models that need no downloads. See docs/reference-machine.md.
 *
 *   const machine = await startReferenceMachine({ port: 0 })
 *   new OpenAI({ baseURL: machine.url, apiKey: "x" })
 *   await machine.close()
 */
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { Effect } from "effect"
import type { Scope } from "effect"
import { parseChatRequest, runChat, streamPieces, argumentPieces } from "./ChatModel.ts"
import type { ChatOutcome, ChatRequest } from "./ChatModel.ts"
import { parseEmbeddingRequest, runEmbeddings } from "./EmbeddingModel.ts"
import { ApiError, isRecord } from "./Errors.ts"
import { DEFAULT_FAULTS, parseFaultPatch, reportUsage } from "./Faults.ts"
import type { FaultSettings } from "./Faults.ts"
import { parseForecastRequest, runForecast } from "./ForecastModel.ts"
import { parseImageRequest, runImages } from "./ImageModel.ts"

export type ModelKind = "chat" | "embeddings" | "forecasts" | "images"

export interface ModelEntry {
  readonly id: string
  readonly kind: ModelKind
}

/** The four reference models. */
export const REFERENCE_MODELS: ReadonlyArray<ModelEntry> = [
  { id: "ref-chat", kind: "chat" },
  { id: "ref-embed", kind: "embeddings" },
  { id: "ref-forecast", kind: "forecasts" },
  { id: "ref-image", kind: "images" }
]

/** The endpoint serving each kind of model. */
export const ENDPOINTS: Readonly<Record<ModelKind, string>> = {
  chat: "/v1/chat/completions",
  embeddings: "/v1/embeddings",
  forecasts: "/v1/forecasts",
  images: "/v1/images/generations"
}

/** `created` of every model in /v1/models (2026-01-01T00:00:00Z). */
export const MODELS_CREATED = 1767225600
export const OWNED_BY = "ref-lab"
const MAX_BODY_BYTES = 16 * 1024 * 1024

export interface ReferenceMachineOptions {
  /** TCP port; 0 (default) picks a free one. */
  readonly port?: number
  /** Interface to listen on; default 127.0.0.1. */
  readonly host?: string
  /**
   * The models served: reference ids ("ref-chat", ...) or {id, kind} to serve a model of that
   * kind under another id. Default: the four reference models.
   */
  readonly models?: ReadonlyArray<string | ModelEntry>
  /** Enables the `POST /_control` and `GET /_control` endpoints. Default false. */
  readonly faults?: boolean
  /** Fault settings at start (also without `faults: true`). */
  readonly initialFaults?: Partial<FaultSettings>
  /** Shorthand for initialFaults.token_delay_ms: a delay between stream chunks. */
  readonly tokenDelayMs?: number
  /** An id reported by /health. Default "reference-machine". */
  readonly id?: string
  /**
   * Bodies above this many bytes are refused by resetting the connection, unanswered (as a
   * proxy in front of a real machine may do). Default 16 MiB.
   */
  readonly maxBodyBytes?: number
}

export interface FaultControls {
  readonly get: () => FaultSettings
  /** Merges a patch into the settings and returns them. */
  readonly set: (patch: Partial<FaultSettings>) => FaultSettings
  /** Back to the defaults (and the start options' tokenDelayMs/initialFaults are forgotten). */
  readonly reset: () => FaultSettings
}

export interface MachineStats {
  /** Requests received, by "METHOD /path" (the control endpoint excluded). */
  readonly requests: Readonly<Record<string, number>>
  /** Inference requests answered successfully, by model id. */
  readonly served: Readonly<Record<string, number>>
  /** Streams whose connection was dropped by the drop_after_chunks fault. */
  readonly dropped: number
}

export interface ReferenceMachine {
  /** The OpenAI base URL, `http://host:port/v1`. */
  readonly url: string
  /** `http://host:port`. */
  readonly origin: string
  readonly port: number
  readonly models: ReadonlyArray<ModelEntry>
  readonly faults: FaultControls
  readonly stats: () => MachineStats
  /** Stops listening and closes every connection. */
  readonly close: () => Promise<void>
}

const resolveModels = (models: ReadonlyArray<string | ModelEntry> | undefined): Array<ModelEntry> => {
  if (models === undefined) return [...REFERENCE_MODELS]
  return models.map((m) => {
    if (typeof m !== "string") return m
    const ref = REFERENCE_MODELS.find((r) => r.id === m)
    if (ref === undefined) {
      throw new Error(`unknown reference model ${m}; give {id, kind} to serve another id`)
    }
    return ref
  })
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

const readBody = (req: Http.IncomingMessage, maxBytes: number = MAX_BODY_BYTES): Promise<string> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    let size = 0
    req.on("data", (c: Buffer) => {
      size += c.length
      if (size > maxBytes) {
        reject(new ApiError(413, "request_too_large", `request bodies are limited to ${maxBytes} bytes`))
        req.destroy()
        return
      }
      chunks.push(c)
    })
    req.on("end", () => resolve(chunks.length === 1 ? chunks[0]!.toString("utf8") : Buffer.concat(chunks).toString("utf8")))
    req.on("error", reject)
  })

const sendJson = (res: Http.ServerResponse, status: number, body: unknown, requestId: string): void => {
  const text = JSON.stringify(body)
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
    "x-request-id": requestId
  })
  res.end(text)
}

/** Starts a reference machine; resolves once it listens. */
export const startReferenceMachine = async (options: ReferenceMachineOptions = {}): Promise<ReferenceMachine> => {
  const host = options.host ?? "127.0.0.1"
  const models = resolveModels(options.models)
  const byId = new Map(models.map((m) => [m.id, m]))
  const machineId = options.id ?? "reference-machine"
  const startFaults = (): FaultSettings => ({
    ...DEFAULT_FAULTS,
    ...(options.tokenDelayMs === undefined ? {} : { token_delay_ms: options.tokenDelayMs }),
    ...options.initialFaults
  })
  let faults: FaultSettings = startFaults()
  const faultControls: FaultControls = {
    get: () => faults,
    set: (patch) => (faults = { ...faults, ...patch }),
    reset: () => (faults = { ...DEFAULT_FAULTS })
  }
  const requests: Record<string, number> = {}
  const served: Record<string, number> = {}
  let dropped = 0
  let counter = 0
  const stamp = Date.now().toString(36)

  const servingNow = (): Array<ModelEntry> =>
    faults.serving === null ? models : models.filter((m) => faults.serving!.includes(m.id))

  const modelObject = (m: ModelEntry) => ({ id: m.id, object: "model", created: MODELS_CREATED, owned_by: OWNED_BY })

  const health = (res: Http.ServerResponse, rid: string) => {
    const ids = servingNow().map((m) => m.id)
    if (faults.healthy) sendJson(res, 200, { status: "ok", id: machineId, models: ids }, rid)
    else sendJson(res, 503, { status: "unhealthy", id: machineId, models: ids }, rid)
  }

  /** The model named by the body, checked against the endpoint's kind and the serving list. */
  const modelFor = (body: Record<string, unknown>, kind: ModelKind): ModelEntry => {
    const id = body.model
    if (id === undefined || id === null || id === "") {
      throw new ApiError(400, "missing_model", "the body needs a model", "model")
    }
    if (typeof id !== "string") throw new ApiError(400, "invalid_input", "model must be a string", "model")
    const m = byId.get(id)
    if (m === undefined) {
      throw new ApiError(404, "model_not_found", `The model \`${id}\` does not exist on this machine.`, "model")
    }
    if (m.kind !== kind) {
      throw new ApiError(400, "wrong_endpoint", `The model ${id} is served at POST ${ENDPOINTS[m.kind]}.`, "model")
    }
    if (faults.serving !== null && !faults.serving.includes(id)) {
      throw new ApiError(503, "no_capacity", `The model ${id} is not serving on this machine now.`, "model")
    }
    return m
  }

  const chatChunk = (
    id: string,
    created: number,
    model: string,
    delta: Record<string, unknown>,
    finish: string | null,
    includeUsage: boolean
  ) => {
    const c: Record<string, unknown> = {
      id,
      object: "chat.completion.chunk",
      created,
      model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }]
    }
    if (includeUsage) c.usage = null
    return c
  }

  const streamChat = (
    res: Http.ServerResponse,
    req: ChatRequest,
    out: ChatOutcome,
    rid: string
  ): Promise<void> => {
    const id = `chatcmpl-${stamp}${(++counter).toString(36)}`
    const created = Math.floor(Date.now() / 1000)
    const inc = req.includeUsage
    const events: Array<Record<string, unknown>> = []
    if (out._tag === "text") {
      events.push(chatChunk(id, created, req.model, { role: "assistant", content: "" }, null, inc))
      if (out.reasoning !== undefined) {
        for (const p of streamPieces(out.reasoning)) {
          events.push(chatChunk(id, created, req.model, { reasoning_content: p }, null, inc))
        }
      }
      for (const p of streamPieces(out.content)) {
        events.push(chatChunk(id, created, req.model, { content: p }, null, inc))
      }
    } else {
      if (out.reasoning !== undefined) {
        events.push(chatChunk(id, created, req.model, { role: "assistant", content: null }, null, inc))
        for (const p of streamPieces(out.reasoning)) {
          events.push(chatChunk(id, created, req.model, { reasoning_content: p }, null, inc))
        }
      }
      events.push(
        chatChunk(
          id,
          created,
          req.model,
          {
            ...(out.reasoning === undefined ? { role: "assistant", content: null } : {}),
            tool_calls: [{ index: 0, id: out.id, type: "function", function: { name: out.name, arguments: "" } }]
          },
          null,
          inc
        )
      )
      for (const p of argumentPieces(out.arguments)) {
        events.push(chatChunk(id, created, req.model, { tool_calls: [{ index: 0, function: { arguments: p } }] }, null, inc))
      }
    }
    events.push(chatChunk(id, created, req.model, {}, out.finishReason, inc))
    const usage = inc ? reportUsage(faults.usage, out.usage) : undefined
    if (usage !== undefined) {
      events.push({ id, object: "chat.completion.chunk", created, model: req.model, choices: [], usage })
    }
    const dropAfter = faults.drop_after_chunks
    const delay = faults.token_delay_ms
    const firstDelay = faults.first_chunk_delay_ms

    res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
      connection: "keep-alive",
      "x-request-id": rid
    })
    res.flushHeaders()
    return new Promise<void>((resolve) => {
      let i = 0
      let closed = false
      res.on("close", () => {
        closed = true
        resolve()
      })
      const drop = () => {
        dropped++
        closed = true
        // Destroy once what was written has reached the kernel, so the client sees exactly K events.
        const socket = res.socket
        if (socket === null) return resolve()
        socket.write("", () => {
          socket.destroy()
          resolve()
        })
      }
      const step = () => {
        if (closed) return
        if (dropAfter !== null && i >= dropAfter) return drop()
        if (i < events.length) {
          res.write(`data: ${JSON.stringify(events[i++])}\n\n`)
          if (delay > 0) setTimeout(step, delay)
          else step()
          return
        }
        served[req.model] = (served[req.model] ?? 0) + 1
        res.end("data: [DONE]\n\n")
        resolve()
      }
      if (firstDelay > 0) setTimeout(step, firstDelay)
      else step()
    })
  }

  const chatCompletion = (req: ChatRequest, out: ChatOutcome) => {
    const message: Record<string, unknown> = out._tag === "text"
      ? { role: "assistant", content: out.content, refusal: null }
      : {
        role: "assistant",
        content: null,
        refusal: null,
        tool_calls: [{ id: out.id, type: "function", function: { name: out.name, arguments: out.arguments } }]
      }
    if (out.reasoning !== undefined) message.reasoning_content = out.reasoning
    const body: Record<string, unknown> = {
      id: `chatcmpl-${stamp}${(++counter).toString(36)}`,
      object: "chat.completion",
      created: Math.floor(Date.now() / 1000),
      model: req.model,
      choices: [{ index: 0, message, logprobs: null, finish_reason: out.finishReason }]
    }
    const usage = reportUsage(faults.usage, out.usage)
    if (usage !== undefined) body.usage = usage
    return body
  }

  const parseJsonBody = (text: string): Record<string, unknown> => {
    let body: unknown
    try {
      body = JSON.parse(text)
    } catch {
      throw new ApiError(400, "invalid_json", "The body is not valid JSON.")
    }
    if (!isRecord(body)) throw new ApiError(400, "invalid_json", "The body must be a JSON object.")
    return body
  }

  const inference = async (
    kind: ModelKind,
    req: Http.IncomingMessage,
    res: Http.ServerResponse,
    rid: string
  ): Promise<void> => {
    const text = await readBody(req, options.maxBodyBytes)
    if (faults.latency_ms > 0) await sleep(faults.latency_ms)
    if (faults.fail_next > 0) {
      faults = { ...faults, fail_next: faults.fail_next - 1 }
      if (faults.fail_kind === "reset") {
        req.socket.destroy()
        return
      }
      const status = faults.fail_status
      throw status === 503
        ? new ApiError(503, "no_capacity", "Injected fault: no capacity.")
        : new ApiError(status, status >= 500 ? "server_error" : "injected_fault", "Injected fault.")
    }
    const body = parseJsonBody(text)
    const model = modelFor(body, kind)
    switch (kind) {
      case "chat": {
        const chat = parseChatRequest(body, model.id)
        const out = runChat(chat)
        if (chat.stream) return streamChat(res, chat, out, rid)
        sendJson(res, 200, chatCompletion(chat, out), rid)
        break
      }
      case "embeddings": {
        const out = runEmbeddings(parseEmbeddingRequest(body, model.id))
        if (faults.usage !== "honest") {
          const u = reportUsage(faults.usage, out.usage as { prompt_tokens: number; total_tokens: number })
          if (u === undefined) delete out.usage
          else out.usage = u
        }
        sendJson(res, 200, out, rid)
        break
      }
      case "forecasts":
        sendJson(res, 200, runForecast(parseForecastRequest(body, model.id)), rid)
        break
      case "images":
        sendJson(res, 200, runImages(parseImageRequest(body, model.id)), rid)
        break
    }
    served[model.id] = (served[model.id] ?? 0) + 1
  }

  const control = async (req: Http.IncomingMessage, res: Http.ServerResponse, rid: string): Promise<void> => {
    if (req.method === "POST") {
      const body = parseJsonBody(await readBody(req))
      const patch = parseFaultPatch(body)
      if (body.reset === true) faultControls.reset()
      faultControls.set(patch)
    }
    // The process's CPU time lets a benchmark compute the machine's CPU per request.
    const cpu = process.cpuUsage()
    sendJson(res, 200, { faults, stats: stats(), process: { cpu_user_us: cpu.user, cpu_system_us: cpu.system } }, rid)
  }

  const stats = (): MachineStats => ({ requests: { ...requests }, served: { ...served }, dropped })

  const route = async (req: Http.IncomingMessage, res: Http.ServerResponse, rid: string): Promise<void> => {
    const url = req.url ?? "/"
    const q = url.indexOf("?")
    const path = q < 0 ? url : url.slice(0, q)
    const method = req.method ?? "GET"
    if (path === "/_control" && options.faults === true) {
      if (method !== "GET" && method !== "POST") throw new ApiError(405, "method_not_allowed", "Use GET or POST.")
      return control(req, res, rid)
    }
    const key = `${method} ${path}`
    requests[key] = (requests[key] ?? 0) + 1
    const kind: ModelKind | undefined = path === "/v1/chat/completions"
      ? "chat"
      : path === "/v1/embeddings"
      ? "embeddings"
      : path === "/v1/forecasts" || path === "/forecasts"
      ? "forecasts"
      : path === "/v1/images/generations"
      ? "images"
      : undefined
    if (kind !== undefined) {
      if (method !== "POST") throw new ApiError(405, "method_not_allowed", `Use POST ${path}.`)
      return inference(kind, req, res, rid)
    }
    if (method !== "GET") throw new ApiError(404, "unknown_url", `Unknown request URL: ${method} ${path}.`)
    if (faults.latency_ms > 0) await sleep(faults.latency_ms)
    if (path === "/health" || path === "/v1/health") return health(res, rid)
    if (path === "/v1/models") {
      return sendJson(res, 200, { object: "list", data: servingNow().map(modelObject) }, rid)
    }
    if (path.startsWith("/v1/models/")) {
      const id = decodeURIComponent(path.slice("/v1/models/".length))
      const m = servingNow().find((x) => x.id === id)
      if (m === undefined) throw new ApiError(404, "model_not_found", `The model \`${id}\` does not exist on this machine.`, "model")
      return sendJson(res, 200, modelObject(m), rid)
    }
    throw new ApiError(404, "unknown_url", `Unknown request URL: ${method} ${path}.`)
  }

  const server = Http.createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
    const rid = `req_${stamp}${(++counter).toString(36)}`
    route(req, res, rid).catch((e: unknown) => {
      const err = e instanceof ApiError ? e : new ApiError(500, "server_error", e instanceof Error ? e.message : String(e))
      if (res.headersSent) {
        res.destroy()
        return
      }
      if (req.socket.destroyed) return
      sendJson(res, err.status, err.toJSON(), rid)
    })
  })

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject)
    server.listen(options.port ?? 0, host, () => {
      server.off("error", reject)
      resolve()
    })
  })
  const port = (server.address() as AddressInfo).port
  const urlHost = host.includes(":") ? `[${host}]` : host
  const origin = `http://${urlHost}:${port}`
  return {
    url: `${origin}/v1`,
    origin,
    port,
    models,
    faults: faultControls,
    stats,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
  }
}

/** The machine as a scoped resource: started on acquire, closed when the scope closes. */
export const scoped = (options: ReferenceMachineOptions = {}): Effect.Effect<ReferenceMachine, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.promise(() => startReferenceMachine(options)),
    (m) => Effect.promise(() => m.close())
  )
