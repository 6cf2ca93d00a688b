/**
 * The catalogue's payments.stablecoin for the "evm" rail (StablecoinConfig.ts): a catalogue naming
 * it must give each option its token contract and each option's chain its watch settings, else it
 * is refused at start with what is missing; GET /payment-methods lists the options as for any rail.
 */
import { Effect, Exit } from "effect"
import { readFileSync } from "node:fs"
import { resolve } from "node:path"
import { describe, expect, it } from "vitest"
import { Catalogue } from "../src/catalogue/Catalogue.ts"
import { parseCatalogue } from "../src/catalogue/CatalogueConfig.ts"

const demo = JSON.parse(readFileSync(resolve(import.meta.dirname, "../../adapters/node-http/catalogue.demo.json"), "utf8"))
const USDC_BASE = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
const base = { confirmations: 12, rpc_url_env: "BASE_RPC_URL", xpub_env: "DEPOSIT_XPUB" }

const withStablecoin = (stablecoin: unknown) => JSON.stringify({ ...demo, payments: { ...demo.payments, stablecoin } })
const parse = (stablecoin: unknown) => Effect.runSyncExit(parseCatalogue(withStablecoin(stablecoin)))
const refusal = (stablecoin: unknown) => {
  const exit = parse(stablecoin)
  return Exit.isFailure(exit) ? String(exit.cause) : undefined
}

describe("payments.stablecoin with the evm rail", () => {
  it("is read with its contracts and chains, and GET /payment-methods lists its options", async () => {
    const stablecoin = {
      processor: "evm",
      options: [
        { chain: "base", token: "USDC", decimals: 6, contract: USDC_BASE },
        { chain: "base", token: "USDT", decimals: 6, contract: "0xfde4C96c8593536E31F229EA8f37b2ADa2699bb2" }
      ],
      evm: { base: { ...base, start_block: 20_000_000, max_blocks_per_pass: 500, watch_days: 60 } }
    }
    const exit = parse(stablecoin)
    expect(Exit.isSuccess(exit)).toBe(true)
    if (!Exit.isSuccess(exit)) return
    expect(exit.value.payments.stablecoin).toEqual(stablecoin)
    const methods = await Effect.runPromise(Effect.map(Effect.service(Catalogue), (c) => c.paymentMethods).pipe(Effect.provide(Catalogue.layer(exit.value))))
    expect(methods.stablecoin).toEqual({
      available: true,
      processor: "evm",
      options: [{ chain: "base", token: "USDC" }, { chain: "base", token: "USDT" }]
    })
  })

  it("is refused without a token contract, with a malformed one, or without the chain's settings", () => {
    expect(refusal({ processor: "evm", options: [{ chain: "base", token: "USDC", decimals: 6 }], evm: { base } }))
      .toMatch(/USDC on base needs "contract"/)
    expect(refusal({ processor: "evm", options: [{ chain: "base", token: "USDC", decimals: 6, contract: "0x1234" }], evm: { base } }))
      .toMatch(/USDC on base needs "contract"/)
    expect(refusal({ processor: "evm", options: [{ chain: "base", token: "USDC", decimals: 6, contract: USDC_BASE }] }))
      .toMatch(/needs payments\.stablecoin\.evm\["base"\]/)
    expect(refusal({ processor: "evm", options: [{ chain: "base", token: "USDC", decimals: 6, contract: USDC_BASE }], evm: { base: { ...base, confirmations: 0 } } }))
      .toMatch(/confirmations/)
  })

  it("an option listed twice is refused, whatever the rail", () => {
    const option = { chain: "base", token: "USDC", decimals: 6 }
    expect(refusal({ processor: "simulated", options: [option, option] })).toMatch(/USDC on base appears twice/)
  })
})
