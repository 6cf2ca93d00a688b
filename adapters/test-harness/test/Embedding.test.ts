/**
 * docs/embedding.md "Serving the platform from another framework": the page shows ServeElsewhere.ts
 * as it is, and that code serves the whole platform (core http/Platform.ts: makePlatform,
 * platformWebHandler) on the memory stores through plain fetch-style calls, as a framework's route
 * would make them.
 */
import { readFileSync } from "node:fs"
import { resolve } from "node:path"
import { describe, expect, it } from "vitest"
import { fixtureCatalogue } from "../src/Fixtures.ts"
import { ownersBalance, servePlatform } from "./ServeElsewhere.ts"

const SECTION = "## Serving the platform from another framework"

/** The first TypeScript block of the page's section. */
const shownOnThePage = (): string => {
  const page = readFileSync(resolve(import.meta.dirname, "../../../docs/embedding.md"), "utf8")
  const section = page.slice(page.indexOf(SECTION))
  return /```ts\n([\s\S]*?)```/.exec(section)?.[1] ?? ""
}

/** ServeElsewhere.ts after its opening comment. */
const theExample = (): string => {
  const source = readFileSync(resolve(import.meta.dirname, "ServeElsewhere.ts"), "utf8")
  return source.slice(source.indexOf("*/\n") + 3)
}

describe("docs/embedding.md: the platform served from another framework", () => {
  it("the page shows the example exactly as it runs here", () => {
    expect(theExample()).toContain("platformWebHandler(makePlatform(")
    expect(shownOnThePage()).toBe(theExample())
  })

  it("the owner made at the first start reads its balance through the handler", async () => {
    expect(await ownersBalance(fixtureCatalogue)).toMatchObject({ total_credits: 0 })
  })

  it("a card checkout's pay_url starts with the address the framework says the request was sent to", async () => {
    const platform = await servePlatform(fixtureCatalogue)
    try {
      const call = async (method: string, path: string, body?: unknown) => {
        const response = await platform.handler(new Request(`https://shop.example.org${path}`, {
          method,
          headers: { authorization: `Bearer ${platform.owner?.key.secret}`, "content-type": "application/json" },
          ...(body === undefined ? {} : { body: JSON.stringify(body) })
        }))
        return { status: response.status, json: await response.json() as Record<string, any> }
      }
      const created = await call("POST", "/orders", { type: "credits", amount_usd: 25 })
      expect(created.status).toBe(200)
      const paying = await call("POST", `/orders/${created.json.id}/pay`, { method: "card" })
      expect(paying.status).toBe(200)
      expect(paying.json.pay_url).toMatch(/^https:\/\/shop\.example\.org\/checkout\/[A-Za-z0-9_-]+$/)
      const page = await platform.handler(new Request(paying.json.pay_url))
      expect(page.status).toBe(200)
      expect(page.headers.get("content-type")).toContain("text/html")
    } finally {
      await platform.dispose()
    }
  })

  it("a path the platform does not have: 404 in the platform's error shape, with a request id", async () => {
    const platform = await servePlatform(fixtureCatalogue)
    try {
      const response = await platform.handler(new Request("https://shop.example.org/no-such-page"))
      expect(response.status).toBe(404)
      expect(response.headers.get("x-request-id")).toMatch(/.+/)
      expect(await response.json()).toEqual({ error: { code: "not_found", message: expect.any(String) } })
    } finally {
      await platform.dispose()
    }
  })

  it("a catalogue the platform cannot start with: the handler is refused, saying why", async () => {
    const stripe = { ...fixtureCatalogue, payments: { ...fixtureCatalogue.payments, card: { processor: "stripe" as const } } }
    await expect(servePlatform(stripe)).rejects.toThrow(/payments\.card\.processor is "stripe"/)
  })
})
