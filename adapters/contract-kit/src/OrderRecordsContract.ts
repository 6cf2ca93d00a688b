/**
 * The order store contract (OrderContract.ts): what an order leaves behind, its tickets, its
 * receipts and the stablecoin transfers seen at its deposit address.
 */
import { assert, describe, type Vitest } from "@effect/vitest"
import { Effect } from "effect"
import { generateId } from "@model-platform/core/kernel"
import { OrderStore } from "@model-platform/core/payments"
import { assertDies } from "./ContractSupport.ts"
import {
  unbounded,
  makeTicket,
  makeReceipt,
  makeTransfer
} from "./OrderContractSupport.ts"
import { at, randomHexOf } from "./SampleRecords.ts"

// ---------------------------------------------------------------------------------------------
// tickets

export const ticketTests = (it: Vitest.MethodsNonLive<OrderStore>) =>
  describe("tickets", () => {
    it.effect("issue then get and ticketForOrder return every field", () =>
      Effect.gen(function*() {
        const store = yield* OrderStore
        const accountId = yield* generateId("acct")
        const ticket = yield* makeTicket(yield* generateId("ord"), accountId, {
          machine_id: "m-1",
          credits: 1_234_567n,
          created_at: at(7)
        })
        assert.deepStrictEqual(yield* store.issueTicket(ticket), ticket)
        assert.deepStrictEqual(yield* store.getTicket(ticket.code), ticket)
        assert.deepStrictEqual(yield* store.ticketForOrder(ticket.order_id), ticket)
        assert.isUndefined(yield* store.getTicket((yield* randomHexOf(10)).toUpperCase()))
        assert.isUndefined(yield* store.ticketForOrder(yield* generateId("ord")))
      }))

    it.effect("one ticket per order: a second issue returns the first and stores nothing", () =>
      Effect.gen(function*() {
        const store = yield* OrderStore
        const accountId = yield* generateId("acct")
        const orderId = yield* generateId("ord")
        const first = yield* makeTicket(orderId, accountId)
        const second = yield* makeTicket(orderId, accountId)
        assert.deepStrictEqual(yield* store.issueTicket(first), first)
        assert.deepStrictEqual(yield* store.issueTicket(second), first)
        assert.isUndefined(yield* store.getTicket(second.code))
        assert.deepStrictEqual(yield* store.ticketsBoughtBy(accountId), [first])
      }))

    it.effect("concurrent issues for one order store one ticket", () =>
      Effect.gen(function*() {
        const store = yield* OrderStore
        const accountId = yield* generateId("acct")
        const orderId = yield* generateId("ord")
        const tickets = yield* Effect.forEach(Array.from({ length: 20 }), () => makeTicket(orderId, accountId))
        const results = yield* Effect.all(tickets.map((t) => store.issueTicket(t)), unbounded)
        assert.strictEqual(new Set(results.map((t) => t.code)).size, 1)
        assert.deepStrictEqual(yield* store.ticketsBoughtBy(accountId), [results[0]!])
      }))

    it.effect("a code of another order is a defect", () =>
      Effect.gen(function*() {
        const store = yield* OrderStore
        const accountId = yield* generateId("acct")
        const ticket = yield* makeTicket(yield* generateId("ord"), accountId)
        yield* store.issueTicket(ticket)
        const clash = { ...ticket, order_id: yield* generateId("ord") }
        yield* assertDies(store.issueTicket(clash), "duplicate code")
        assert.isUndefined(yield* store.ticketForOrder(clash.order_id))
      }))

    it.effect("ticketsBoughtBy is per buyer, newest first", () =>
      Effect.gen(function*() {
        const store = yield* OrderStore
        const accountId = yield* generateId("acct")
        const t1 = yield* makeTicket(yield* generateId("ord"), accountId, { created_at: at(1) })
        const t3 = yield* makeTicket(yield* generateId("ord"), accountId, { created_at: at(3) })
        const t2 = yield* makeTicket(yield* generateId("ord"), accountId, { created_at: at(2) })
        const other = yield* makeTicket(yield* generateId("ord"), yield* generateId("acct"))
        for (const t of [t1, t3, t2, other]) yield* store.issueTicket(t)
        assert.deepStrictEqual(yield* store.ticketsBoughtBy(accountId), [t3, t2, t1])
        assert.deepStrictEqual(yield* store.ticketsBoughtBy(yield* generateId("acct")), [])
      }))

    it.effect("redeem: once; later calls see the redeemer; unknown codes are NotFound", () =>
      Effect.gen(function*() {
        const store = yield* OrderStore
        const ticket = yield* makeTicket(yield* generateId("ord"), yield* generateId("acct"))
        yield* store.issueTicket(ticket)
        const redeemer = yield* generateId("acct")
        const redeemed = { ...ticket, redeemed_by: redeemer, redeemed_at: at(50) }
        assert.deepStrictEqual(yield* store.redeemTicket(ticket.code, redeemer, at(50)), { _tag: "Redeemed", ticket: redeemed })
        assert.deepStrictEqual(
          yield* store.redeemTicket(ticket.code, yield* generateId("acct"), at(60)),
          { _tag: "AlreadyRedeemed", ticket: redeemed }
        )
        assert.deepStrictEqual(yield* store.redeemTicket(ticket.code, redeemer, at(70)), {
          _tag: "AlreadyRedeemed",
          ticket: redeemed
        })
        assert.deepStrictEqual(yield* store.getTicket(ticket.code), redeemed)
        assert.deepStrictEqual(yield* store.redeemTicket("NO-SUCH-CODE", redeemer, at(80)), { _tag: "NotFound" })
      }))

    it.effect("redeem: exactly one of 20 concurrent redemptions wins", () =>
      Effect.gen(function*() {
        const store = yield* OrderStore
        const ticket = yield* makeTicket(yield* generateId("ord"), yield* generateId("acct"))
        yield* store.issueTicket(ticket)
        const accounts = yield* Effect.forEach(Array.from({ length: 20 }), () => generateId("acct"))
        const results = yield* Effect.all(accounts.map((a, i) => store.redeemTicket(ticket.code, a, at(i))), unbounded)
        const winners = results.flatMap((r, i) => r._tag === "Redeemed" ? [i] : [])
        assert.strictEqual(winners.length, 1)
        const winner = winners[0]!
        const redeemed = { ...ticket, redeemed_by: accounts[winner]!, redeemed_at: at(winner) }
        for (const r of results) {
          assert.deepStrictEqual(r, r._tag === "Redeemed" ? { _tag: "Redeemed", ticket: redeemed } : {
            _tag: "AlreadyRedeemed",
            ticket: redeemed
          })
        }
        assert.deepStrictEqual(yield* store.getTicket(ticket.code), redeemed)
      }))
  })

