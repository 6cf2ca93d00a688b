/**
 * The participant page (http/pages/RecordPage.ts) without a browser: the route answers the page
 * with its security headers, the CSP allows exactly the inline script (by its hash), and that
 * script parses. The page's behaviour is the Chromium flow's (test-harness FieldworkBrowserFlow.ts).
 */
import { Layer } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { createHash } from "node:crypto"
import { describe, expect, it } from "vitest"
import { RECORD_PAGE_HTML, RECORD_PAGE_PATH, RecordPageRoute } from "../../src/http/pages/RecordPage.ts"

const inlineScript = (html: string) => /<script>([\s\S]*?)<\/script>/.exec(html)![1]!

describe("the participant page", () => {
  it("GET /fieldwork/record answers the page, its CSP naming the inline script's SHA-256", async () => {
    const { handler, dispose } = HttpRouter.toWebHandler(
      RecordPageRoute.pipe(Layer.provide(HttpServer.layerServices)),
      { disableLogger: true }
    )
    try {
      const response = await handler(new Request(`http://platform.test${RECORD_PAGE_PATH}`))
      expect(response.status).toBe(200)
      expect(response.headers.get("content-type")).toMatch(/^text\/html/)
      const html = await response.text()
      expect(html).toBe(RECORD_PAGE_HTML)
      const hash = createHash("sha256").update(inlineScript(html), "utf8").digest("base64")
      const csp = response.headers.get("content-security-policy")!
      expect(csp).toContain(`script-src 'sha256-${hash}'`)
      expect(csp).toContain("connect-src 'self'")
      expect(csp).toContain("frame-ancestors 'none'")
      // no-referrer would make Chromium send `Origin: null` on the page's POSTs, which the ingest routes refuse.
      expect(response.headers.get("referrer-policy")).toBe("same-origin")
    } finally {
      await dispose()
    }
  })

  it("the script parses, has one script element, and never reads the key from anywhere but the fragment", () => {
    expect(RECORD_PAGE_HTML.match(/<script/g)).toHaveLength(1)
    const script = inlineScript(RECORD_PAGE_HTML)
    expect(() => new Function(script)).not.toThrow()
    expect(script).toContain("location.hash")
    expect(script).not.toMatch(/location\.search|document\.cookie/)
  })
})
