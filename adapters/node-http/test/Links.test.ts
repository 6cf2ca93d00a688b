/**
 * The links the platform hands out are built only on PUBLIC_URL or a loopback Host
 * (docs/api-decisions.md "Links", core/src/http/PublicUrl.ts), through the real Node server with
 * requests written as a client may write them: any Host header, an absolute URL in the request line.
 */
import { fixtureCatalogue } from "@model-platform/test-harness/Fixtures"
import { MemoryPlatformStores } from "@model-platform/memory-stores/MemoryPlatformStores"
import { nodeRawSender } from "@model-platform/test-harness/BoundarySuite"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startNodeServer } from "./support.ts"

type Shell = Awaited<ReturnType<typeof startNodeServer>>

const withShell = (options: { readonly publicUrl?: string }, tests: (shell: () => Shell) => void) => {
  let shell: Shell
  beforeAll(async () => {
    shell = await startNodeServer(fixtureCatalogue, MemoryPlatformStores, options)
  })
  afterAll(async () => {
    await shell?.close()
  })
  tests(() => shell)
}

/** A call with `host` as its Host header and `target` on the request line as given. */
const call = async (shell: Shell, method: string, target: string, host: string, body?: unknown) => {
  const answer = await nodeRawSender(shell.url)(method, target, {
    headers: {
      host,
      authorization: `Bearer ${shell.ownerSecret}`,
      ...(body === undefined ? {} : { "content-type": "application/json" })
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  return { ...answer, json: JSON.parse(answer.text) as any }
}

const loopback = (shell: Shell) => new URL(shell.url).host
const newOrder = async (shell: Shell) => {
  const created = await call(shell, "POST", "/orders", loopback(shell), { type: "credits", amount_usd: 25 })
  expect(created.status, created.text).toBe(200)
  return created.json.id as string
}

describe("links on the Node server without PUBLIC_URL", () => {
  withShell({}, (shell) => {
    it("a Host that is not loopback gets 400 untrusted_host, no link, and no checkout is opened", async () => {
      const id = await newOrder(shell())
      for (const host of ["evil.example", "evil.example:80", "127.0.0.1.evil.example", "localhost.evil.example"]) {
        const paid = await call(shell(), "POST", `/orders/${id}/pay`, host, { method: "card" })
        expect(paid.status, paid.text).toBe(400)
        expect(paid.json).toEqual({ error: { code: "untrusted_host", message: expect.stringContaining("PUBLIC_URL") } })
        expect(paid.text).not.toMatch(/https?:\/\/[^"\s]*evil/)
      }
      const agent = await call(shell(), "POST", "/agents", "evil.example", { name: "helper", permissions: ["inference"] })
      expect([agent.status, agent.json.error?.code]).toEqual([400, "untrusted_host"])
      const order = await call(shell(), "GET", `/orders/${id}`, loopback(shell()))
      expect(order.json).toMatchObject({ status: "pending", pay_url: "", payment: { method: null } })
    })

    it("a loopback Host works as before: the link is on it, and its checkout page answers", async () => {
      const port = new URL(shell().url).port
      for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `127.0.0.2:${port}`]) {
        const paid = await call(shell(), "POST", `/orders/${await newOrder(shell())}/pay`, host, { method: "card" })
        expect(paid.status, paid.text).toBe(200)
        expect(paid.json.pay_url).toMatch(new RegExp(`^http://${host.replace(/\./g, "\\.")}/checkout/cs_test_`))
        const page = await fetch(`${shell().url}${new URL(paid.json.pay_url).pathname}`)
        expect(page.status).toBe(200)
      }
    })

    it("an absolute URL on the request line names the request's authority (RFC 9112), held to the same rule", async () => {
      const id = await newOrder(shell())
      const evil = await call(shell(), "POST", `http://evil.example/orders/${id}/pay`, loopback(shell()), { method: "card" })
      expect([evil.status, evil.json.error?.code]).toEqual([400, "untrusted_host"])
      const local = await call(shell(), "POST", `${shell().url}/orders/${id}/pay`, "evil.example", { method: "card" })
      expect(local.status, local.text).toBe(200)
      expect(local.json.pay_url.startsWith(`${shell().url}/checkout/`)).toBe(true)
    })
  })
})

describe("links on the Node server with PUBLIC_URL", () => {
  withShell({ publicUrl: "https://platform.example.com/" }, (shell) => {
    it("every link is on PUBLIC_URL, whatever Host the request names", async () => {
      for (const host of ["evil.example", loopback(shell())]) {
        const paid = await call(shell(), "POST", `/orders/${await newOrder(shell())}/pay`, host, { method: "card" })
        expect(paid.status, paid.text).toBe(200)
        expect(paid.json.pay_url).toMatch(/^https:\/\/platform\.example\.com\/checkout\/cs_test_/)
      }
    })
  })
})
