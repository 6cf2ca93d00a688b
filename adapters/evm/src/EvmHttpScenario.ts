/**
 * A stablecoin order paid by a real ERC-20 transfer, over a shell's HTTP API (the Node server, the
 * Lambda handler): GET /payment-methods lists the evm options, POST /orders/{id}/pay answers the
 * order's own address and exact amount, a short transfer leaves the order pending, the top-up pays
 * it only at the configured confirmation, once, and the simulated chain's endpoint is off. The
 * shell says how its watcher runs (`deliver`: a scheduled invocation, or waiting for the loop).
 */
import { expect } from "vitest"
import type { Address } from "viem"
import { CHAIN, type LocalChainFixture } from "./LocalChainFixture.ts"

export interface EvmShell {
  readonly fetch: (path: string, init?: RequestInit) => Promise<Response>
  /** The owner's key. */
  readonly ownerSecret: string
  /** Runs the shell's deposit watcher until it has looked at the chain as it is now. */
  readonly deliver: () => Promise<void>
  /** Waits until the order has `status` (a shell whose watcher runs on its own polls for it). */
  readonly until?: (check: () => Promise<boolean>) => Promise<void>
}

const USDC = (n: number) => BigInt(n) * 1_000_000n

export const evmHttpScenario = async (shell: EvmShell, fixture: LocalChainFixture, confirmations: number) => {
  const call = async (method: string, path: string, body?: unknown) => {
    const response = await shell.fetch(path, {
      method,
      headers: { authorization: `Bearer ${shell.ownerSecret}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    return { status: response.status, json: await response.json() as any }
  }
  const orderStatus = async (id: string) => (await call("GET", `/orders/${id}`)).json.status as string

  const methods = await call("GET", "/payment-methods")
  expect(methods.json.stablecoin).toEqual({
    available: true,
    processor: "evm",
    options: [{ chain: CHAIN, token: "USDC" }, { chain: CHAIN, token: "USDT" }]
  })

  const order = await call("POST", "/orders", { type: "credits", amount_usd: 25 })
  expect(order.status).toBe(200)
  const paying = await call("POST", `/orders/${order.json.id}/pay`, { method: "stablecoin", chain: CHAIN, token: "USDC" })
  expect(paying.status).toBe(200)
  const deposit = paying.json.payment.deposit
  expect(deposit).toMatchObject({ chain: CHAIN, token: "USDC", amount: "25.000000", memo: null })
  expect(deposit.address).toMatch(/^0x[0-9a-fA-F]{40}$/)
  const address = deposit.address as Address

  // Short: 10 of 25, confirmed; the order waits for the rest.
  await fixture.chain.transfer(fixture.tokens.USDC, 1, address, USDC(10))
  await fixture.chain.mine(confirmations - 1)
  await shell.deliver()
  expect(await orderStatus(order.json.id)).toBe("pending")

  // The rest, one confirmation short: still pending; then the last one pays it.
  await fixture.chain.transfer(fixture.tokens.USDC, 1, address, USDC(15))
  await fixture.chain.mine(confirmations - 2)
  await shell.deliver()
  expect(await orderStatus(order.json.id)).toBe("pending")
  await fixture.chain.mine(1)
  await shell.deliver()
  if (shell.until !== undefined) await shell.until(async () => (await orderStatus(order.json.id)) === "paid")
  expect(await orderStatus(order.json.id)).toBe("paid")

  await shell.deliver()
  const credits = await call("GET", "/credits")
  expect(credits.json.total_credits).toBe(25_000)
  const receipts = await call("GET", "/billing/receipts")
  expect(receipts.json.data.filter((r: { paid_with: string }) => r.paid_with === "stablecoin")).toHaveLength(1)

  // No simulated chain beside a real one.
  const simulated = await call("POST", "/_simulated/deposits", { order_id: order.json.id })
  expect(simulated.status).toBe(404)
  expect(simulated.json.error.code).toBe("simulated_chain_off")
}
