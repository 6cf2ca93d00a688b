/**
 * The property of the deposit watcher (core/src/payments/DepositWatcher.ts, docs/payments.md
 * "Stablecoin on an EVM chain"), on any stores: for any chain history of transfers to an order's
 * address, blocks mined and reorgs shallower than the confirmations (re-mining their transfers or
 * dropping them), watched by 1 to 3 processes whose passes run concurrently with the chain's
 * changes, in any interleaving of their store and chain operations (a fast-check scheduler gates
 * each), the order is credited at most once at every moment, its cursor never moves back, and once
 * the chain settles and a last pass runs: exactly the transfers on the chain are recorded, each
 * once, and the order is paid (and credited once, with one receipt) exactly when they cover it.
 */
import { assert, layer } from "@effect/vitest"
import { Catalogue } from "@model-platform/core/catalogue"
import type { CatalogueConfig } from "@model-platform/core/catalogue"
import {
  ChainReader,
  DepositWatcher,
  DepositWatchStore,
  Orders,
  OrderStore,
  StablecoinRail,
  TestCardProcessor
} from "@model-platform/core/payments"
import { Ledger, LedgerStore } from "@model-platform/core/ledger"
import type { Caller } from "@model-platform/core/keys"
import type { PlanStore } from "@model-platform/core/plans"
import { Time } from "@model-platform/core/kernel"
import { Context, Effect, Layer } from "effect"
import fc from "fast-check"
import { makeFakeChain } from "./FakeChain.ts"
import { propertyCatalogue } from "./PropertyCatalogue.ts"

export type DepositWatchStores = OrderStore | LedgerStore | PlanStore | DepositWatchStore

const CONTRACT = "0x00000000000000000000000000000000000000aa"
const CONFIRMATIONS = 3
const ORDER_USD = 25
const UNIT = 1_000_000n

/** A chain of its own per scenario: the stores (and their cursors) outlive each scenario. */
const catalogueFor = (CHAIN: string): CatalogueConfig => ({
  ...propertyCatalogue,
  payments: {
    card: null,
    stablecoin: {
      processor: "evm",
      options: [{ chain: CHAIN, token: "USDC", decimals: 6, contract: CONTRACT }],
      evm: { [CHAIN]: { confirmations: CONFIRMATIONS, rpc_url_env: "UNUSED", xpub_env: "UNUSED", start_block: 0 } }
    },
    charging_starts_at: null
  }
})

/** A rail like the "evm" one (an index of the store per address), without the key derivation. */
const railLayer = Layer.effect(
  StablecoinRail,
  Effect.map(Effect.service(DepositWatchStore), (store) =>
    StablecoinRail.of({
      processor: "evm",
      depositAddress: (orderId, chain, token) =>
        Effect.gen(function*() {
          const keyId = `prop-${crypto.randomUUID()}`
          const index = yield* store.allocateIndex(keyId)
          const address = `0x${crypto.randomUUID().replaceAll("-", "")}${index.toString(16).padStart(8, "0")}`
          yield* store.addAddress({ address, chain, token, order_id: orderId, key_id: keyId, index, opened_at: yield* Time.now })
          return { address, memo: null }
        })
    }))
)

const eventArb = fc.oneof(
  fc.record({ kind: fc.constant("send" as const), usd: fc.integer({ min: 1, max: 20 }) }),
  fc.record({ kind: fc.constant("mine" as const), blocks: fc.integer({ min: 1, max: 3 }) }),
  fc.record({ kind: fc.constant("reorg" as const), depth: fc.integer({ min: 1, max: CONFIRMATIONS - 1 }), remine: fc.boolean() })
)

const scenarioArb = fc.record({
  processes: fc.integer({ min: 1, max: 3 }),
  /** Each round: a chain event running alongside passes of the given processes. */
  rounds: fc.array(fc.record({ event: eventArb, passes: fc.array(fc.nat(), { minLength: 1, maxLength: 3 }) }), { minLength: 1, maxLength: 6 })
})

const caller = (): Caller => {
  const id = `acct_${crypto.randomUUID()}`
  const now = Time.toTimestamp(Date.now())
  return {
    account: { id, email: `${id}@watch.test`, created_at: now },
    key: {
      id: `key_${id}`, account_id: id, name: "prop", prefix: "mpk_test", secret_hash: `hash_${id}`,
      permissions: ["inference", "read", "manage"], machine_id: null, subscription_id: null, rental_id: null,
      agent_id: null, created_at: now, last_used_at: null, revoked_at: null
    }
  }
}

