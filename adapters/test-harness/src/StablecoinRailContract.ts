/**
 * The contract of a stablecoin rail (core/src/payments/StablecoinRail.ts) as a buyer sees it through
 * Orders: every rail runs it with a harness that puts transfers on its chain and lets the chain
 * deliver them. The simulated chain delivers at once (adapters/test-harness/test/SimulatedRail.test.ts);
 * an EVM chain mines the confirmations and a watcher passes (adapters/evm/test/EvmRail.contract.test.ts).
 * Amounts are in base units of 6-decimal tokens: the harness's chain accepts USDC and USDT.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, type Scope } from "effect"
import type { Caller } from "@model-platform/core/keys"
import type { Orders } from "@model-platform/core/payments"
import { Time } from "@model-platform/core/kernel"

export interface RailHarness {
  /** The chain the catalogue's options name. */
  readonly chain: string
  /** The Orders service over the rail (and its stores). */
  readonly orders: Orders["Service"]
  /** Credits posted to an account (micro-credits). */
  readonly credits: (accountId: string) => Effect.Effect<bigint>
  /** Puts a transfer of `amount` base units of `token` to `to` on the chain. */
  readonly send: (to: string, token: "USDC" | "USDT", amount: bigint) => Effect.Effect<void>
  /** Lets the chain deliver everything sent so far (confirmations, a watcher's pass). */
  readonly deliver: Effect.Effect<void>
}

const UNIT = 1_000_000n
const CREDITS_PER_USD = 1_000n * 1_000_000n

const caller = (): Caller => {
  const id = `acct_${crypto.randomUUID()}`
  const now = Time.toTimestamp(Date.now())
  return {
    account: { id, email: `${id}@rail.test`, created_at: now },
    key: {
      id: `key_${id}`, account_id: id, name: "rail", prefix: "mpk_test", secret_hash: `hash_${id}`,
      permissions: ["inference", "read", "manage"], machine_id: null, subscription_id: null, rental_id: null,
      agent_id: null, created_at: now, last_used_at: null, revoked_at: null
    }
  }
}

export const stablecoinRailContract = (name: string, makeHarness: Effect.Effect<RailHarness, never, Scope.Scope>): void => {
  describe(name, () => {
    const withHarness = (test: (h: RailHarness) => Effect.Effect<void>) =>
      () => Effect.scoped(Effect.flatMap(makeHarness, test))

    /** A credits order of `usd`, paying with `token`: its buyer, id and deposit. */
    const open = (h: RailHarness, usd: number, token: "USDC" | "USDT" = "USDC") =>
      Effect.gen(function*() {
        const buyer = caller()
        const order = yield* h.orders.create(buyer, { type: "credits", amount_usd: usd })
        const paying = yield* h.orders.pay(buyer, order.id, { method: "stablecoin", chain: h.chain, token })
        if (paying.payment.method !== "stablecoin") return yield* Effect.die(new Error("no deposit"))
        return { buyer, id: order.id, deposit: paying.payment.deposit }
      }).pipe(Effect.orDie)

    const status = (h: RailHarness, o: { readonly buyer: Caller; readonly id: string }) =>
      Effect.map(Effect.orDie(h.orders.get(o.buyer, o.id)), (order) => order.status)

    it.live("each order gets its own address with the exact amount and no memo; paying again keeps it", withHarness((h) =>
      Effect.gen(function*() {
        const opened = yield* Effect.forEach([25, 25, 10], (usd) => open(h, usd))
        assert.strictEqual(new Set(opened.map((o) => o.deposit.address)).size, 3)
        for (const o of opened) {
          assert.match(o.deposit.address, /^0x[0-9a-fA-F]{40}$/)
          assert.isNull(o.deposit.memo)
          assert.deepInclude(o.deposit, { chain: h.chain, token: "USDC" })
        }
        assert.deepStrictEqual(opened.map((o) => o.deposit.amount), ["25.000000", "25.000000", "10.000000"])
        const again = yield* Effect.orDie(h.orders.pay(opened[0]!.buyer, opened[0]!.id, { method: "stablecoin", chain: h.chain, token: "USDC" }))
        assert.deepStrictEqual(again.payment, { method: "stablecoin", deposit: opened[0]!.deposit })
      })), 60_000)

    it.live("an exact deposit pays the order once; delivering again changes nothing", withHarness((h) =>
      Effect.gen(function*() {
        const o = yield* open(h, 25)
        yield* h.send(o.deposit.address, "USDC", 25n * UNIT)
        yield* h.deliver
        assert.strictEqual(yield* status(h, o), "paid")
        yield* h.deliver
        assert.strictEqual(yield* h.credits(o.buyer.account.id), 25n * CREDITS_PER_USD)
        assert.lengthOf((yield* h.orders.receipts(o.buyer)).data, 1)
      })), 60_000)

    it.live("a short deposit leaves the order pending with what remains; the next completes it", withHarness((h) =>
      Effect.gen(function*() {
        const o = yield* open(h, 25)
        yield* h.send(o.deposit.address, "USDC", 4n * UNIT)
        yield* h.deliver
        assert.strictEqual(yield* status(h, o), "pending")
        assert.deepInclude(yield* Effect.orDie(h.orders.deposits(o.id)), { received: "4.000000", remaining: "21.000000" })
        yield* h.send(o.deposit.address, "USDC", 21n * UNIT)
        yield* h.deliver
        assert.strictEqual(yield* status(h, o), "paid")
        assert.strictEqual(yield* h.credits(o.buyer.account.id), 25n * CREDITS_PER_USD)
      })), 60_000)

    it.live("an excess pays the order, and the excess is owed back", withHarness((h) =>
      Effect.gen(function*() {
        const o = yield* open(h, 10)
        yield* h.send(o.deposit.address, "USDC", 12n * UNIT)
        yield* h.deliver
        assert.strictEqual(yield* status(h, o), "paid")
        assert.deepInclude(yield* Effect.orDie(h.orders.deposits(o.id)), { received: "12.000000", refund_due: "2.000000" })
        assert.strictEqual(yield* h.credits(o.buyer.account.id), 10n * CREDITS_PER_USD)
      })), 60_000)

    it.live("the other accepted token sent to the address pays nothing and is owed back", withHarness((h) =>
      Effect.gen(function*() {
        const o = yield* open(h, 25)
        yield* h.send(o.deposit.address, "USDT", 25n * UNIT)
        yield* h.deliver
        assert.strictEqual(yield* status(h, o), "pending")
        const summary = yield* Effect.orDie(h.orders.deposits(o.id))
        assert.deepStrictEqual(summary.other_assets.map((a) => [a.token, a.amount]), [["USDT", "25000000"]])
        assert.strictEqual(yield* h.credits(o.buyer.account.id), 0n)
      })), 60_000)
  })
}
