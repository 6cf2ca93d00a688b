/**
 * The server as a user starts it (`./platform start` bundles main.ts, scripts/bundle.ts, and runs
 * the bundle): the first start prints the owner key once, with a one-time link that gives the owner
 * account a passkey, the key works, the owner's identity is ready, and everything survives a
 * restart on the same data directory, from the sources (main.ts) as well.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import { request as httpRequest } from "node:http"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { serverBundle } from "./serverBundle.ts"

const MAIN = path.join(import.meta.dirname, "..", "src", "main.ts")
/** What `./platform start` runs (serverBundle.ts, in beforeAll): it starts in a fraction of the sources' time. */
let bundle = ""

interface Started {
  readonly child: ChildProcess
  readonly url: string
  readonly output: () => string
}

const start = (dataDir: string, extraEnv: Record<string, string> = {}, entry = bundle): Promise<Started> =>
  new Promise((resolve, reject) => {
    const { DATABASE_URL: _ignored, ...env } = process.env
    const child = spawn(process.execPath, [entry], {
      env: { ...env, PORT: "0", DATA_DIR: dataDir, ...extraEnv },
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

/** Runs main.ts with `extraEnv` until it exits by itself: its exit code and output. */
const runToExit = (extraEnv: Record<string, string>, entry = bundle): Promise<{ readonly code: number | null; readonly output: string }> =>
  new Promise((resolve, reject) => {
    const { DATABASE_URL: _ignored, PUBLIC_URL: _unset, ...env } = process.env
    const child = spawn(process.execPath, [entry], { env: { ...env, PORT: "0", ...extraEnv }, stdio: ["ignore", "pipe", "pipe"] })
    let output = ""
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      reject(new Error(`server did not exit:\n${output}`))
    }, 45_000)
    child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()))
    child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()))
    child.on("exit", (code) => {
      clearTimeout(timer)
      resolve({ code, output })
    })
  })

const stop = (started: Started) =>
  new Promise<void>((resolve) => {
    started.child.removeAllListeners("exit")
    started.child.on("exit", () => resolve())
    started.child.kill("SIGTERM")
  })

describe("./platform start (main.ts)", () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "platform-main-"))
  beforeAll(async () => {
    bundle = await serverBundle()
  }, 60_000)
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

    const second = await start(dataDir, {}, MAIN)
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

  it("refuses to listen on a non-loopback HOST without PUBLIC_URL, and says what to set", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "platform-main-host-"))
    try {
      for (const host of ["0.0.0.0", "::", "192.0.2.10"]) {
        const refused = await runToExit({ HOST: host, DATA_DIR: dir })
        expect(refused.code, refused.output).not.toBe(0)
        expect(refused.output).toContain(`HOST is ${JSON.stringify(host)}`)
        expect(refused.output).toContain("Set PUBLIC_URL")
        expect(refused.output).not.toContain("listening on")
        // Refused before anything was opened: no database, no owner key.
        expect(refused.output).not.toMatch(/mpk_[A-Za-z0-9_-]{43}/)
      }
      const malformed = await runToExit({ HOST: "0.0.0.0", PUBLIC_URL: "platform.example.com", DATA_DIR: dir })
      expect(malformed.code, malformed.output).not.toBe(0)
      expect(malformed.output).toContain("PUBLIC_URL must be an absolute http(s) URL")
      expect(fs.readdirSync(dir)).toEqual([])
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  }, 120_000)

  it("listens on a non-loopback HOST once PUBLIC_URL is set, and builds its links on it", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "platform-main-public-"))
    const started = await start(dir, { HOST: "0.0.0.0", PUBLIC_URL: "https://platform.example.com" })
    try {
      const secret = /^\s+(mpk_[A-Za-z0-9_-]{43})$/m.exec(started.output())?.[1]
      const url = started.url.replace("0.0.0.0", "127.0.0.1")
      const headers = { authorization: `Bearer ${secret}`, "content-type": "application/json" }
      const order = await fetch(`${url}/orders`, { method: "POST", headers, body: JSON.stringify({ type: "credits", amount_usd: 25 }) })
      const { id } = (await order.json()) as { id: string }
      // A Host the client chose (fetch sends the one it connects to; node:http sends what it is told).
      const answer = await new Promise<string>((resolve, reject) => {
        const { hostname, port } = new URL(url)
        const req = httpRequest({ host: hostname, port, method: "POST", path: `/orders/${id}/pay`, headers: { ...headers, host: "evil.example" } }, (res) => {
          let text = ""
          res.on("data", (chunk: Buffer) => (text += chunk.toString()))
          res.on("end", () => resolve(text))
        })
        req.on("error", reject)
        req.end(JSON.stringify({ method: "card" }))
      })
      expect((JSON.parse(answer) as { pay_url: string }).pay_url).toMatch(/^https:\/\/platform\.example\.com\/checkout\//)
    } finally {
      await stop(started)
      fs.rmSync(dir, { recursive: true, force: true })
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

  it("a catalogue naming Stripe needs STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET: refused without them, never echoing a value; with them cards go through Stripe", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "platform-main-stripe-"))
    const demo = JSON.parse(fs.readFileSync(path.join(import.meta.dirname, "..", "catalogue.demo.json"), "utf8")) as { payments: { card: unknown } }
    demo.payments.card = { processor: "stripe" }
    const catalogueFile = path.join(dir, "catalogue.json")
    fs.writeFileSync(catalogueFile, JSON.stringify(demo))
    const env = { CATALOGUE_FILE: catalogueFile, DATA_DIR: path.join(dir, "data") }
    try {
      const missing = await runToExit(env)
      expect(missing.code, missing.output).not.toBe(0)
      expect(missing.output).toContain("STRIPE_SECRET_KEY")
      expect(missing.output).toContain("STRIPE_WEBHOOK_SECRET")
      const publishable = "pk_test_not-a-secret-key-0123"
      const wrong = await runToExit({ ...env, STRIPE_SECRET_KEY: publishable, STRIPE_WEBHOOK_SECRET: "whsec_abc" })
      expect(wrong.code, wrong.output).not.toBe(0)
      expect(wrong.output).toContain("STRIPE_SECRET_KEY is not a Stripe secret key")
      expect(wrong.output).not.toContain(publishable)
      const started = await start(env.DATA_DIR, { ...env, STRIPE_SECRET_KEY: "sk_test_never_called_0123", STRIPE_WEBHOOK_SECRET: "whsec_0123" })
      try {
        const methods = await fetch(`${started.url}/payment-methods`)
        expect(await methods.json()).toMatchObject({ card: { available: true, processor: "stripe" } })
        expect(started.output()).not.toContain("sk_test_never_called_0123")
      } finally {
        await stop(started)
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  }, 120_000)
})
