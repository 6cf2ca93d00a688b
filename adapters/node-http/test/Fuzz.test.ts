/**
 * The fuzz suite (test-harness FuzzSuite.ts) against the real Node server on the embedded Postgres
 * (PGlite), its machines pointing at a reference machine started here. Requests go over node:http
 * with the path as generated, so percent-encodings and dot segments reach the server untouched.
 */
import { FirstStart } from "@model-platform/core/accounts"
import { Gateway } from "@model-platform/core/gateway"
import { startReferenceMachine } from "@model-platform/reference-machine/ReferenceMachine"
import { FUZZ_MACHINE_MODELS, fuzzCatalogue } from "@model-platform/test-harness/FuzzCatalogue"
import { type FuzzShell, fuzzSuite, type RawAnswer, type RawRequest } from "@model-platform/test-harness/FuzzSuite"
import { Effect, Layer, ManagedRuntime } from "effect"
import { HttpServer } from "effect/http"
import * as Http from "node:http"
import { Database } from "@model-platform/postgres-stores/database"
import { PgPlatformStores } from "@model-platform/postgres-stores"
import { serverLayer } from "../src/Server.ts"

/** Sends a request over node:http as it is (no URL normalisation), on a keep-alive agent. */
export const rawHttp = (port: number) => {
  const agent = new Http.Agent({ keepAlive: true, maxSockets: 4 })
  const raw = (request: RawRequest): Promise<RawAnswer> =>
    new Promise((resolve, reject) => {
      const headers: Record<string, string> = {}
      for (const [name, value] of request.headers) headers[name] = value
      if (request.body !== undefined) headers["content-length"] = String(request.body.length)
      const req = Http.request({ host: "127.0.0.1", port, method: request.method, path: request.target, headers, agent }, (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (chunk: Buffer) => chunks.push(chunk))
        res.on("end", () => {
          const out: Record<string, string> = {}
          for (const [name, value] of Object.entries(res.headers)) out[name] = Array.isArray(value) ? value.join(", ") : String(value)
          resolve({ status: res.statusCode ?? 0, headers: out, body: Buffer.concat(chunks).toString("utf8") })
        })
        res.on("error", reject)
      })
      req.on("error", reject)
      req.end(request.body === undefined ? undefined : Buffer.from(request.body))
    })
  return { raw, close: () => agent.destroy() }
}

const startNodeFuzz = async (): Promise<FuzzShell> => {
  const machine = await startReferenceMachine({ port: 0, models: FUZZ_MACHINE_MODELS })
  const stores = PgPlatformStores.pipe(Layer.provide(Database.layer({ dataDir: Database.MEMORY })))
  const runtime = ManagedRuntime.make(
    serverLayer({ catalogue: fuzzCatalogue(machine.url), port: 0, host: "127.0.0.1", ownerEmail: "owner@test.local" }, stores)
  )
  const [server, owner] = await runtime.runPromise(Effect.all([HttpServer.HttpServer, FirstStart]))
  if (server.address._tag === "UnixPathAddress") throw new Error("expected a TCP address")
  const port = server.address.port
  const url = `http://127.0.0.1:${port}`
  const http = rawHttp(port)
  return {
    ownerSecret: owner?.key.secret ?? "",
    fetch: (path, init) => fetch(url + path, init),
    raw: http.raw,
    idle: () => runtime.runPromise(Effect.flatMap(Gateway, (gateway) => gateway.idle)),
    close: async () => {
      http.close()
      await runtime.dispose()
      await machine.close()
    }
  }
}

// 100 cases per endpoint by default: the whole CI run has a budget (FUZZ_RUNS for more).
fuzzSuite("node-http, embedded Postgres", startNodeFuzz, 100)
