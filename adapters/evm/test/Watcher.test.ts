/**
 * The deposit watcher (core/src/payments/DepositWatcher.ts) on a real chain: anvil from npm, started
 * once for this file, with the 6-decimal test tokens deployed, the "evm" rail handing out
 * addresses from a fresh xpub and viem reading the chain. Each test opens its own orders on the
 * memory stores; a pass runs when the test says, and blocks are mined when the test says, so every
 * confirmation is the test's. 3 confirmations are required unless a test says otherwise.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Context, Effect } from "effect"
import { createWalletClient, encodeFunctionData, http, type Address, type Hash } from "viem"
import { foundry } from "viem/chains"
import {
  DepositWatcher,
  DepositWatchStore,
  Orders,
  OrderStore,
  transferId,
  type WatchReport
} from "@model-platform/core/payments"
import { LedgerStore } from "@model-platform/core/ledger"
import { CHAIN, useLocalChain } from "../src/LocalChainFixture.ts"
import { TEST_TOKEN_ABI } from "../src/LocalChain.ts"
import { makeCaller, makeWorld, type Process } from "./evmWorld.ts"

const fixture = useLocalChain()
const CONFIRMATIONS = 3
const USDC = (n: number) => BigInt(n) * 1_000_000n

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

/** A world, a process, and helpers over them. */
const setup = Effect.fnUntraced(function*(confirmations = CONFIRMATIONS) {
  const f = fixture()
  const world = yield* makeWorld(f, confirmations)
  const main = yield* world.process()
  const inProcess = <A, E>(context: Context.Context<Process>, effect: Effect.Effect<A, E, Process>) =>
    Effect.provide(effect, context)
  const pass = (context: Context.Context<Process> = main) =>
    Effect.map(inProcess(context, Effect.flatMap(Effect.service(DepositWatcher), (w) => w.pass)), (reports) => {
      for (const r of reports) assert.isNull(r.error, `${r.token}: ${r.error}`)
      return reports
    })
  const usdcReport = (reports: ReadonlyArray<WatchReport>) => reports.find((r) => r.token === "USDC")!
  /** A credits order of `usd` awaiting USDC (or `token`) at its own address. */
  const openOrder = (usd: number, token = "USDC") =>
    inProcess(main, Effect.gen(function*() {
      const orders = yield* Orders
      const caller = makeCaller()
      const order = yield* orders.create(caller, { type: "credits", amount_usd: usd })
      const paying = yield* orders.pay(caller, order.id, { method: "stablecoin", chain: CHAIN, token })
      if (paying.payment.method !== "stablecoin") return assert.fail("no deposit")
      return { caller, id: order.id, address: paying.payment.deposit.address as Address, amount: paying.payment.deposit.amount }
    }).pipe(Effect.orDie))
  const orderNow = (o: { readonly caller: ReturnType<typeof makeCaller>; readonly id: string }) =>
    inProcess(main, Effect.flatMap(Effect.service(Orders), (orders) => orders.get(o.caller, o.id)).pipe(Effect.orDie))
  const deposits = (id: string) => inProcess(main, Effect.flatMap(Effect.service(Orders), (orders) => orders.deposits(id)).pipe(Effect.orDie))
  /** Credits posted to the account (micro-credits). */
  const credits = (accountId: string) =>
    inProcess(main, Effect.map(Effect.flatMap(Effect.service(LedgerStore), (l) => l.balances(accountId)), (bs) => bs.reduce((s, b) => s + b.posted, 0n)))
  const receipts = (accountId: string) => inProcess(main, Effect.flatMap(Effect.service(OrderStore), (s) => s.listReceipts(accountId)))
  const send = (token: Address, to: Address | string, amount: bigint) => promise(() => f.chain.transfer(token, 1, to, amount))
  const mine = (blocks: number) => promise(() => f.chain.mine(blocks))
  return { f, world, main, pass, usdcReport, openOrder, orderNow, deposits, credits, receipts, send, mine, inProcess }
})

const CREDITS_PER_USD = 1_000n * 1_000_000n

