/**
 * The account service's HTTP protections without a browser (core/src/http/AccountRoutes.ts, on the
 * Node server with memory stores and the memory outbox): cookies and their attributes, the Origin
 * check on every POST, the CSRF checks (double-submit before sign-in), pages that need a session,
 * errors as readable pages or in the platform's JSON shape, the scripts' cache headers, and a
 * server without the account service answering 503 pages.
 */
import { parseCatalogue } from "@model-platform/core/catalogue"
import { MemoryOutbox } from "@model-platform/test-harness/MemoryOutbox"
import { MemoryPlatformStores } from "@model-platform/memory-stores/MemoryPlatformStores"
import { Effect, ManagedRuntime } from "effect"
import { HttpServer } from "effect/http"
import { readFileSync } from "node:fs"
import { resolve } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { serverLayer } from "../src/Server.ts"

const catalogue = Effect.runSync(parseCatalogue(readFileSync(resolve(import.meta.dirname, "../catalogue.demo.json"), "utf8")))

const start = async (withAccounts: boolean) => {
  const runtime = ManagedRuntime.make(
    serverLayer(
      {
        catalogue,
        port: 0,
        host: "127.0.0.1",
        ownerEmail: "owner@test.local",
        ...(withAccounts ? { accounts: { emailSender: MemoryOutbox.layer } } : {})
      },
      MemoryPlatformStores
    )
  )
  const server = await runtime.runPromise(Effect.service(HttpServer.HttpServer))
  if (server.address._tag === "UnixPathAddress") throw new Error("expected a TCP address")
  return { runtime, base: `http://localhost:${server.address.port}` }
}

