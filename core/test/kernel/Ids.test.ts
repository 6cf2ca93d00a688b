/**
 * Ids by kind (kernel/Ids.ts, docs/architecture.md "Ids"): a plain string is accepted where an id
 * is expected, an id of one kind is refused for another (the `@ts-expect-error` lines are checked
 * by `./platform check`: each fails the check if its line ever type-checks), and the generated
 * ids keep their prefixes.
 */
import { Effect, Schema } from "effect"
import { describe, expect, it } from "vitest"
import type { AgentRecord } from "../../src/agents/Records.ts"
import type { Agents } from "../../src/agents/Agents.ts"
import { type AccountId, type AgentId, generateId, IdString, type KeyId, type OrderId } from "../../src/kernel/Ids.ts"
import type { AccountStore } from "../../src/keys/AccountStore.ts"
import type { Caller } from "../../src/keys/Caller.ts"
import type { KeyStore } from "../../src/keys/KeyStore.ts"
import { BudgetScope } from "../../src/ledger/BudgetScope.ts"
import type { OrderRecord, OrderStore } from "../../src/payments/OrderStore.ts"

const accountOnly = (id: AccountId): AccountId => id
const keyOnly = (id: KeyId): KeyId => id
const plainOnly = (id: string): string => id

/**
 * The kinds as the records and ports carry them: only type-checked (never called), so a port or
 * record that loses its kind fails `./platform check` on the `@ts-expect-error` above it.
 */
export const recordsAndPortsKeepTheirKinds = (
  caller: Caller,
  agent: AgentRecord,
  order: OrderRecord,
  ports: {
    readonly accounts: AccountStore["Service"]
    readonly keys: KeyStore["Service"]
    readonly orders: OrderStore["Service"]
    readonly agents: Agents["Service"]
  }
) => [
  ports.accounts.get(caller.key.account_id),
  // @ts-expect-error a key's id is not an account id
  ports.accounts.get(caller.key.id),
  ports.keys.get(caller.account.id, caller.key.id),
  // @ts-expect-error the arguments are the account's id, then the key's
  ports.keys.get(caller.key.id, caller.account.id),
  ports.orders.getOrder(order.account_id, order.id),
  // @ts-expect-error an agent's id is not an order id
  ports.orders.getOrder(caller.account.id, agent.id),
  ports.agents.get(caller, agent.id),
  // @ts-expect-error an order's id is not an agent id
  ports.agents.get(caller, order.id),
  BudgetScope.key(caller.key.id),
  // @ts-expect-error an agent's id is not a key id: its budgets are agentDay / agentTotal
  BudgetScope.key(agent.id)
]

describe("Ids", () => {
  it("a plain string is accepted for any kind; an id of one kind is refused for another", () => {
    const account: AccountId = "acct_a"
    const key: KeyId = "key_a"
    const agent: AgentId = "agt_a"
    const order: OrderId = "ord_a"
    // @ts-expect-error a key id is not an account id
    accountOnly(key)
    // @ts-expect-error an agent id is not an account id
    accountOnly(agent)
    // @ts-expect-error an order id is not an account id
    accountOnly(order)
    // @ts-expect-error an account id is not a key id
    keyOnly(account)
    // @ts-expect-error an account id is not an agent id
    const asAgent: AgentId = account
    // An id is still a string wherever one is taken.
    expect([accountOnly(account), keyOnly("key_b"), plainOnly(order), asAgent]).toEqual(["acct_a", "key_b", "ord_a", "acct_a"])
  })

  it("the generated ids are of their prefix's kind", () => {
    const ids = Effect.runSync(
      Effect.all({
        account: generateId("acct"),
        key: generateId("key"),
        agent: generateId("agt"),
        order: generateId("ord"),
        autoOrder: generateId("ord_auto"),
        other: generateId("led")
      })
    )
    accountOnly(ids.account)
    keyOnly(ids.key)
    // @ts-expect-error an agent id is not an account id
    accountOnly(ids.agent)
    // @ts-expect-error an order id is not a key id
    keyOnly(ids.order)
    // @ts-expect-error an automatic reload's order id is an order id
    accountOnly(ids.autoOrder)
    expect(ids.account).toMatch(/^acct_[A-Za-z0-9_-]{22}$/)
    expect(ids.key).toMatch(/^key_[A-Za-z0-9_-]{22}$/)
    expect(ids.agent).toMatch(/^agt_[A-Za-z0-9_-]{22}$/)
    expect(ids.order).toMatch(/^ord_[A-Za-z0-9_-]{22}$/)
    expect(ids.autoOrder).toMatch(/^ord_auto_[A-Za-z0-9_-]{22}$/)
    expect(ids.other).toMatch(/^led_[A-Za-z0-9_-]{22}$/)
  })

  it("an id field of a record schema decodes and encodes as the plain string", () => {
    const Record = Schema.Struct({ id: IdString<"agent">(), account_id: IdString<"account">() })
    const record = Schema.decodeUnknownSync(Record)({ id: "agt_x", account_id: "acct_y" })
    // @ts-expect-error the record's agent id is not an account id
    accountOnly(record.id)
    expect(accountOnly(record.account_id)).toBe("acct_y")
    expect(Schema.encodeSync(Record)(record)).toEqual({ id: "agt_x", account_id: "acct_y" })
    expect(() => Schema.decodeUnknownSync(Record)({ id: 7, account_id: "acct_y" })).toThrow()
  })
})
