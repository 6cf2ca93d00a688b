/**
 * The contract suite of the deposit watch store port (core/src/payments/DepositWatchStore.ts). Every
 * implementation runs it against its own layer: `depositWatchStoreContract("memory", layer)`.
 *
 * The layer is built once per suite and shared by its tests, so every test works on a fresh
 * random chain, key and addresses and never assumes an empty store.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect, type Layer } from "effect"
import { DepositWatchStore, type SeenTransfer, type WatchedAddress } from "@model-platform/core/payments"
import { assertDies } from "./ContractSupport.ts"
import { at } from "./SampleRecords.ts"

const layerOptions = { excludeTestServices: true, timeout: "60 seconds" } as const
const unbounded = { concurrency: "unbounded" } as const

const randomHex = (bytes: number) =>
  Array.from(crypto.getRandomValues(new Uint8Array(bytes)), (b) => b.toString(16).padStart(2, "0")).join("")
/** A chain of its own per test, so that cursors and transfer lists start empty. */
const freshChain = () => `chain-${randomHex(6)}`

const address = (chain: string, overrides: Partial<WatchedAddress> = {}): WatchedAddress => ({
  address: `0x${randomHex(20)}`,
  chain,
  token: "USDC",
  order_id: `ord_${randomHex(8)}`,
  key_id: `key-${randomHex(4)}`,
  index: 0,
  opened_at: at(0),
  ...overrides
})

const transfer = (chain: string, overrides: Partial<SeenTransfer> = {}): SeenTransfer => ({
  chain,
  token: "USDC",
  tx_hash: `0x${randomHex(32)}`,
  log_index: 0,
  block_number: 100,
  block_hash: `0x${randomHex(32)}`,
  to: `0x${randomHex(20)}`,
  amount: 25_000_000n,
  at: at(0),
  ...overrides
})