/** Declares the property on `stores` (built once); `numRuns` scenarios. */
export const depositWatchProperty = <E>(name: string, stores: Layer.Layer<DepositWatchStores, E>, numRuns: number): void =>
  layer(stores, { excludeTestServices: true, timeout: "300 seconds" })(name, (it) => {
    it.effect("racing watchers over reorgs pay once, exactly for the transfers on the chain (fast-check scheduler)", () =>
      Effect.gen(function*() {
        const shared = yield* Effect.context<DepositWatchStores>()
        const run = Effect.runPromiseWith(shared)
        yield* Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(fc.scheduler(), scenarioArb, (s, scenario) =>
              run(Effect.scoped(Effect.gen(function*() {
                const gate = <A, E2>(effect: Effect.Effect<A, E2>) => Effect.andThen(Effect.promise(() => s.schedule(Promise.resolve())), effect)
                const CHAIN = `fake-${crypto.randomUUID()}`
                const catalogue = catalogueFor(CHAIN)
                const chain = makeFakeChain(CHAIN, CONTRACT)
                const baseReader = Context.get(yield* Layer.build(chain.layer), ChainReader)
                const watch = yield* DepositWatchStore
                const orderStore = yield* OrderStore
                const gated = Layer.mergeAll(
                  Layer.succeed(ChainReader, ChainReader.of({
                    head: (c) => gate(baseReader.head(c)),
                    transfers: (q) => gate(baseReader.transfers(q)),
                    blockHash: (c, b) => gate(baseReader.blockHash(c, b))
                  })),
                  Layer.succeed(DepositWatchStore, DepositWatchStore.of({
                    ...watch,
                    saveTransfer: (t) => gate(watch.saveTransfer(t)),
                    unapplied: (c, t) => gate(watch.unapplied(c, t)),
                    markApplied: (...a) => gate(watch.markApplied(...a)),
                    dropTransfer: (...a) => gate(watch.dropTransfer(...a)),
                    advanceCursor: (...a) => gate(watch.advanceCursor(...a))
                  })),
                  Layer.succeed(OrderStore, OrderStore.of({
                    ...orderStore,
                    recordDeposit: (d) => gate(orderStore.recordDeposit(d)),
                    markPaid: (...a) => gate(orderStore.markPaid(...a))
                  }))
                )
                const processLayer = (reader: Layer.Layer<ChainReader>, watchStores: Layer.Layer<DepositWatchStore | OrderStore>) =>
                  DepositWatcher.layer.pipe(
                    Layer.provideMerge(Orders.layer.pipe(
                      Layer.provide(Layer.mergeAll(railLayer, TestCardProcessor.layer({ baseUrl: "https://platform.test" }))),
                      Layer.provide(Ledger.layer)
                    )),
                    Layer.provide(reader),
                    Layer.provide(watchStores),
                    Layer.provide(Catalogue.layer(catalogue))
                  )
                const ungated = Layer.mergeAll(chain.layer, Layer.succeed(DepositWatchStore, watch), Layer.succeed(OrderStore, orderStore))
                const processes = yield* Effect.forEach(
                  Array.from({ length: scenario.processes }),
                  () => Layer.build(processLayer(gated, gated).pipe(Layer.provide(Layer.succeedContext(shared))))
                )
                const settler = yield* Layer.build(processLayer(ungated, ungated).pipe(Layer.provide(Layer.succeedContext(shared))))

                const buyer = caller()
                const orders = Context.get(settler, Orders)
                const created = yield* orders.create(buyer, { type: "credits", amount_usd: ORDER_USD }).pipe(Effect.orDie)
                const paying = yield* orders.pay(buyer, created.id, { method: "stablecoin", chain: CHAIN, token: "USDC" }).pipe(Effect.orDie)
                if (paying.payment.method !== "stablecoin") return assert.fail("no deposit address")
                const address = paying.payment.deposit.address
                const orderCredits = BigInt(ORDER_USD) * 1_000n * 1_000_000n

                const credited = Effect.map(Effect.flatMap(Effect.service(LedgerStore), (l) => l.balances(buyer.account.id)), (bs) => bs.reduce((n, b) => n + b.posted, 0n))
                let lastCursor = -1
                const label = JSON.stringify(scenario)
                const checkNow = Effect.gen(function*() {
                  const credits = yield* credited
                  assert.isTrue(credits === 0n || credits === orderCredits, `credits ${credits}: ${label}`)
                  assert.isAtMost((yield* orderStore.listReceipts(buyer.account.id)).length, 1, label)
                  const cursor = (yield* watch.cursor(CHAIN, "USDC")) ?? -1
                  assert.isAtLeast(cursor, lastCursor, `the cursor moved back: ${label}`)
                  lastCursor = cursor
                })

                for (const round of scenario.rounds) {
                  const event = Effect.andThen(Effect.promise(() => s.schedule(Promise.resolve())), Effect.sync(() => {
                    const e = round.event
                    if (e.kind === "send") chain.send(address, BigInt(e.usd) * UNIT)
                    else if (e.kind === "mine") chain.mine(e.blocks)
                    else chain.reorg(e.depth, e.remine)
                  }))
                  const passes = round.passes.map((p) => Effect.flatMap(Effect.succeed(Context.get(processes[p % processes.length]!, DepositWatcher)), (w) => w.pass))
                  yield* Effect.promise(() => s.waitFor(run(Effect.all([event, ...passes], { concurrency: "unbounded" }))))
                  yield* checkNow
                }

                // The chain settles: everything on it confirmed; a last pass applies what is left.
                chain.mine(CONFIRMATIONS)
                yield* Context.get(settler, DepositWatcher).pass
                yield* Context.get(settler, DepositWatcher).pass
                yield* checkNow
                const onChain = chain.canonical()
                const sum = onChain.reduce((n, t) => n + t.amount, 0n)
                const summary = yield* orders.deposits(created.id).pipe(Effect.orDie)
                assert.deepStrictEqual(
                  summary.deposits.map((d) => d.tx.split(":")[0]).sort(),
                  onChain.map((t) => t.tx_hash).sort(),
                  `recorded transfers: ${label}`
                )
                const covered = sum >= BigInt(ORDER_USD) * UNIT
                assert.strictEqual(summary.status, covered ? "paid" : "pending", label)
                assert.strictEqual(yield* credited, covered ? orderCredits : 0n, label)
                assert.lengthOf(yield* orderStore.listReceipts(buyer.account.id), covered ? 1 : 0, label)
              })))),
            { numRuns }
          )
        )
      }))
  })
