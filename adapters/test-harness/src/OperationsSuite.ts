/**
 * What an operator's tools see on every shell (docs/operations.md): the keyless probes, and a
 * request id on every answer. A shell passes a `start` as for the HTTP suite (HttpSuite.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { ShellUnderTest } from "./HttpSuite.ts"

export const operationsSuite = (shell: string, start: () => Promise<ShellUnderTest>) =>
  describe(`probes and request ids on ${shell}`, () => {
    let platform: ShellUnderTest
    beforeAll(async () => {
      platform = await start()
    })
    afterAll(async () => {
      await platform?.close()
    })

    it("GET /health/live answers 200 without a key", async () => {
      const response = await platform.fetch("/health/live")
      expect(response.status).toBe(200)
      expect(await response.json()).toEqual({ status: "live" })
    })

    it("GET /health/ready answers 200 without a key while the store answers", async () => {
      const response = await platform.fetch("/health/ready")
      expect(response.status, await response.clone().text()).toBe(200)
      expect(await response.json()).toEqual({ status: "ready" })
    })

    it("the probes take GET only: POST answers 405 in the platform's shape", async () => {
      const response = await platform.fetch("/health/ready", { method: "POST" })
      expect(response.status).toBe(405)
      expect(await response.json()).toEqual({ error: { code: "method_not_allowed", message: expect.any(String) } })
    })

    it("every answer carries an X-Request-Id of its own: successes, refusals, unknown routes, both surfaces", async () => {
      const answers = await Promise.all([
        platform.fetch("/models"),
        platform.fetch("/me"),
        platform.fetch("/no/such/route"),
        platform.fetch("/v1/chat/completions", { method: "POST", headers: { "content-type": "application/json" }, body: "{}" }),
        platform.fetch("/health/live")
      ])
      expect(answers.map((a) => a.status)).toEqual([200, 401, 404, 401, 200])
      const ids = answers.map((a) => a.headers.get("x-request-id"))
      for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9._:-]{1,128}$/)
      expect(new Set(ids).size).toBe(ids.length)
    })

    it("a well-formed X-Request-Id of the client's is kept; a malformed one is replaced", async () => {
      const kept = await platform.fetch("/models", { headers: { "x-request-id": "trace-4bf92f35.77:01" } })
      expect(kept.headers.get("x-request-id")).toBe("trace-4bf92f35.77:01")
      for (const malformed of ["has spaces in it", "x".repeat(129), "semi;colon", "<script>"]) {
        const replaced = await platform.fetch("/models", { headers: { "x-request-id": malformed } })
        const id = replaced.headers.get("x-request-id")
        expect(id).not.toBe(malformed)
        expect(id).toMatch(/^[A-Za-z0-9._:-]{1,128}$/)
      }
    })
  })