// ---------------------------------------------------------------------------------------------
// receipts

export const receiptTests = (it: Vitest.MethodsNonLive<OrderStore>) =>
  describe("receipts", () => {
    it.effect("insert then get and list; one per order; per account, newest first", () =>
      Effect.gen(function*() {
        const store = yield* OrderStore
        const accountId = yield* generateId("acct")
        const r1 = yield* makeReceipt(accountId, { paid_at: at(1) })
        const r2 = yield* makeReceipt(accountId, {
          paid_at: at(2),
          kind: "package",
          title: "Starter ünï",
          paid_with: "stablecoin",
          auto_reload: true,
          counts_toward_tier: false,
          amount_cents: 123_456n,
          credits: 1n
        })
        const other = yield* makeReceipt(yield* generateId("acct"))
        for (const r of [r1, r2, other]) assert.strictEqual(yield* store.insertReceipt(r), "inserted")
        assert.strictEqual(yield* store.insertReceipt({ ...r1, id: yield* generateId("rcpt"), credits: 99n }), "exists")
        assert.deepStrictEqual(yield* store.listReceipts(accountId), [r2, r1])
        assert.deepStrictEqual(yield* store.getReceipt(accountId, r2.id), r2)
        assert.isUndefined(yield* store.getReceipt(accountId, other.id))
        assert.isUndefined(yield* store.getReceipt(accountId, yield* generateId("rcpt")))
      }))

    it.effect("concurrent inserts for one order store one receipt", () =>
      Effect.gen(function*() {
        const store = yield* OrderStore
        const accountId = yield* generateId("acct")
        const orderId = yield* generateId("ord")
        const receipts = yield* Effect.forEach(Array.from({ length: 20 }), () => makeReceipt(accountId, { order_id: orderId }))
        const results = yield* Effect.all(receipts.map((r) => store.insertReceipt(r)), unbounded)
        assert.strictEqual(results.filter((r) => r === "inserted").length, 1)
        assert.strictEqual((yield* store.listReceipts(accountId)).length, 1)
      }))

    it.effect("a duplicate receipt id for another order is a defect", () =>
      Effect.gen(function*() {
        const store = yield* OrderStore
        const accountId = yield* generateId("acct")
        const receipt = yield* makeReceipt(accountId)
        yield* store.insertReceipt(receipt)
        yield* assertDies(store.insertReceipt({ ...receipt, order_id: yield* generateId("ord") }), "duplicate receipt id")
        assert.deepStrictEqual(yield* store.listReceipts(accountId), [receipt])
      }))

    it.effect("purchasedCredits sums the account's credit and package receipts", () =>
      Effect.gen(function*() {
        const store = yield* OrderStore
        const accountId = yield* generateId("acct")
        assert.strictEqual(yield* store.purchasedCredits(accountId), 0n)
        yield* store.insertReceipt(yield* makeReceipt(accountId, { credits: 5_000_000n }))
        yield* store.insertReceipt(yield* makeReceipt(accountId, { kind: "package", credits: 7_000_001n }))
        yield* store.insertReceipt(yield* makeReceipt(accountId, { kind: "subscription", credits: 100_000_000n }))
        yield* store.insertReceipt(yield* makeReceipt(yield* generateId("acct"), { credits: 3n }))
        assert.strictEqual(yield* store.purchasedCredits(accountId), 12_000_001n)
      }))

    it.effect("purchasedCredits sums the receipts flagged counts_toward_tier, whatever their kind (core decides, the store sums)", () =>
      Effect.gen(function*() {
        const store = yield* OrderStore
        const accountId = yield* generateId("acct")
        const flaggedFalse = yield* makeReceipt(accountId, { kind: "credits", credits: 11_000_000n, counts_toward_tier: false })
        const flaggedTrue = yield* makeReceipt(accountId, { kind: "subscription", credits: 7_000_001n, counts_toward_tier: true })
        for (const r of [flaggedFalse, flaggedTrue]) assert.strictEqual(yield* store.insertReceipt(r), "inserted")
        yield* store.insertReceipt(yield* makeReceipt(accountId, { kind: "package", credits: 2_000_000n, counts_toward_tier: false }))
        yield* store.insertReceipt(yield* makeReceipt(accountId, { kind: "credits", credits: 5_000_000n, counts_toward_tier: true }))
        assert.strictEqual(yield* store.purchasedCredits(accountId), 12_000_001n)
        // The flag reads back as written.
        assert.strictEqual((yield* store.getReceipt(accountId, flaggedFalse.id))?.counts_toward_tier, false)
        assert.strictEqual((yield* store.getReceipt(accountId, flaggedTrue.id))?.counts_toward_tier, true)
      }))
  })