describe("the deposit watcher on anvil", () => {
  it.live("an exact deposit pays the order only at the Nth confirmation, once", () =>
    Effect.scoped(Effect.gen(function*() {
      const t = yield* setup()
      const order = yield* t.openOrder(25)
      assert.match(order.address, /^0x[0-9a-fA-F]{40}$/)
      assert.strictEqual(order.amount, "25.000000")
      const sent = yield* t.send(t.f.tokens.USDC, order.address, USDC(25))

      // Mined: 1 confirmation, then 2: seen, not applied.
      for (const expected of [1, 2]) {
        const report = t.usdcReport(yield* t.pass())
        assert.deepInclude(report, { applied: 0, awaiting: 1 }, `at ${expected} confirmation(s)`)
        assert.strictEqual((yield* t.orderNow(order)).status, "pending")
        assert.strictEqual(yield* t.credits(order.caller.account.id), 0n)
        yield* t.mine(1)
      }
      // The 3rd.
      const third = t.usdcReport(yield* t.pass())
      assert.deepInclude(third, { applied: 1, awaiting: 0 })
      const paid = yield* t.orderNow(order)
      assert.strictEqual(paid.status, "paid")
      assert.strictEqual(yield* t.credits(order.caller.account.id), 25n * CREDITS_PER_USD)
      assert.lengthOf(yield* t.receipts(order.caller.account.id), 1)
      const summary = yield* t.deposits(order.id)
      assert.deepInclude(summary, { received: "25.000000", remaining: "0.000000", refund_due: "0.000000" })
      assert.deepStrictEqual(summary.deposits.map((d) => [d.tx, d.outcome]), [[transferId(sent.hash, 0), "counted"]])
      // The cursor passed the block; later passes change nothing.
      assert.isAtLeast(third.cursor!, Number(sent.blockNumber))
      yield* t.mine(5)
      assert.deepInclude(t.usdcReport(yield* t.pass()), { seen: 0, applied: 0, awaiting: 0 })
      assert.strictEqual(yield* t.credits(order.caller.account.id), 25n * CREDITS_PER_USD)
      assert.lengthOf(yield* t.receipts(order.caller.account.id), 1)
    })), 60_000)

  it.live("an under-payment leaves the order pending, showing what was received, until a top-up completes it", () =>
    Effect.scoped(Effect.gen(function*() {
      const t = yield* setup()
      const order = yield* t.openOrder(25)
      yield* t.send(t.f.tokens.USDC, order.address, USDC(10))
      yield* t.mine(CONFIRMATIONS - 1)
      yield* t.pass()
      assert.strictEqual((yield* t.orderNow(order)).status, "pending")
      assert.deepInclude(yield* t.deposits(order.id), { received: "10.000000", remaining: "15.000000", refund_due: "0.000000" })
      assert.strictEqual(yield* t.credits(order.caller.account.id), 0n)

      yield* t.send(t.f.tokens.USDC, order.address, USDC(15))
      yield* t.mine(CONFIRMATIONS - 1)
      yield* t.pass()
      assert.strictEqual((yield* t.orderNow(order)).status, "paid")
      assert.deepInclude(yield* t.deposits(order.id), { received: "25.000000", remaining: "0.000000", refund_due: "0.000000" })
      assert.strictEqual(yield* t.credits(order.caller.account.id), 25n * CREDITS_PER_USD)
    })), 60_000)

  it.live("an over-payment pays the order and records the excess as owed back", () =>
    Effect.scoped(Effect.gen(function*() {
      const t = yield* setup()
      const order = yield* t.openOrder(25)
      yield* t.send(t.f.tokens.USDC, order.address, USDC(30))
      yield* t.mine(CONFIRMATIONS - 1)
      yield* t.pass()
      assert.strictEqual((yield* t.orderNow(order)).status, "paid")
      assert.deepInclude(yield* t.deposits(order.id), { received: "30.000000", refund_due: "5.000000" })
      assert.strictEqual(yield* t.credits(order.caller.account.id), 25n * CREDITS_PER_USD)
    })), 60_000)

  it.live("a token nobody accepts, or a transfer to an address of no order, is ignored; the other accepted token is recorded as owed back", () =>
    Effect.scoped(Effect.gen(function*() {
      const t = yield* setup()
      const order = yield* t.openOrder(25)
      yield* t.send(t.f.tokens.OTHER, order.address, USDC(25))
      yield* t.send(t.f.tokens.USDC, t.f.chain.account(7).address, USDC(25))
      yield* t.mine(CONFIRMATIONS - 1)
      const reports = yield* t.pass()
      assert.deepStrictEqual(reports.map((r) => [r.token, r.seen, r.applied]), [["USDC", 0, 0], ["USDT", 0, 0]])
      assert.strictEqual((yield* t.orderNow(order)).status, "pending")
      assert.deepInclude(yield* t.deposits(order.id), { received: "0.000000", deposits: [], other_assets: [] })

      const usdt = yield* t.send(t.f.tokens.USDT, order.address, USDC(25))
      yield* t.mine(CONFIRMATIONS - 1)
      const after = yield* t.pass()
      assert.deepStrictEqual(after.map((r) => [r.token, r.applied]), [["USDC", 0], ["USDT", 1]])
      assert.strictEqual((yield* t.orderNow(order)).status, "pending")
      assert.deepStrictEqual((yield* t.deposits(order.id)).other_assets, [
        { chain: CHAIN, token: "USDT", amount: "25000000", tx: transferId(usdt.hash, 0) }
      ])
      assert.strictEqual(yield* t.credits(order.caller.account.id), 0n)
    })), 60_000)
})

