/** Which payment processors the platform starts with, and the pay_url base it uses. */
import { describe, expect, it } from "vitest"
import { fixtureCatalogue } from "../src/Fixtures.ts"
import { startInProcess } from "../src/InProcess.ts"

const withPayments = (payments: Partial<typeof fixtureCatalogue.payments>) => ({
  ...fixtureCatalogue,
  payments: { ...fixtureCatalogue.payments, ...payments }
})

describe("PlatformServices: payment processors", () => {
  it("an unknown card processor stops startup with a message naming it", async () => {
    await expect(startInProcess(withPayments({ card: { processor: "adyen" } }))).rejects.toThrow(
      /payments\.card\.processor is "adyen", which this platform does not have/
    )
  })
  it("Stripe without the shell's processor stops startup, saying which secrets the shell reads", async () => {
    await expect(startInProcess(withPayments({ card: { processor: "stripe" } }))).rejects.toThrow(
      /payments\.card\.processor is "stripe", which the shell provides .*STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET/
    )
  })
  it("an unknown stablecoin rail stops startup with a message naming it", async () => {
    const catalogue = withPayments({ stablecoin: { processor: "coinbase", options: [{ chain: "base", token: "USDC", decimals: 6 }] } })
    await expect(startInProcess(catalogue)).rejects.toThrow(/payments\.stablecoin\.processor is "coinbase"/)
  })

  const payUrl = async (options: { publicUrl?: string }, headers: Record<string, string> = {}) => {
    const platform = await startInProcess(fixtureCatalogue, undefined, options)
    try {
      const auth = { authorization: `Bearer ${platform.ownerSecret}`, "content-type": "application/json", ...headers }
      const order = await (await platform.fetch("/orders", { method: "POST", headers: auth, body: JSON.stringify({ type: "credits", amount_usd: 5 }) })).json()
      const paid = await (await platform.fetch(`/orders/${order.id}/pay`, { method: "POST", headers: auth, body: JSON.stringify({ method: "card" }) })).json()
      return paid.pay_url as string
    } finally {
      await platform.close()
    }
  }

  it("pay_url is under PUBLIC_URL when it is set", async () => {
    expect(await payUrl({ publicUrl: "https://pay.example.com/" })).toMatch(/^https:\/\/pay\.example\.com\/checkout\/cs_test_/)
  })
  it("pay_url is under the request's own address when PUBLIC_URL is unset", async () => {
    expect(await payUrl({})).toMatch(/^http:\/\/platform\.test\/checkout\/cs_test_/)
  })

  it("without rails: card and stablecoin pay answer 400, the simulated chain is off (404)", async () => {
    const platform = await startInProcess(withPayments({ card: null, stablecoin: null }))
    try {
      const auth = { authorization: `Bearer ${platform.ownerSecret}`, "content-type": "application/json" }
      const order = await (await platform.fetch("/orders", { method: "POST", headers: auth, body: JSON.stringify({ type: "credits", amount_usd: 5 }) })).json()
      for (const body of [{ method: "card" }, { method: "stablecoin", chain: "base", token: "USDC" }]) {
        const res = await platform.fetch(`/orders/${order.id}/pay`, { method: "POST", headers: auth, body: JSON.stringify(body) })
        expect(res.status).toBe(400)
        expect((await res.json()).error.code).toBe("invalid_request")
      }
      const deposit = await platform.fetch("/_simulated/deposits", { method: "POST", headers: auth, body: JSON.stringify({ to: "0x00", amount: "1" }) })
      expect(deposit.status).toBe(404)
      expect((await deposit.json()).error.code).toBe("simulated_chain_off")
      const billing = await (await platform.fetch("/billing", { headers: auth })).json()
      expect(billing.charging).toMatchObject({ open: false, starts_at: null })
    } finally {
      await platform.close()
    }
  })
})
