/**
 * scripts/send-deposit.ts against a real Node server: an operator who started the server with
 * PORT=<n> sends a simulated deposit without naming the URL (issue 10, finding 9).
 */
import { fixtureCatalogue } from "@model-platform/test-harness/Fixtures"
import { MemoryPlatformStores } from "@model-platform/memory-stores/MemoryPlatformStores"
import { execFile } from "node:child_process"
import { fileURLToPath } from "node:url"
import { promisify } from "node:util"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startNodeServer } from "./support.ts"

const script = fileURLToPath(new URL("../../../scripts/send-deposit.ts", import.meta.url))
const run = promisify(execFile)

describe("scripts/send-deposit.ts", () => {
  let shell: Awaited<ReturnType<typeof startNodeServer>>
  beforeAll(async () => {
    shell = await startNodeServer(fixtureCatalogue, MemoryPlatformStores)
  })
  afterAll(() => shell.close())

  it("finds the server on the PORT it was started with, and the deposit pays the order", async () => {
    const call = (path: string, body?: unknown) =>
      shell.fetch(path, {
        method: body === undefined ? "GET" : "POST",
        headers: { authorization: `Bearer ${shell.ownerSecret}`, "content-type": "application/json" },
        ...(body === undefined ? {} : { body: JSON.stringify(body) })
      }).then((r) => r.json() as Promise<any>)
    const order = await call("/orders", { type: "credits", amount_usd: 5 })
    await call(`/orders/${order.id}/pay`, { method: "stablecoin", chain: "base", token: "USDC" })

    const port = new URL(shell.url).port
    const { PLATFORM_URL: _, ...env } = process.env
    const { stdout } = await run(process.execPath, [script, "--order", order.id], {
      env: { ...env, PORT: port, PLATFORM_KEY: shell.ownerSecret }
    })

    expect(stdout).toContain(`Order ${order.id}: paid`)
    expect((await call(`/orders/${order.id}`)).status).toBe("paid")
  })
})