describe("reorgs", () => {
  /** Signs (without sending) a USDC transfer from anvil's account 2, funded first. */
  const signedTransfer = (rpcUrl: string, token: Address, to: Address, amount: bigint, chain: ReturnType<typeof fixture>["chain"]) =>
    Effect.promise(async () => {
      const from = chain.account(2)
      await chain.mint(token, from.address, amount)
      const wallet = createWalletClient({ chain: foundry, transport: http(rpcUrl), account: from })
      const request = await wallet.prepareTransactionRequest({
        to: token,
        data: encodeFunctionData({ abi: TEST_TOKEN_ABI, functionName: "transfer", args: [to, amount] })
      })
      return await wallet.signTransaction(request)
    })

  it.live("a reorg before the Nth confirmation leaves the order unpaid; the transfer mined again then pays it, once", () =>
    Effect.scoped(Effect.gen(function*() {
      const t = yield* setup()
      const order = yield* t.openOrder(25)
      const raw = yield* signedTransfer(t.f.rpcUrl, t.f.tokens.USDC, order.address, USDC(25), t.f.chain)
      const hash: Hash = yield* promise(() => t.f.chain.client.sendRawTransaction({ serializedTransaction: raw }))
      const first = yield* promise(() => t.f.chain.client.waitForTransactionReceipt({ hash, pollingInterval: 20 }))
      yield* t.mine(1)
      assert.deepInclude(t.usdcReport(yield* t.pass()), { seen: 1, awaiting: 1 })

      // The two newest blocks (the transfer's and one on top) are replaced by empty ones.
      yield* promise(() => t.f.chain.reorg(2))
      yield* t.mine(CONFIRMATIONS)
      assert.deepInclude(t.usdcReport(yield* t.pass()), { dropped: 1, applied: 0, awaiting: 0 })
      assert.strictEqual((yield* t.orderNow(order)).status, "pending")
      const store = yield* t.inProcess(t.main, Effect.service(DepositWatchStore))
      assert.isUndefined(yield* store.getTransfer(CHAIN, hash, 0))
      assert.strictEqual(yield* t.credits(order.caller.account.id), 0n)

      // The same signed transaction mined again, in another block.
      yield* promise(() => t.f.chain.client.sendRawTransaction({ serializedTransaction: raw }))
      const again = yield* promise(() => t.f.chain.client.waitForTransactionReceipt({ hash, pollingInterval: 20 }))
      assert.notStrictEqual(again.blockHash, first.blockHash)
      yield* t.pass()
      assert.strictEqual((yield* t.orderNow(order)).status, "pending")
      yield* t.mine(CONFIRMATIONS - 1)
      assert.deepInclude(t.usdcReport(yield* t.pass()), { applied: 1 })
      assert.strictEqual((yield* t.orderNow(order)).status, "paid")
      assert.strictEqual(yield* t.credits(order.caller.account.id), 25n * CREDITS_PER_USD)
      const kept = yield* store.getTransfer(CHAIN, hash, 0)
      assert.deepInclude(kept, { applied: true, block_hash: again.blockHash, block_number: Number(again.blockNumber) })
    })), 60_000)

  it.live("a rollback (the chain shorter than the transfer's block) drops the transfer, and the cursor stays below its block", () =>
    Effect.scoped(Effect.gen(function*() {
      const t = yield* setup()
      const order = yield* t.openOrder(25)
      const sent = yield* t.send(t.f.tokens.USDC, order.address, USDC(25))
      assert.deepInclude(t.usdcReport(yield* t.pass()), { seen: 1, awaiting: 1 })
      yield* promise(() => t.f.chain.rollback(1))
      const report = t.usdcReport(yield* t.pass())
      assert.deepInclude(report, { dropped: 1, applied: 0 })
      assert.isBelow(report.cursor!, Number(sent.blockNumber))
      yield* t.mine(CONFIRMATIONS)
      yield* t.pass()
      assert.strictEqual((yield* t.orderNow(order)).status, "pending")
      assert.strictEqual(yield* t.credits(order.caller.account.id), 0n)
    })), 60_000)
})

