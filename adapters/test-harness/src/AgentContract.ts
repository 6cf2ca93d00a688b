/**
 * The contract suite of the agent store port (core/src/ports/AgentStore.ts). Every implementation
 * runs it against its own layer: `agentStoreContract("memory", AgentStoreMemory)`. The layer is
 * built once per suite and shared by its tests, so every test works on fresh random ids.
 */
import { assert, describe, layer } from "@effect/vitest"
import type { AgentRecord } from "@model-platform/core/agents/Records"
import { generateId } from "@model-platform/core/Keys"
import { AgentStore } from "@model-platform/core/ports/AgentStore"
import { toTimestamp } from "@model-platform/core/Time"
import { Effect, type Layer } from "effect"
import { assertDies } from "./ContractSupport.ts"

const BASE = Date.UTC(2026, 0, 15, 10, 20, 30, 456)
const at = (ms: number) => toTimestamp(BASE + ms)

/** An agent with every field set, amounts beyond 2^64 (wei) and text beyond ASCII. */
export const makeAgent = Effect.fnUntraced(function*(accountId: string, overrides: Partial<AgentRecord> = {}) {
  const record: AgentRecord = {
    id: yield* generateId("agt"),
    account_id: accountId,
    name: "research.bot-1",
    status: "active",
    settings: {
      capabilities: ["inference", "payments"],
      max_transaction_wei: 123_456_789_012_345_678_901_234n,
      max_daily_wei: null,
      daily_limit: 5_000_000n,
      total_limit: 9_223_372_036_854_775_807n,
      expires_in_days: 30
    },
    approval: {
      id: "apr_1",
      kind: "update",
      state: "pending",
      approve_url: "https://accounts.test/approve/apr_1?ü",
      expires_at: at(30 * 60_000),
      settings: { capabilities: ["inference"], max_transaction_wei: null, max_daily_wei: 1n, daily_limit: null, total_limit: 0n, expires_in_days: 3650 }
    },
    did: "did:svc:machine:acct:agt",
    wallet_address: "0xabc",
    serving: { nodes: 2, operators: 1 },
    error: null,
    created_at: at(0),
    approved_at: at(1),
    activated_at: at(2),
    expires_at: at(30 * 86_400_000),
    revoked_at: null,
    version: 0,
    ...overrides
  }
  return record
})

/** Declares the agent store contract on `storeLayer` (built once for the suite). */
export const agentStoreContract = <E>(name: string, storeLayer: Layer.Layer<AgentStore, E>): void =>
  layer(storeLayer, { excludeTestServices: true, timeout: "60 seconds" })(name, (it) => {
    describe("agents", () => {
      it.effect("insert then read: every field exactly; the account's agents newest first, then by id", () =>
        Effect.gen(function*() {
          const store = yield* AgentStore
          const account = yield* generateId("acct")
          const first = yield* makeAgent(account)
          const second = yield* makeAgent(account, {
            created_at: at(5), status: "awaiting_approval", settings: null, approval: null, did: null, wallet_address: null,
            approved_at: null, activated_at: null, expires_at: null, error: "refused ✓"
          })
          const tieA = yield* makeAgent(account, { id: `agt_a${yield* generateId("x")}`, created_at: at(9) })
          const tieB = yield* makeAgent(account, { id: `agt_b${yield* generateId("x")}`, created_at: at(9) })
          for (const r of [first, second, tieB, tieA]) yield* store.insert(r)
          assert.deepStrictEqual(yield* store.get(first.id), first)
          assert.deepStrictEqual(yield* store.get(second.id), second)
          assert.deepStrictEqual(yield* store.list(account), [tieA, tieB, second, first])
          assert.deepStrictEqual(yield* store.list(yield* generateId("acct")), [])
          assert.isUndefined(yield* store.get(yield* generateId("agt")))
        }))

      it.effect("swap replaces the record only from the version it was read at", () =>
        Effect.gen(function*() {
          const store = yield* AgentStore
          const agent = yield* makeAgent(yield* generateId("acct"))
          yield* store.insert(agent)
          const revoked = { ...agent, status: "revoked" as const, revoked_at: at(99), version: 1 }
          assert.isTrue(yield* store.swap(revoked))
          assert.deepStrictEqual(yield* store.get(agent.id), revoked)
          // From a version no longer stored: nothing changes.
          assert.isFalse(yield* store.swap({ ...agent, status: "active", version: 1 }))
          assert.isFalse(yield* store.swap({ ...agent, version: 3 }))
          assert.deepStrictEqual(yield* store.get(agent.id), revoked)
          assert.isFalse(yield* store.swap({ ...agent, id: yield* generateId("agt"), version: 1 }))
        }))

      it.effect("concurrent swaps from one version: exactly one wins", () =>
        Effect.gen(function*() {
          const store = yield* AgentStore
          const agent = yield* makeAgent(yield* generateId("acct"))
          yield* store.insert(agent)
          const names = Array.from({ length: 8 }, (_, i) => `writer-${i}`)
          const won = yield* Effect.forEach(names, (name) => store.swap({ ...agent, name, version: 1 }), { concurrency: "unbounded" })
          assert.strictEqual(won.filter(Boolean).length, 1)
          const stored = yield* store.get(agent.id)
          assert.strictEqual(stored?.name, names[won.indexOf(true)])
          assert.strictEqual(stored?.version, 1)
        }))

      it.effect("broken records are defects and store nothing", () =>
        Effect.gen(function*() {
          const store = yield* AgentStore
          const account = yield* generateId("acct")
          const agent = yield* makeAgent(account)
          yield* assertDies(store.insert({ ...agent, version: 1 }), "a new agent at version 1")
          yield* assertDies(store.insert({ ...agent, account_id: "" }), "an empty account id")
          assert.isUndefined(yield* store.get(agent.id))
          yield* store.insert(agent)
          yield* assertDies(store.insert(agent), "a duplicate id")
          yield* assertDies(store.swap({ ...agent, version: 0 }), "a swap to version 0")
          assert.isFalse(yield* store.swap({ ...agent, account_id: yield* generateId("acct"), version: 1 }))
          assert.deepStrictEqual(yield* store.get(agent.id), agent)
        }))
    })
  })