export const depositWatchStoreContract = <E>(name: string, store: Layer.Layer<DepositWatchStore, E>): void =>
  layer(store, layerOptions)(name, (it) => {
    describe("address indexes", () => {
      it.effect("count from 0 per key, each key on its own", () =>
        Effect.gen(function*() {
          const store = yield* DepositWatchStore
          const [a, b] = [`key-${randomHex(8)}`, `key-${randomHex(8)}`]
          assert.deepStrictEqual(
            [yield* store.allocateIndex(a), yield* store.allocateIndex(a), yield* store.allocateIndex(b), yield* store.allocateIndex(a)],
            [0, 1, 0, 2]
          )
        }))

      it.effect("20 concurrent allocations answer 20 different indexes, 0 to 19", () =>
        Effect.gen(function*() {
          const store = yield* DepositWatchStore
          const key = `key-${randomHex(8)}`
          const indexes = yield* Effect.all(Array.from({ length: 20 }, () => store.allocateIndex(key)), unbounded)
          assert.deepStrictEqual([...indexes].sort((x, y) => x - y), Array.from({ length: 20 }, (_, i) => i))
        }))
    })

    describe("addresses", () => {
      it.effect("are kept as given and found by address; one kept twice is a defect that changes nothing", () =>
        Effect.gen(function*() {
          const store = yield* DepositWatchStore
          const kept = address(freshChain(), { index: 7 })
          yield* store.addAddress(kept)
          assert.deepStrictEqual(yield* store.getAddress(kept.address), kept)
          yield* assertDies(store.addAddress({ ...kept, order_id: "ord_other" }), "the same address again")
          assert.deepStrictEqual(yield* store.getAddress(kept.address), kept)
          assert.isUndefined(yield* store.getAddress(`0x${randomHex(20)}`))
        }))

      it.effect("are watched by chain, whatever their token, from an instant on, oldest first", () =>
        Effect.gen(function*() {
          const store = yield* DepositWatchStore
          const chain = freshChain()
          const late = address(chain, { opened_at: at(3_000) })
          const early = address(chain, { opened_at: at(1_000) })
          const old = address(chain, { opened_at: at(-1) })
          const otherToken = address(chain, { token: "USDT", opened_at: at(2_000) })
          const otherChain = address(freshChain(), { opened_at: at(2_000) })
          for (const a of [late, early, old, otherToken, otherChain]) yield* store.addAddress(a)
          assert.deepStrictEqual(yield* store.watchedAddresses(chain, at(0)), [early, otherToken, late])
          assert.deepStrictEqual(yield* store.watchedAddresses(chain, at(1_000)), [early, otherToken, late])
          assert.deepStrictEqual(yield* store.watchedAddresses(chain, at(2_001)), [late])
          assert.deepStrictEqual(yield* store.watchedAddresses(chain, at(3_001)), [])
        }))
    })

    describe("cursors", () => {
      it.effect("start absent and only move forward, per chain and token", () =>
        Effect.gen(function*() {
          const store = yield* DepositWatchStore
          const chain = freshChain()
          assert.isUndefined(yield* store.cursor(chain, "USDC"))
          assert.strictEqual(yield* store.advanceCursor(chain, "USDC", 10), 10)
          assert.strictEqual(yield* store.advanceCursor(chain, "USDC", 7), 10)
          assert.strictEqual(yield* store.advanceCursor(chain, "USDC", 10), 10)
          assert.strictEqual(yield* store.advanceCursor(chain, "USDC", 12), 12)
          assert.strictEqual(yield* store.cursor(chain, "USDC"), 12)
          assert.isUndefined(yield* store.cursor(chain, "USDT"))
          assert.strictEqual(yield* store.advanceCursor(chain, "USDC", 0), 12)
        }))

      it.effect("of 20 concurrent advances the highest wins, and each sees at least its own block", () =>
        Effect.gen(function*() {
          const store = yield* DepositWatchStore
          const chain = freshChain()
          const blocks = Array.from({ length: 20 }, () => Math.floor(Math.random() * 1_000_000))
          const answers = yield* Effect.all(blocks.map((b) => store.advanceCursor(chain, "USDC", b)), unbounded)
          answers.forEach((answer, i) => assert.isAtLeast(answer, blocks[i]!))
          assert.strictEqual(yield* store.cursor(chain, "USDC"), Math.max(...blocks))
        }))
    })

    describe("transfers", () => {
      it.effect("are kept once per (chain, tx hash, log index), exactly (amounts beyond 2^53)", () =>
        Effect.gen(function*() {
          const store = yield* DepositWatchStore
          const chain = freshChain()
          const first = transfer(chain, { amount: 10n ** 30n + 1n })
          assert.strictEqual(yield* store.saveTransfer(first), "new")
          assert.strictEqual(yield* store.saveTransfer(first), "unchanged")
          assert.deepStrictEqual(yield* store.getTransfer(chain, first.tx_hash, 0), { ...first, applied: false })
          // Another log of the same transaction is another transfer.
          const second = { ...first, log_index: 1, amount: 5n }
          assert.strictEqual(yield* store.saveTransfer(second), "new")
          // The same hash on another chain is another transfer.
          const elsewhere = { ...first, chain: freshChain() }
          assert.strictEqual(yield* store.saveTransfer(elsewhere), "new")
          assert.deepStrictEqual(yield* store.unapplied(chain, "USDC"), [
            { ...first, applied: false },
            { ...second, applied: false }
          ])
          assert.isUndefined(yield* store.getTransfer(chain, first.tx_hash, 2))
        }))

      it.effect("a non-positive amount is a defect and keeps nothing", () =>
        Effect.gen(function*() {
          const store = yield* DepositWatchStore
          const chain = freshChain()
          for (const amount of [0n, -1n]) {
            const t = transfer(chain, { amount })
            yield* assertDies(store.saveTransfer(t), `amount ${amount}`)
            assert.isUndefined(yield* store.getTransfer(chain, t.tx_hash, 0))
          }
        }))

      it.effect("an unapplied one seen in another block moves to it; an applied one never does", () =>
        Effect.gen(function*() {
          const store = yield* DepositWatchStore
          const chain = freshChain()
          const t = transfer(chain)
          yield* store.saveTransfer(t)
          const remined = { ...t, block_number: 101, block_hash: `0x${randomHex(32)}`, at: at(2_000) }
          assert.strictEqual(yield* store.saveTransfer(remined), "moved")
          assert.deepStrictEqual(yield* store.getTransfer(chain, t.tx_hash, 0), { ...remined, applied: false })
          // Mined again at the same height, in another block.
          const sameHeight = { ...remined, block_hash: `0x${randomHex(32)}` }
          assert.strictEqual(yield* store.saveTransfer(sameHeight), "moved")
          assert.deepStrictEqual(yield* store.unapplied(chain, "USDC"), [{ ...sameHeight, applied: false }])
          assert.deepStrictEqual(yield* store.transfersTo(t.to), [{ ...sameHeight, applied: false }])
          assert.isFalse(yield* store.markApplied(chain, t.tx_hash, 0, remined.block_hash))
          assert.isTrue(yield* store.markApplied(chain, t.tx_hash, 0, sameHeight.block_hash))
          assert.strictEqual(yield* store.saveTransfer(t), "unchanged")
          assert.deepStrictEqual(yield* store.getTransfer(chain, t.tx_hash, 0), { ...sameHeight, applied: true })
          assert.deepStrictEqual(yield* store.transfersTo(t.to), [{ ...sameHeight, applied: true }])
        }))

      it.effect("are applied once, only from the block the caller checked, and then never dropped", () =>
        Effect.gen(function*() {
          const store = yield* DepositWatchStore
          const chain = freshChain()
          const t = transfer(chain)
          yield* store.saveTransfer(t)
          assert.isFalse(yield* store.markApplied(chain, t.tx_hash, 0, `0x${randomHex(32)}`))
          assert.isFalse(yield* store.markApplied(chain, t.tx_hash, 1, t.block_hash))
          const answers = yield* Effect.all(Array.from({ length: 20 }, () => store.markApplied(chain, t.tx_hash, 0, t.block_hash)), unbounded)
          assert.strictEqual(answers.filter(Boolean).length, 1)
          assert.isFalse(yield* store.dropTransfer(chain, t.tx_hash, 0, t.block_hash))
          assert.deepStrictEqual(yield* store.getTransfer(chain, t.tx_hash, 0), { ...t, applied: true })
          assert.deepStrictEqual(yield* store.unapplied(chain, "USDC"), [])
        }))

      it.effect("are dropped once, only from the block the caller checked, and may be seen again after", () =>
        Effect.gen(function*() {
          const store = yield* DepositWatchStore
          const chain = freshChain()
          const t = transfer(chain)
          yield* store.saveTransfer(t)
          assert.isFalse(yield* store.dropTransfer(chain, t.tx_hash, 0, `0x${randomHex(32)}`))
          const answers = yield* Effect.all(Array.from({ length: 20 }, () => store.dropTransfer(chain, t.tx_hash, 0, t.block_hash)), unbounded)
          assert.strictEqual(answers.filter(Boolean).length, 1)
          assert.isUndefined(yield* store.getTransfer(chain, t.tx_hash, 0))
          assert.isFalse(yield* store.markApplied(chain, t.tx_hash, 0, t.block_hash))
          assert.deepStrictEqual(yield* store.unapplied(chain, "USDC"), [])
          assert.strictEqual(yield* store.saveTransfer(t), "new")
        }))

      it.effect("of a concurrent apply and drop of one transfer exactly one happens", () =>
        Effect.gen(function*() {
          const store = yield* DepositWatchStore
          const chain = freshChain()
          const transfers = Array.from({ length: 10 }, (_, i) => transfer(chain, { log_index: i }))
          for (const t of transfers) yield* store.saveTransfer(t)
          const results = yield* Effect.all(
            transfers.map((t) =>
              Effect.all([
                store.markApplied(chain, t.tx_hash, t.log_index, t.block_hash),
                store.dropTransfer(chain, t.tx_hash, t.log_index, t.block_hash)
              ], unbounded)
            ),
            unbounded
          )
          for (const [i, [applied, dropped]] of results.entries()) {
            assert.notStrictEqual(applied, dropped, `transfer ${i}`)
            const kept = yield* store.getTransfer(chain, transfers[i]!.tx_hash, i)
            assert.strictEqual(kept?.applied, applied ? true : undefined)
          }
        }))

      it.effect("unapplied lists one chain and token, lowest block first; transfersTo lists an address's, applied or not", () =>
        Effect.gen(function*() {
          const store = yield* DepositWatchStore
          const chain = freshChain()
          const to = `0x${randomHex(20)}`
          const high = transfer(chain, { block_number: 120, to })
          const low = transfer(chain, { block_number: 90, to })
          const lowSecond = { ...low, log_index: 3, amount: 1n }
          const otherToken = transfer(chain, { token: "USDT", block_number: 10, to })
          const elsewhere = transfer(chain, { block_number: 50 })
          for (const t of [high, lowSecond, low, otherToken, elsewhere]) yield* store.saveTransfer(t)
          yield* store.markApplied(chain, high.tx_hash, 0, high.block_hash)
          const unapplied = (t: SeenTransfer) => ({ ...t, applied: false })
          assert.deepStrictEqual(yield* store.unapplied(chain, "USDC"), [unapplied(elsewhere), unapplied(low), unapplied(lowSecond)])
          assert.deepStrictEqual(yield* store.unapplied(chain, "USDT"), [unapplied(otherToken)])
          assert.deepStrictEqual(yield* store.transfersTo(to), [
            unapplied(otherToken),
            unapplied(low),
            unapplied(lowSecond),
            { ...high, applied: true }
          ])
        }))
    })
  })
