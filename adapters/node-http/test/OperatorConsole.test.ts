/**
 * The operator console on the server as `./platform start` runs it (main.ts), driven by
 * `./platform admin …` (src/Admin.ts) with a key `admin new-key` made (docs/operations.md "The
 * operator console"): an operator finds an account, credits it with a reason, revokes a key and
 * reloads the catalogue (by the API and by SIGHUP) while a stream is in flight, which completes;
 * a catalogue that does not validate changes nothing; each action is in the audit log.
 */
import { startReferenceMachine, type ReferenceMachine } from "@model-platform/reference-machine/ReferenceMachine"
import { parseExposition } from "@model-platform/test-harness/Prometheus"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { gatewayCatalogue, MACHINE_MODELS } from "./gatewaySupport.ts"
import { type MainProcess, startMain } from "./mainProcess.ts"

const ADMIN = path.join(import.meta.dirname, "..", "src", "Admin.ts")

/** Runs `./platform admin <args>` (Admin.ts) with this environment: its exit code and output. */
const admin = (env: Record<string, string>, ...args: Array<string>) =>
  new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [ADMIN, ...args], { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()))
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()))
    child.on("exit", (code) => resolve({ code, stdout, stderr }))
  })

describe("./platform admin against main.ts", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "platform-operator-"))
  const catalogueFile = path.join(dir, "catalogue.json")
  let machine: ReferenceMachine
  let server: MainProcess
  let env: Record<string, string>
  const writeCatalogue = (machines: ReadonlyArray<string>) =>
    fs.writeFileSync(catalogueFile, JSON.stringify(gatewayCatalogue(machines.map((id, i) => ({ id, url: machine.url, score: 1 - i / 10 })))))

  beforeAll(async () => {
    machine = await startReferenceMachine({ port: 0, id: "m-a", models: MACHINE_MODELS, tokenDelayMs: 150 })
    writeCatalogue(["m-a"])
    const made = await admin({}, "new-key", "ada")
    expect(made.code, made.stderr).toBe(0)
    const secret = /^\s+(mpo_[A-Za-z0-9_-]{43})$/m.exec(made.stdout)![1]!
    const entry = /^\s+(ada:[0-9a-f]{64})$/m.exec(made.stdout)![1]!
    server = await startMain({
      DATA_DIR: path.join(dir, "data"),
      CATALOGUE_FILE: catalogueFile,
      OPERATOR_KEYS: entry,
      SHUTDOWN_GRACE_S: "0.2"
    })
    env = { PLATFORM_URL: server.url, OPERATOR_KEY: secret }
  }, 90_000)
  afterAll(async () => {
    server?.kill()
    await machine?.close()
    fs.rmSync(dir, { recursive: true, force: true })
  })

  const json = async (...args: Array<string>) => {
    const run = await admin(env, ...args)
    expect(run.code, `${args.join(" ")}: ${run.stderr}`).toBe(0)
    return JSON.parse(run.stdout)
  }
  /**
   * GET /machines, sent again when its connection was reset: a reload can reset a request sent on
   * an idle keep-alive connection as the draining server closes it, and a client retries it
   * (docs/operations.md "Reloading the catalogue").
   */
  const machinesListed = async (): Promise<Array<string>> => {
    for (let attempt = 1; ; attempt++) {
      try {
        const listed = (await (await fetch(`${server.url}/machines`)).json()) as { data: Array<{ id: string }> }
        return listed.data.map((m) => m.id)
      } catch (error) {
        const code = (error as { cause?: { code?: string } }).cause?.code
        if (attempt === 3 || (code !== "ECONNRESET" && code !== "UND_ERR_SOCKET")) throw error
      }
    }
  }

  it("finds the owner's account, credits it with a reason, revokes a key; each action is audited", async () => {
    const owner = /mpk_[A-Za-z0-9_-]{43}/.exec(server.output())![0]
    const found = await json("find", "--email", "owner@localhost")
    expect(found.data).toHaveLength(1)
    const accountId = found.data[0].id as string

    const credited = await json("credit", accountId, "25", "--reason", "refund for a broken stream")
    expect(credited).toMatchObject({ duplicate: false, entry: { amount_credits: 25 } })
    const view = await json("account", accountId)
    expect(view.balance.available_credits).toBe(25)
    const credits = (await (await fetch(`${server.url}/credits`, { headers: { authorization: `Bearer ${owner}` } })).json()) as { total_credits: number }
    expect(credits.total_credits).toBe(25)

    const leaked = (await (await fetch(`${server.url}/keys`, {
      method: "POST",
      headers: { authorization: `Bearer ${owner}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "leaked", permissions: ["read"] })
    })).json()) as { id: string; secret: string }
    await json("revoke", accountId, leaked.id, "--reason", "pasted in a chat")
    expect((await fetch(`${server.url}/me`, { headers: { authorization: `Bearer ${leaked.secret}` } })).status).toBe(401)

    const log = (await json("audit")).data as Array<{ operator: string; action: string; reason: string }>
    expect(log.map((e) => [e.operator, e.action, e.reason])).toEqual([
      ["ada", "key_revoked", "pasted in a chat"],
      ["ada", "credit_adjustment", "refund for a broken stream"]
    ])
    // A refusal: exit 1 with the platform's message.
    const refused = await admin(env, "credit", accountId, "-3", "--reason", "oops")
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain("400 invalid_request")
    const stranger = await admin({ ...env, OPERATOR_KEY: owner }, "machines")
    expect(stranger.code).toBe(1)
    expect(stranger.stderr).toContain("401 invalid_operator_key")
  }, 60_000)

  it("reloads the catalogue while a stream is in flight, which completes; by SIGHUP too; a bad file changes nothing", async () => {
    const owner = /mpk_[A-Za-z0-9_-]{43}/.exec(server.output())![0]
    const scrape = async () => parseExposition(await (await fetch(`${server.url}/metrics`)).text())
      .value("http_server_request_duration_seconds_count", { http_route: "/machines", http_response_status_code: "200" }) ?? 0
    expect(await machinesListed()).toEqual(["m-a"])
    const before = await scrape()

    // A stream on the server in use (free-chat: the owner's credits are not needed).
    const response = await fetch(`${server.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${owner}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "free-chat", stream: true, messages: [{ role: "user", content: "Count to 20." }] })
    })
    expect(response.status).toBe(200)
    const streamed = response.text()

    writeCatalogue(["m-a", "m-b"])
    const reloaded = await json("reload")
    expect(reloaded).toMatchObject({ reloaded: true, before: { machines: ["m-a"] }, after: { machines: ["m-a", "m-b"] } })
    expect(await machinesListed()).toEqual(["m-a", "m-b"])
    // The stream begun before the reload runs to its end on the server that began it.
    const text = await streamed
    expect(text).toContain("data: [DONE]")
    const content = text.split("\n").filter((l) => l.startsWith("data: {")).map((l) => JSON.parse(l.slice(6)))
      .map((chunk) => chunk.choices?.[0]?.delta?.content ?? "").join("")
    expect(content.trim().split(/\s+/)).toHaveLength(20)
    // The metrics are the process's: the count goes on across the reload.
    expect(await scrape()).toBeGreaterThan(before)

    // A catalogue that does not validate: refused, nothing changes.
    fs.writeFileSync(catalogueFile, "{\"machines\": 3}")
    const bad = await admin(env, "reload")
    expect(bad.code).toBe(1)
    expect(bad.stderr).toContain("invalid_catalogue")
    expect(await machinesListed()).toEqual(["m-a", "m-b"])

    // SIGHUP reads it again.
    writeCatalogue(["m-a"])
    server.child.kill("SIGHUP")
    let listed: Array<string> = []
    for (let i = 0; i < 100; i++) {
      listed = await machinesListed()
      if (listed.length === 1) break
      await new Promise((r) => setTimeout(r, 100))
    }
    expect(listed).toEqual(["m-a"])

    const log = (await json("audit")).data as Array<{ action: string; after: { machines: Array<string> } }>
    expect(log.filter((e) => e.action === "catalogue_reloaded").map((e) => e.after.machines)).toEqual([["m-a", "m-b"]])

    // And the process still stops cleanly.
    server.child.kill("SIGTERM")
    expect(await Promise.race([server.exited, new Promise((r) => setTimeout(() => r("still running"), 30_000))])).toBe(0)
  }, 90_000)
})
