/**
 * The graceful drain (docs/operations.md "Shutdown"), on the real server process (main.ts) over a
 * PostgreSQL server: SIGTERM while a 25 s stream is in flight turns readiness to 503 at once, stops
 * taking new connections after the grace, lets the stream run to its [DONE] (past the 20 s Node
 * gives by default), bills it exactly once, and the process exits 0 by itself.
 */
import { startReferenceMachine, type ReferenceMachine } from "@model-platform/reference-machine/ReferenceMachine"
import { Effect } from "effect"
import * as fs from "node:fs"
import { request as httpRequest } from "node:http"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { CREDIT, ledgerRuntime, newAccounts, stateOf } from "./faultSupport.ts"
import { gatewayCatalogue, MACHINE_MODELS } from "./gatewaySupport.ts"
import { type MainProcess, startMain } from "./mainProcess.ts"
import { freshDatabaseUrl } from "./support.ts"

const serverUrl = process.env.TEST_DATABASE_URL

/** A request on a new connection (no keep-alive socket reused): its status, or the connection's error code. */
const onNewConnection = (url: string, route: string) =>
  new Promise<number | string>((resolve) => {
    const { hostname, port } = new URL(url)
    const req = httpRequest({ host: hostname, port, path: route, agent: false }, (res) => {
      res.resume()
      resolve(res.statusCode ?? 0)
    })
    req.on("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message))
    req.end()
  })

describe.skipIf(serverUrl === undefined)("SIGTERM drains the server (main.ts on PostgreSQL)", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "platform-drain-"))
  let machine: ReferenceMachine
  let server: MainProcess
  let databaseUrl: string
  beforeAll(async () => {
    // 50 tokens 500 ms apart: a stream of about 25 s, longer than Node's default 20 s of grace.
    machine = await startReferenceMachine({ port: 0, id: "m-a", models: MACHINE_MODELS, tokenDelayMs: 500 })
    const catalogue = path.join(dir, "catalogue.json")
    fs.writeFileSync(catalogue, JSON.stringify(gatewayCatalogue([{ id: "m-a", url: machine.url, score: 1 }], { rpm: 100_000 })))
    databaseUrl = await freshDatabaseUrl(serverUrl!)
    server = await startMain({
      DATABASE_URL: databaseUrl,
      DATA_DIR: path.join(dir, "data"),
      CATALOGUE_FILE: catalogue,
      LOG_FORMAT: "json",
      SHUTDOWN_GRACE_S: "1.5",
      SHUTDOWN_TIMEOUT_S: "60"
    })
  }, 90_000)
  afterAll(async () => {
    server?.kill()
    await machine?.close()
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it("a stream in flight at SIGTERM completes, is billed once, and the process exits 0 by itself", async () => {
    const ledger = ledgerRuntime(databaseUrl)
    try {
      const [account] = await ledger.runPromise(newAccounts(1))
      const response = await fetch(`${server.url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: account!.auth, "content-type": "application/json" },
        body: JSON.stringify({ model: "ref-chat", stream: true, messages: [{ role: "user", content: "Count to 50." }] })
      })
      expect(response.status).toBe(200)
      const reader = response.body!.getReader()
      const decoder = new TextDecoder()
      let text = decoder.decode((await reader.read()).value)

      const signalled = Date.now()
      server.child.kill("SIGTERM")
      // Readiness turns 503 at once; liveness still answers; new connections are still taken.
      let ready: Response | undefined
      for (let i = 0; i < 20; i++) {
        ready = await fetch(`${server.url}/health/ready`)
        if (ready.status === 503) break
        await new Promise((r) => setTimeout(r, 25))
      }
      expect(ready!.status).toBe(503)
      expect(await ready!.json()).toEqual({ error: { code: "draining", message: expect.stringContaining("SIGTERM") } })
      expect(Date.now() - signalled).toBeLessThan(1_000)
      expect(await onNewConnection(server.url, "/health/live")).toBe(200)

      // After the grace, no new connection is taken; the stream goes on.
      await new Promise((r) => setTimeout(r, 2_000))
      expect(await onNewConnection(server.url, "/health/live")).toBe("ECONNREFUSED")

      for (;;) {
        const { done, value } = await reader.read()
        if (done) break
        text += decoder.decode(value, { stream: true })
      }
      expect(text).toContain("data: [DONE]")
      const content = text.split("\n").filter((l) => l.startsWith("data: {")).map((l) => JSON.parse(l.slice(6)))
        .map((chunk) => chunk.choices?.[0]?.delta?.content ?? "").join("")
      expect(content.trim().split(/\s+/)).toEqual(Array.from({ length: 50 }, (_, i) => String(i + 1)))

      // The process exits by itself, 0, once the stream is done and its metering written.
      const code = await Promise.race([server.exited, new Promise((r) => setTimeout(() => r("still running"), 30_000))])
      expect(code, server.output()).toBe(0)
      const logs = server.jsonLines().map((l) => String(l.message))
      expect(logs.some((m) => m.startsWith("SIGTERM: draining"))).toBe(true)

      // Billed once: one usage record, its credits the ledger's charge, nothing left held.
      const state = await ledger.runPromise(stateOf(account!.accountId))
      expect(state.records).toBe(1)
      expect(state.charged).toBeGreaterThan(0n)
      expect(state.recorded).toBe(state.charged)
      expect(state.held).toBe(0n)
      expect(state.available).toBe(CREDIT - state.charged)
    } finally {
      await ledger.dispose()
    }
  }, 120_000)
})
