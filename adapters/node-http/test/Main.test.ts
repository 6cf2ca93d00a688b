/**
 * The server as a user starts it (`./platform start` runs main.ts): the first start prints the owner
 * key once, with a one-time link that gives the owner account a passkey, the key works, the owner's
 * identity is ready, and everything survives a restart on the same data directory.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"

const MAIN = path.join(import.meta.dirname, "..", "src", "main.ts")

interface Started {
  readonly child: ChildProcess
  readonly url: string
  readonly output: () => string
}

const start = (dataDir: string): Promise<Started> =>
  new Promise((resolve, reject) => {
    const { DATABASE_URL: _ignored, ...env } = process.env
    const child = spawn(process.execPath, [MAIN], {
      env: { ...env, PORT: "0", DATA_DIR: dataDir },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let output = ""
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${output}`)), 45_000)
    const onData = (chunk: Buffer) => {
      output += chunk.toString()
      const match = /listening on (http:\/\/\S+)/.exec(output)
      // The key, when there is one, is printed right after the listening line.
      if (match !== null && (output.includes("Try: curl") || !output.includes("First start"))) {
        setTimeout(() => {
          clearTimeout(timer)
          resolve({ child, url: match[1]!.replace(/\/$/, ""), output: () => output })
        }, 50)
      }
    }
    child.stdout!.on("data", onData)
    child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()))
    child.on("exit", (code) => reject(new Error(`server exited with ${code}:\n${output}`)))
  })

const stop = (started: Started) =>
  new Promise<void>((resolve) => {
    started.child.removeAllListeners("exit")
    started.child.on("exit", () => resolve())
    started.child.kill("SIGTERM")
  })

describe("./platform start (main.ts)", () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "platform-main-"))
  afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }))

  it("prints the owner key once, and data survives a restart", async () => {
    const first = await start(dataDir)
    const secret = /^\s+(mpk_[A-Za-z0-9_-]{43})$/m.exec(first.output())?.[1]
    const auth = { authorization: `Bearer ${secret}` }
    let survivor: { id: string; secret: string }
    // Stopped whatever happens: a server left running would hold the data directory.
    try {
      expect(secret, first.output()).toBeDefined()
      const me = await fetch(`${first.url}/me`, { headers: auth })
      expect(me.status).toBe(200)
      // The owner is a full account: its identity is made at first start (no passkey yet), and a
      // one-time link to attach one is printed beside the key.
      const identity = await (await fetch(`${first.url}/identity`, { headers: auth })).json()
      expect(identity).toMatchObject({ state: "ready", did: expect.stringMatching(/^did:svc:human:acct_/), passkeys: 0, can_send: false })
      const claimUrl = /^\s+(http:\/\/localhost:\d+\/accounts\/claim\?token=[\w-]{43})$/m.exec(first.output())?.[1]
      expect(claimUrl, first.output()).toBeDefined()
      const claimPage = await fetch(claimUrl!)
      expect(claimPage.status).toBe(200)
      expect(await claimPage.text()).toContain(`id="claim"`)
      const created = await fetch(`${first.url}/keys`, {
        method: "POST",
        headers: { ...auth, "content-type": "application/json" },
        body: JSON.stringify({ name: "survivor", permissions: ["read"] })
      })
      expect(created.status).toBe(200)
      survivor = (await created.json()) as { id: string; secret: string }
      const models = await fetch(`${first.url}/models`)
      expect(((await models.json()) as { data: Array<unknown> }).data.length).toBeGreaterThan(0)
    } finally {
      await stop(first)
    }

    const second = await start(dataDir)
    try {
      expect(second.output()).not.toContain("First start")
      expect(second.output()).not.toMatch(/mpk_[A-Za-z0-9_-]{43}/)
      expect(second.output()).not.toContain("/claim?token=")
      expect((await fetch(`${second.url}/me`, { headers: auth })).status).toBe(200)
      const survivorMe = await fetch(`${second.url}/me`, { headers: { authorization: `Bearer ${survivor.secret}` } })
      expect(survivorMe.status).toBe(200)
      const keys = (await (await fetch(`${second.url}/keys`, { headers: auth })).json()) as { data: Array<{ id: string }> }
      expect(keys.data.map((k) => k.id)).toContain(survivor.id)
    } finally {
      await stop(second)
    }
  }, 120_000)

  it("refuses a second server on the same data directory", async () => {
    const first = await start(dataDir)
    try {
      await expect(start(dataDir)).rejects.toThrow(/lock|held|another/i)
    } finally {
      await stop(first)
    }
  }, 120_000)
})