describe("account routes over HTTP (node-http, memory stores)", () => {
  let server: Awaited<ReturnType<typeof start>>
  let bare: Awaited<ReturnType<typeof start>>
  beforeAll(async () => {
    server = await start(true)
    bare = await start(false)
  })
  afterAll(async () => {
    await server?.runtime.dispose()
    await bare?.runtime.dispose()
  })

  const get = (path: string, headers: Record<string, string> = {}) =>
    fetch(server.base + path, { headers, redirect: "manual" })

  /** The sign-up page and its double-submit CSRF token (cookie and the page's meta tag). */
  const anonymousCsrf = async () => {
    const response = await get("/accounts/sign-up")
    const setCookie = response.headers.get("set-cookie") ?? ""
    const html = await response.text()
    const cookie = /mp_csrf=([^;]+)/.exec(setCookie)?.[1] ?? ""
    const meta = /<meta name="csrf-token" content="([^"]+)">/.exec(html)?.[1] ?? ""
    return { setCookie, cookie, meta, html }
  }

  it("pages: one h1, labels, no-store, no framing, scripts from the service only; the CSRF cookie's attributes", async () => {
    const { setCookie, cookie, meta, html } = await anonymousCsrf()
    expect(cookie).not.toBe("")
    expect(meta).toBe(cookie)
    expect(setCookie).toMatch(/HttpOnly/i)
    expect(setCookie).toMatch(/SameSite=Lax/i)
    expect(setCookie).toMatch(/Path=\/accounts/)
    expect(setCookie).not.toMatch(/Secure/i) // http://localhost
    expect(html.match(/<h1>/g)?.length).toBe(1)
    expect(html).toContain(`<label for="email">`)
    expect(html).toMatch(/<script src="\/accounts\/webauthn\.js\?v=[0-9a-f]{12}" defer>/)
    const response = await get("/accounts/sign-in")
    expect(response.headers.get("cache-control")).toBe("no-store")
    expect(response.headers.get("x-frame-options")).toBe("DENY")
    expect(response.headers.get("content-security-policy")).toContain("script-src 'self'")
  })

  it("the scripts: the WebAuthn bundle and the page script, cached for a year", async () => {
    const bundle = await get("/accounts/webauthn.js")
    expect(bundle.status).toBe(200)
    expect(bundle.headers.get("content-type")).toContain("javascript")
    expect(bundle.headers.get("cache-control")).toContain("max-age=31536000")
    expect(await bundle.text()).toContain("SimpleWebAuthnBrowser")
    expect(await (await get("/accounts/accounts.js")).text()).toContain("startRegistration")
  })

  it("pages that need a session send to sign-in; / goes to sign-in when signed out", async () => {
    for (const path of ["/accounts/manage", "/accounts/welcome", "/accounts"]) {
      const response = await get(path)
      expect(response.status, path).toBe(303)
      expect(response.headers.get("location"), path).toBe("/accounts/sign-in")
    }
  })

  it("an unknown address under /accounts is a page, not JSON", async () => {
    const response = await get("/accounts/no-such-page")
    expect(response.status).toBe(404)
    expect(response.headers.get("content-type")).toContain("text/html")
    expect(await response.text()).toContain("<h1>Page not found</h1>")
  })

  it("every POST needs the service's Origin: a page for a form, JSON for the script", async () => {
    const { cookie } = await anonymousCsrf()
    const form = await fetch(`${server.base}/accounts/recover`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", cookie: `mp_csrf=${cookie}`, origin: "https://evil.example" },
      body: `csrf=${cookie}&email=a%40b.example`,
      redirect: "manual"
    })
    expect(form.status).toBe(403)
    expect(form.headers.get("content-type")).toContain("text/html")
    expect(await form.text()).toContain("https://evil.example")
    const json = await fetch(`${server.base}/accounts/api/sign-in/options`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-csrf-token": cookie, cookie: `mp_csrf=${cookie}` },
      body: "{}"
    })
    expect(json.status).toBe(403)
    expect((await json.json()).error.code).toBe("origin_mismatch")
  })

  it("JSON ceremonies need the CSRF header matching the cookie; with it, the options come back", async () => {
    const { cookie } = await anonymousCsrf()
    const post = (headers: Record<string, string>) =>
      fetch(`${server.base}/accounts/api/sign-in/options`, {
        method: "POST",
        headers: { "content-type": "application/json", origin: server.base, ...headers },
        body: "{}"
      })
    const missing = await post({ cookie: `mp_csrf=${cookie}` })
    expect(missing.status).toBe(403)
    expect(await missing.json()).toEqual({ error: { code: "csrf_mismatch", message: expect.any(String) } })
    expect((await post({ cookie: `mp_csrf=${cookie}`, "x-csrf-token": "other" })).status).toBe(403)
    const ok = await post({ cookie: `mp_csrf=${cookie}`, "x-csrf-token": cookie })
    expect(ok.status).toBe(200)
    const begun = await ok.json()
    expect(begun).toMatchObject({ ceremony: expect.any(String), options: { challenge: expect.any(String), rpId: "localhost" } })
  })

  it("service refusals: JSON in the platform's shape, pages with a readable message", async () => {
    const { cookie } = await anonymousCsrf()
    const headers = { "content-type": "application/json", origin: server.base, cookie: `mp_csrf=${cookie}`, "x-csrf-token": cookie }
    const bad = await fetch(`${server.base}/accounts/api/sign-up/options`, { method: "POST", headers, body: JSON.stringify({ email: "not an email" }) })
    expect(bad.status).toBe(400)
    expect((await bad.json()).error).toMatchObject({ code: "invalid_email", message: expect.any(String) })
    const replay = await fetch(`${server.base}/accounts/api/sign-in/verify`, {
      method: "POST",
      headers,
      body: JSON.stringify({ ceremony: "nope", response: {} })
    })
    expect(replay.status).toBe(400)
    expect((await replay.json()).error.code).toBe("invalid_flow")
    const confirm = await fetch(`${server.base}/accounts/confirm`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: server.base, cookie: `mp_csrf=${cookie}` },
      body: `csrf=${cookie}&token=unknown-token`,
      redirect: "manual"
    })
    expect(confirm.status).toBe(404)
    const page = await confirm.text()
    expect(page).toContain("<h1>This link cannot be used</h1>")
    expect(page).toContain(`role="alert"`)
  })

  it("a server without the account service answers 503 pages under /accounts", async () => {
    for (const path of ["/accounts", "/accounts/sign-up", "/accounts/api/sign-in/options"]) {
      const response = await fetch(bare.base + path)
      expect(response.status, path).toBe(503)
      expect(await response.text(), path).toContain("not run the account service")
    }
  })
})