// ---------------------------------------------------------------------------------------------
// deposits

export const depositTests = (it: Vitest.MethodsNonLive<OrderStore>) =>
  describe("deposits", () => {
    it.effect("record then get and list; one per (chain, tx); in the order recorded", () =>
      Effect.gen(function*() {
        const store = yield* OrderStore
        const address = `0x${yield* randomHexOf(20)}`
        const d1 = yield* makeTransfer(address, { order_id: "ord_1", outcome: "counted", amount: 1n })
        const d2 = yield* makeTransfer(address, { outcome: "late", amount: 123_456_789_012_345_678_901n, at: at(0) })
        assert.strictEqual(yield* store.recordDeposit(d1), "recorded")
        assert.strictEqual(yield* store.recordDeposit(d2), "recorded")
        assert.strictEqual(yield* store.recordDeposit({ ...d1, amount: 999n, outcome: "late" }), "duplicate")
        // The same tx on another chain is another transfer.
        const d3 = { ...d1, chain: "other-chain" }
        assert.strictEqual(yield* store.recordDeposit(d3), "recorded")
        assert.deepStrictEqual(yield* store.getDeposit(d1.chain, d1.tx), d1)
        assert.isUndefined(yield* store.getDeposit("base", `0x${yield* randomHexOf(32)}`))
        assert.deepStrictEqual(yield* store.depositsTo(address), [d1, d2, d3])
        assert.deepStrictEqual(yield* store.depositsTo(`0x${yield* randomHexOf(20)}`), [])
      }))

    it.effect("concurrent records of one transfer: exactly one is recorded", () =>
      Effect.gen(function*() {
        const store = yield* OrderStore
        const address = `0x${yield* randomHexOf(20)}`
        const deposit = yield* makeTransfer(address)
        const results = yield* Effect.all(
          Array.from({ length: 20 }, (_, i) => store.recordDeposit({ ...deposit, amount: BigInt(i + 1) })),
          unbounded
        )
        assert.strictEqual(results.filter((r) => r === "recorded").length, 1)
        assert.strictEqual((yield* store.depositsTo(address)).length, 1)
      }))
  })
