/**
 * POST /v1/chat/completions served by a node:http server of the app's own (not the platform's
 * HttpApi server): core's gateway assembled from its area entries, its money on SQLite
 * (SqliteStores.ts: the ledger, keys, rate limits, usage and the gateway's store), the stores it
 * reads but this app does not keep (agents, plans, orders) in memory. Every call is admitted
 * (key, rpm, the cost bound reserved), forwarded to a machine of the catalogue serving the model
 * and metered into the SQLite database; the answers and errors are the platform's (`answerCall`).
 *
 *   node src/server.ts <catalogue.json> [database path] [port]
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import { readFileSync } from "node:fs"
import type { AddressInfo } from "node:net"
import { Effect, Layer, ManagedRuntime, Schema, Stream } from "effect"
import type { HttpServerResponse } from "effect/http"
import { Catalogue, CatalogueConfig } from "@model-platform/core/catalogue"
import { Gateway, MachineHttpLayer } from "@model-platform/core/gateway"
import { ApiKeys } from "@model-platform/core/keys"
import { inferenceBodyLimit } from "@model-platform/core/kernel"
import { Ledger } from "@model-platform/core/ledger"
import { ScopeTargetsFromPlans } from "@model-platform/core/plans"
import { answerCall, errorResponse } from "@model-platform/core/http"
import { AgentStoreMemory } from "@model-platform/memory-stores/MemoryAgentStore"
import { PlanStoreMemory } from "@model-platform/memory-stores/MemoryPlanStore"
import { OrderStoreMemory } from "@model-platform/memory-stores/MemoryOrderStore"
import { sqliteStores } from "./SqliteStores.ts"

/** The gateway and the services an app uses beside it (keys, ledger), over the SQLite stores at `path`. */
export const platformOn = (catalogue: CatalogueConfig, path: string) => {
  const stores = Layer.mergeAll(sqliteStores(path), AgentStoreMemory, PlanStoreMemory, OrderStoreMemory)
  const services = Layer.mergeAll(ApiKeys.layer, Ledger.layer).pipe(
    Layer.provide(ScopeTargetsFromPlans),
    Layer.provideMerge(Catalogue.layer(catalogue))
  )
  return Gateway.layer().pipe(
    Layer.provide(MachineHttpLayer),
    Layer.provideMerge(services),
    Layer.provideMerge(stores)
  )
}

const CHAT = "/v1/chat/completions"

/** The request's body as text, or undefined once it passed `limit` bytes. */
const readBody = (request: IncomingMessage, limit: number): Promise<string | undefined> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    let bytes = 0
    request.on("data", (chunk: Buffer) => {
      bytes += chunk.length
      if (bytes > limit) {
        request.removeAllListeners("data")
        request.pause()
        resolve(undefined)
      } else chunks.push(chunk)
    })
    request.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")))
    request.on("error", reject)
  })

/** Writes the platform's answer: a whole body, or server-sent events as they come. */
const send = async (
  nodeResponse: ServerResponse,
  response: HttpServerResponse.HttpServerResponse
): Promise<void> => {
  const body = response.body
  const headers: Record<string, string> = { ...response.headers }
  if ((body._tag === "Uint8Array" || body._tag === "Stream") && body.contentType !== undefined) headers["content-type"] ??= body.contentType
  nodeResponse.writeHead(response.status, headers)
  if (body._tag === "Uint8Array") return void nodeResponse.end(body.body)
  if (body._tag !== "Stream") return void nodeResponse.end()
  // A client reading slower than the stream comes holds the next chunk back (the gateway buffers
  // and drains the machine meanwhile: docs/gateway.md "Streaming"); a client gone ends the writing.
  const writable = () =>
    new Promise<void>((resolve) => {
      const done = () => {
        nodeResponse.off("drain", done)
        nodeResponse.off("close", done)
        resolve()
      }
      nodeResponse.on("drain", done)
      nodeResponse.on("close", done)
    })
  await Effect.runPromise(Stream.runForEach(body.stream, (chunk) =>
    nodeResponse.destroyed || nodeResponse.write(chunk) ? Effect.void : Effect.promise(writable)).pipe(Effect.orDie))
  nodeResponse.end()
}

export interface RunningServer {
  /** http://127.0.0.1:<port> */
  readonly url: string
  /** The assembled services, to seed accounts and read balances with. */
  readonly runtime: ManagedRuntime.ManagedRuntime<Layer.Success<ReturnType<typeof platformOn>>, never>
  readonly close: () => Promise<void>
}

/** Listens on `port` (0: any free one) on 127.0.0.1. */
export const startServer = async (catalogue: CatalogueConfig, path: string, port = 0): Promise<RunningServer> => {
  const runtime = ManagedRuntime.make(platformOn(catalogue, path))
  const gateway = await runtime.runPromise(Effect.gen(function*() {
    return yield* Gateway
  }))
  const limit = inferenceBodyLimit(catalogue)
  const answer = async (request: IncomingMessage, nodeResponse: ServerResponse) => {
    const path = (request.url ?? "").split("?")[0]
    if (path !== CHAT) return send(nodeResponse, errorResponse(path ?? "", 404, `No route for ${request.method} ${path}.`, "not_found"))
    if (request.method !== "POST") {
      return send(nodeResponse, errorResponse(CHAT, 405, `${CHAT} takes POST.`, "method_not_allowed"))
    }
    const text = await readBody(request, limit)
    if (text === undefined) {
      nodeResponse.once("finish", () => request.socket.destroySoon())
      return send(nodeResponse, errorResponse(CHAT, 413, `The request body is larger than ${limit} bytes.`, "payload_too_large"))
    }
    const authorization = request.headers["authorization"]
    return send(nodeResponse, await runtime.runPromise(answerCall(gateway, CHAT, authorization, text)))
  }
  const server: Server = createServer((request, nodeResponse) => {
    answer(request, nodeResponse).catch(() => {
      // answerCall answers every failure itself; what is left is a socket gone away mid-answer.
      if (!nodeResponse.headersSent) nodeResponse.writeHead(500)
      nodeResponse.end()
    })
  })
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    runtime,
    close: async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()))
      // Waits for the calls still metering, then closes the database.
      await runtime.runPromise(gateway.idle)
      await runtime.dispose()
    }
  }
}

if (import.meta.main) {
  const [cataloguePath, database = "platform.db", port = "8080"] = process.argv.slice(2)
  if (cataloguePath === undefined) throw new Error("usage: node src/server.ts <catalogue.json> [database path] [port]")
  const catalogue = Schema.decodeUnknownSync(CatalogueConfig)(JSON.parse(readFileSync(cataloguePath, "utf8")))
  const running = await startServer(catalogue, database, Number(port))
  console.log(`POST ${running.url}${CHAT}`)
}
