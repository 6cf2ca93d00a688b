/**
 * Deposit addresses from an xpub (Addresses.ts) and the "evm" rail that hands them out
 * (EvmRail.ts): the addresses are those a BIP-44 wallet derives from the same seed (anvil's
 * well-known accounts come from its mnemonic at m/44'/60'/0'/0/i), a private key is refused, and
 * orders never share an address, also when several processes open addresses at once.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { pbkdf2Sync, randomBytes } from "node:crypto"
import { HDKey, hdKeyToAccount, mnemonicToAccount } from "viem/accounts"
import { DepositWatchStore, StablecoinRail } from "@model-platform/core/payments"
import { DepositWatchStoreMemory } from "@model-platform/memory-stores/MemoryDepositWatchStore"
import { type DepositKey, parseDepositKey } from "../src/Addresses.ts"
import * as EvmRail from "../src/EvmRail.ts"

const ANVIL_MNEMONIC = "test test test test test test test test test test test junk"
/** anvil's first three accounts (m/44'/60'/0'/0/0..2 of its mnemonic). */
const ANVIL_ACCOUNTS = [
  "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266",
  "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
  "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC"
]

/** BIP-39's seed of a mnemonic (no passphrase). */
const seedOf = (mnemonic: string) => pbkdf2Sync(mnemonic.normalize("NFKD"), "mnemonic", 2048, 64, "sha512")
const accountKey = (master: HDKey) => master.derive("m/44'/60'/0'")

const depositKey = (text: string): DepositKey => {
  const parsed = parseDepositKey(text)
  if ("problem" in parsed) throw new Error(parsed.problem)
  return parsed
}

describe("deposit addresses from an xpub", () => {
  const xpub = accountKey(HDKey.fromMasterSeed(seedOf(ANVIL_MNEMONIC))).publicExtendedKey

  it("are the BIP-44 wallet's addresses m/44'/60'/0'/0/i, EIP-55 checksummed", () => {
    const key = depositKey(xpub)
    assert.deepStrictEqual([0, 1, 2].map(key.address), ANVIL_ACCOUNTS)
    for (let i = 0; i < 20; i++) assert.strictEqual(key.address(i), mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: i }).address)
  })

  it("the key id names the key and differs between keys; the xpub's spaces around it do not matter", () => {
    const other = accountKey(HDKey.fromMasterSeed(randomBytes(32))).publicExtendedKey
    assert.match(depositKey(xpub).keyId, /^[0-9a-f]{40}$/)
    assert.strictEqual(depositKey(` ${xpub}\n`).keyId, depositKey(xpub).keyId)
    assert.notStrictEqual(depositKey(other).keyId, depositKey(xpub).keyId)
  })

  it("an extended private key is refused, and so is anything that is not an extended key", () => {
    const xprv = accountKey(HDKey.fromMasterSeed(seedOf(ANVIL_MNEMONIC))).privateExtendedKey
    const refused = parseDepositKey(xprv)
    assert.isTrue("problem" in refused && /PRIVATE/.test(refused.problem))
    for (const text of ["", "xpub", ANVIL_ACCOUNTS[0]!, xpub.slice(0, -1) + (xpub.endsWith("a") ? "b" : "a")]) {
      assert.isTrue("problem" in parseDepositKey(text), text)
    }
  })

  it("an index a public key cannot derive is refused", () => {
    const key = depositKey(xpub)
    for (const index of [-1, 2 ** 31, 1.5]) assert.throws(() => key.address(index), RangeError)
  })
})

describe("the evm rail", () => {
  const master = HDKey.fromMasterSeed(randomBytes(32))
  const key = depositKey(accountKey(master).publicExtendedKey)

  it.effect("gives each order its own address at the key's next index, kept with the order, no memo", () =>
    Effect.gen(function*() {
      const store = yield* DepositWatchStore
      // Two processes (two rails) over one store.
      const rails = yield* Effect.all([0, 1].map(() =>
        Effect.provide(Effect.service(StablecoinRail), EvmRail.layer(new Map([["base", key]])).pipe(Layer.provide(Layer.succeed(DepositWatchStore, store))))
      ))
      const orders = Array.from({ length: 20 }, (_, i) => `ord_${i}`)
      const opened = yield* Effect.all(
        orders.map((order, i) => rails[i % 2]!.depositAddress(order, "base", "USDC")),
        { concurrency: "unbounded" }
      )
      assert.strictEqual(rails[0]!.processor, "evm")
      assert.strictEqual(new Set(opened.map((d) => d.address)).size, 20)
      const kept = yield* Effect.forEach(opened, (d) => store.getAddress(d.address))
      assert.deepStrictEqual(kept.map((a) => a?.index).sort((x, y) => x! - y!), Array.from({ length: 20 }, (_, i) => i))
      for (const [i, d] of opened.entries()) {
        assert.isNull(d.memo)
        const k = kept[i]!
        assert.deepInclude(k, { order_id: orders[i]!, chain: "base", token: "USDC", key_id: key.keyId })
        // The operator's wallet holds the private key of exactly this address.
        assert.strictEqual(d.address, hdKeyToAccount(master, { addressIndex: k.index }).address)
      }
    }).pipe(Effect.provide(DepositWatchStoreMemory)))
})
