/**
 * The server as `./platform start` runs it (main.ts) with LOG_FORMAT=json: every line it writes
 * is a JSON object, one access line per request with its request id, route template, status,
 * duration and account, never a key, a header or a body (docs/operations.md "Logs"); and the
 * probes answer on the embedded Postgres.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type MainProcess, startMain } from "./mainProcess.ts"

describe("main.ts with LOG_FORMAT=json", () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "platform-ops-"))
  let server: MainProcess
  let secret: string
  beforeAll(async () => {
    // WORKERS=2 on the embedded database: one process, which says so (docs/operations.md "Several processes").
    server = await startMain({ DATA_DIR: dataDir, LOG_FORMAT: "json", LOG_LEVEL: "info", WORKERS: "2" })
    secret = /mpk_[A-Za-z0-9_-]{43}/.exec(server.output())![0]
  }, 90_000)
  afterAll(async () => {
    server?.kill()
    await server?.exited
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  const accessLine = async (id: string) => {
    // The line is written once the answer is sent: give the process a moment.
    for (let i = 0; i < 50; i++) {
      const lines = server.jsonLines().filter((l) => l.message === "request" && l.request_id === id)
      if (lines.length > 0) return lines
      await new Promise((r) => setTimeout(r, 20))
    }
    return []
  }

  it("asked for 2 workers on the embedded database, it serves from one process and says so", () => {
    const warning = server.jsonLines().find((l) => l.level === "warn" && String(l.message).includes("embedded database serves one process"))
    expect(warning?.message).toContain("Set DATABASE_URL")
    expect(server.output()).not.toMatch(/worker processes \(pids/)
  })

  it("the probes answer on the embedded Postgres", async () => {
    expect((await fetch(`${server.url}/health/live`)).status).toBe(200)
    const ready = await fetch(`${server.url}/health/ready`)
    expect(ready.status, await ready.clone().text()).toBe(200)
  })

  it("one access line per request: its request id, method, route template, status, duration, account; no secret", async () => {
    const auth = { authorization: `Bearer ${secret}` }
    const me = await fetch(`${server.url}/me`, { headers: { ...auth, "x-request-id": "ops-me-1" } })
    expect(me.status).toBe(200)
    const account = ((await me.json()) as { id: string }).id
    const gone = await fetch(`${server.url}/keys/key_doesnotexist?token=query-secret`, {
      method: "DELETE",
      headers: { ...auth, "x-request-id": "ops-del-1" }
    })
    expect(gone.status).toBe(404)
    const anonymous = await fetch(`${server.url}/models`)
    const anonymousId = anonymous.headers.get("x-request-id")!

    const [meLine] = await accessLine("ops-me-1")
    expect(meLine).toMatchObject({ level: "info", message: "request", method: "GET", route: "/me", status: 200, account_id: account })
    expect(meLine!.duration_ms).toEqual(expect.any(Number))
    expect(meLine!.time).toEqual(expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/))
    const delLines = await accessLine("ops-del-1")
    expect(delLines).toHaveLength(1)
    // The route's template: neither the id in the path nor the query a client wrote.
    expect(delLines[0]).toMatchObject({ method: "DELETE", route: "/keys/:id", status: 404, account_id: account })
    const [modelsLine] = await accessLine(anonymousId)
    expect(modelsLine).toMatchObject({ route: "/models", status: 200 })
    expect(modelsLine!.account_id).toBeUndefined()

    const lines = server.jsonLines()
    const text = JSON.stringify(lines.filter((l) => l.message === "request"))
    expect(text).not.toContain(secret)
    expect(text).not.toContain("Bearer")
    expect(text).not.toContain("query-secret")
    expect(text).not.toContain("key_doesnotexist")
  })

  it("an inference call (answered by the plain /v1 listener) has its request id, access line and HTTP metric", async () => {
    const auth = { authorization: `Bearer ${secret}` }
    const account = ((await (await fetch(`${server.url}/me`, { headers: auth })).json()) as { id: string }).id
    const call = await fetch(`${server.url}/v1/chat/completions`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json", "x-request-id": "ops-v1-1" },
      body: JSON.stringify({ model: "no-such-model", messages: [{ role: "user", content: "hi" }] })
    })
    expect(call.headers.get("x-request-id")).toBe("ops-v1-1")
    const body = (await call.json()) as { error: { type: string; code: string } }
    expect(call.status).toBeGreaterThanOrEqual(400)
    expect(body.error).toMatchObject({ type: expect.any(String), code: expect.any(String) })
    const lines = await accessLine("ops-v1-1")
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatchObject({ method: "POST", route: "/v1/chat/completions", status: call.status, account_id: account })
    const metrics = await (await fetch(`${server.url}/metrics`)).text()
    expect(metrics).toMatch(
      new RegExp(`http_server_request_duration_seconds_count\\{[^}]*http_route="/v1/chat/completions"[^}]*http_response_status_code="${call.status}"`)
    )
  })

  it("every line it wrote is a JSON object (its announcements too); probes write no access line at info", async () => {
    const probe = await fetch(`${server.url}/health/live`)
    const probeId = probe.headers.get("x-request-id")!
    await new Promise((r) => setTimeout(r, 100))
    const lines = server.output().split("\n").filter((l) => l.trim() !== "")
    for (const line of lines) expect(() => JSON.parse(line), line).not.toThrow()
    expect(server.jsonLines().some((l) => String(l.message).includes("listening on"))).toBe(true)
    expect(server.jsonLines().filter((l) => l.request_id === probeId)).toEqual([])
  })
})
