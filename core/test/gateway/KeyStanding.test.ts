/**
 * What stands behind a key, checked at every call (core/src/gateway/KeyStanding.ts
 * `makeStandingCheck`): without account notices its records are read at every check; with them,
 * kept until a notice of their account, and judged afresh at each check. A revoked agent is
 * refused at the next check once its notice (or this process's `tell`) came; a delegation that
 * ends meanwhile is refused on time without a read.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import type { AgentRecord } from "../../src/agents/Records.ts"
import { AgentStore } from "../../src/agents/AgentStore.ts"
import type { StandingError } from "../../src/gateway/GatewayErrors.ts"
import { makeStandingCheck } from "../../src/gateway/KeyStanding.ts"
import type { AccountId, AgentId, KeyId } from "../../src/kernel/Ids.ts"
import { AccountNotices, type NoticeFollower } from "../../src/kernel/AccountNotices.ts"
import type { KeyRecord } from "../../src/keys/Keys.ts"
import { PlanStore } from "../../src/plans/PlanStore.ts"
import type { Timestamp } from "../../src/kernel/Time.ts"

const ACCOUNT = "acct_1" as AccountId
const AGENT = "agent_1" as AgentId
const NOW = Date.parse("2026-11-27T10:00:00.000Z")
const at = (ms: number) => new Date(ms).toISOString() as Timestamp

const agentKey: KeyRecord = {
  id: "key_1" as KeyId,
  account_id: ACCOUNT,
  name: "agent key",
  prefix: "sk-abc",
  secret_hash: "x",
  permissions: ["inference"],
  machine_id: null,
  subscription_id: null,
  rental_id: null,
  agent_id: AGENT,
  created_at: at(NOW - 60_000),
  last_used_at: null,
  revoked_at: null
}

const activeAgent: AgentRecord = {
  id: AGENT,
  account_id: ACCOUNT,
  name: "helper",
  status: "active",
  settings: null,
  approval: null,
  did: null,
  wallet_address: null,
  serving: { nodes: 0, operators: 0 },
  error: null,
  created_at: at(NOW - 60_000),
  approved_at: at(NOW - 60_000),
  activated_at: at(NOW - 60_000),
  expires_at: at(NOW + 60_000),
  revoked_at: null,
  version: 1
}

/** The agent as the store holds it now, and how often it was read. */
const agentStore = () => {
  const held = { agent: activeAgent, reads: 0 }
  const layer = Layer.mergeAll(
    Layer.succeed(AgentStore, {
      get: () => Effect.sync(() => (held.reads++, held.agent))
    } as unknown as AgentStore["Service"]),
    Layer.succeed(PlanStore, {} as PlanStore["Service"])
  )
  return { held, layer }
}

const liveNotices = () => {
  const followers = new Set<NoticeFollower>()
  const changed = (accountId: string) => followers.forEach((f) => f.changed(accountId))
  return {
    changed,
    layer: Layer.succeed(AccountNotices, AccountNotices.of({
      live: () => true,
      tell: (accountId) => Effect.sync(() => changed(accountId)),
      follow: (follower) =>
        Effect.asVoid(Effect.acquireRelease(Effect.sync(() => followers.add(follower)), () => Effect.sync(() => followers.delete(follower))))
    }))
  }
}

/** "ok", or the refusal's reason. */
const codeOf = <A>(effect: Effect.Effect<A, StandingError>) => Effect.match(effect, { onFailure: (e) => e.reason, onSuccess: () => "ok" })

describe("makeStandingCheck", () => {
  it.effect("without account notices, the records behind a key are read at every check", () => {
    const store = agentStore()
    return Effect.gen(function*() {
      const check = yield* makeStandingCheck
      assert.strictEqual(yield* codeOf(check(agentKey, NOW)), "ok")
      assert.strictEqual(yield* codeOf(check(agentKey, NOW + 1)), "ok")
      store.held.agent = { ...activeAgent, status: "revoked", revoked_at: at(NOW + 2) }
      assert.strictEqual(yield* codeOf(check(agentKey, NOW + 3)), "agent_revoked")
      assert.strictEqual(store.held.reads, 3)
    }).pipe(Effect.scoped, Effect.provide(store.layer))
  })

  it.effect("with live notices, they are kept until their account's notice; a revocation told binds at the next check", () => {
    const store = agentStore()
    const notices = liveNotices()
    return Effect.gen(function*() {
      const check = yield* makeStandingCheck
      assert.strictEqual(yield* codeOf(check(agentKey, NOW)), "ok")
      assert.strictEqual(yield* codeOf(check(agentKey, NOW + 1)), "ok")
      assert.strictEqual(store.held.reads, 1)
      // Another account's notice changes nothing here.
      notices.changed("acct_2")
      assert.strictEqual(yield* codeOf(check(agentKey, NOW + 2)), "ok")
      assert.strictEqual(store.held.reads, 1)
      // Revoked (in this process: the use-case tells; elsewhere: the store's notice).
      store.held.agent = { ...activeAgent, status: "revoked", revoked_at: at(NOW + 3) }
      yield* (yield* AccountNotices).tell(ACCOUNT)
      assert.strictEqual(yield* codeOf(check(agentKey, NOW + 4)), "agent_revoked")
      assert.strictEqual(store.held.reads, 2)
    }).pipe(Effect.scoped, Effect.provide(Layer.merge(store.layer, notices.layer)))
  })

  it.effect("kept records are judged at each check: a delegation that ends meanwhile is refused on time, without a read", () => {
    const store = agentStore()
    const notices = liveNotices()
    return Effect.gen(function*() {
      const check = yield* makeStandingCheck
      assert.strictEqual(yield* codeOf(check(agentKey, NOW)), "ok")
      assert.strictEqual(yield* codeOf(check(agentKey, NOW + 60_000)), "agent_expired")
      assert.strictEqual(store.held.reads, 1)
    }).pipe(Effect.scoped, Effect.provide(Layer.merge(store.layer, notices.layer)))
  })
})