describe("restarts, racing watchers and expired orders", () => {
  it.live("a watcher that dies between paying and marking a transfer applied is finished by the next, without double credit", () =>
    Effect.scoped(Effect.gen(function*() {
      const t = yield* setup()
      // This process's store dies when it marks a transfer applied: the order is paid, the pass cut short.
      const dying = yield* t.world.process((stores) => {
        const store = Context.get(stores, DepositWatchStore)
        return Context.add(stores, DepositWatchStore, { ...store, markApplied: () => Effect.die(new Error("killed")) })
      })
      const order = yield* t.openOrder(25)
      const sent = yield* t.send(t.f.tokens.USDC, order.address, USDC(25))
      yield* t.mine(CONFIRMATIONS - 1)
      const cut = yield* Effect.exit(t.pass(dying))
      assert.isTrue(cut._tag === "Failure")
      assert.strictEqual((yield* t.orderNow(order)).status, "paid")
      const store = yield* t.inProcess(t.main, Effect.service(DepositWatchStore))
      const cursorAfterCut = yield* store.cursor(CHAIN, "USDC")
      assert.isTrue(cursorAfterCut === undefined || cursorAfterCut < Number(sent.blockNumber))

      // The next start rescans from the cursor, finds the transfer again and finishes it.
      const restarted = yield* t.world.process()
      const report = t.usdcReport(yield* t.pass(restarted))
      assert.deepInclude(report, { applied: 1 })
      assert.isAtMost(report.scanned!.from, Number(sent.blockNumber))
      assert.isAtLeast(report.cursor!, Number(sent.blockNumber))
      assert.deepInclude(yield* store.getTransfer(CHAIN, sent.hash, 0), { applied: true })
      assert.strictEqual(yield* t.credits(order.caller.account.id), 25n * CREDITS_PER_USD)
      assert.lengthOf(yield* t.receipts(order.caller.account.id), 1)
      assert.lengthOf((yield* t.deposits(order.id)).deposits, 1)
    })), 60_000)

  it.live("two watchers racing over the same transfers apply each once and pay each order once", () =>
    Effect.scoped(Effect.gen(function*() {
      const t = yield* setup()
      const other = yield* t.world.process()
      const orders = yield* Effect.forEach([25, 10, 40], (usd) => t.openOrder(usd))
      for (const [i, o] of orders.entries()) yield* t.send(t.f.tokens.USDC, o.address, USDC([25, 10, 40][i]!))
      yield* t.mine(CONFIRMATIONS - 1)
      const reports = yield* Effect.all([t.pass(), t.pass(other), t.pass(), t.pass(other)], { concurrency: "unbounded" })
      assert.strictEqual(reports.map(t.usdcReport).reduce((n, r) => n + r.applied, 0), 3)
      for (const [i, o] of orders.entries()) {
        assert.strictEqual((yield* t.orderNow(o)).status, "paid")
        assert.strictEqual(yield* t.credits(o.caller.account.id), BigInt([25, 10, 40][i]!) * CREDITS_PER_USD)
        assert.lengthOf(yield* t.receipts(o.caller.account.id), 1)
        assert.lengthOf((yield* t.deposits(o.id)).deposits, 1)
      }
    })), 60_000)

  it.live("a deposit mined after the order's window closed is recorded as late and owed back, never credited", () =>
    Effect.scoped(Effect.gen(function*() {
      const t = yield* setup()
      // The order was opened 25 hours ago: its 24-hour window closed an hour ago.
      const past = shiftedClock(-25 * 60 * 60 * 1000)
      const order = yield* Effect.provideService(t.openOrder(25), Clock.Clock, past)
      assert.strictEqual((yield* t.orderNow(order)).status, "expired")
      const sent = yield* t.send(t.f.tokens.USDC, order.address, USDC(25))
      yield* t.mine(CONFIRMATIONS - 1)
      assert.deepInclude(t.usdcReport(yield* t.pass()), { applied: 1 })
      assert.strictEqual((yield* t.orderNow(order)).status, "expired")
      const summary = yield* t.deposits(order.id)
      assert.deepInclude(summary, { received: "25.000000", remaining: "0.000000", refund_due: "25.000000" })
      assert.deepStrictEqual(summary.deposits.map((d) => [d.tx, d.outcome]), [[transferId(sent.hash, 0), "late"]])
      assert.strictEqual(yield* t.credits(order.caller.account.id), 0n)
    })), 60_000)
})

/** The system clock moved by `offset` ms (an order made in the past). */
const shiftedClock = (offset: number): Clock.Clock => {
  const system = Effect.runSync(Clock.clockWith(Effect.succeed))
  const now = () => system.currentTimeMillisUnsafe() + offset
  const nanos = () => system.currentTimeNanosUnsafe() + BigInt(offset) * 1_000_000n
  return {
    currentTimeMillisUnsafe: now,
    currentTimeMillis: Effect.sync(now),
    currentTimeNanosUnsafe: nanos,
    currentTimeNanos: Effect.sync(nanos),
    monotonicTimeNanosUnsafe: () => system.monotonicTimeNanosUnsafe(),
    monotonicTimeNanos: system.monotonicTimeNanos,
    sleep: (duration) => system.sleep(duration)
  }
}
