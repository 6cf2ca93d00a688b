/**
 * Agent approvals at the account service (core/src/accounts/Approvals.ts; docs/agents.md
 * "Approvals"), on the memory stores and the simulated network, with a software authenticator:
 * a create approved with the owner's passkey registers the agent and is handed over once (with a
 * new network key), then reads as collected; another person's passkey cannot approve; a refusal
 * of the network fails it with the reason as it is; an unused link expires after 30 minutes; a
 * revoke revokes the agent on the network; concurrent reads hand the approved result to one.
 */
import { ApiKeysLive } from "@model-platform/core/http"
import { assert, describe, it } from "@effect/vitest"
import { AccountError, AccountsConfig, AccountService, Approvals } from "@model-platform/core/accounts"
import { SimulatedNetwork, simulatedNodes } from "@model-platform/core/agents"
import { Catalogue } from "@model-platform/core/catalogue"
import type { CreateApprovalWire } from "@model-platform/core/agents"
import { Effect, Exit, Layer } from "effect"
import { TestClock } from "effect/testing"
import { fixtureCatalogue } from "../src/Fixtures.ts"
import { MemoryOutbox } from "../src/MemoryOutbox.ts"
import { MemoryPlatformStores } from "@model-platform/memory-stores/MemoryPlatformStores"
import { makeSoftAuthenticator, type SoftAuthenticator } from "../src/SoftAuthenticator.ts"

const ORIGIN = "http://localhost:8788"
const RP = { origin: ORIGIN, rpId: "localhost" }

const TestLayer = Layer.mergeAll(AccountService.layer, Approvals.layer).pipe(
  Layer.provideMerge(ApiKeysLive),
  Layer.provideMerge(Catalogue.layer(fixtureCatalogue)),
  Layer.provideMerge(
    Layer.mergeAll(MemoryPlatformStores, MemoryOutbox.layer, SimulatedNetwork.layer(), Layer.succeed(AccountsConfig, { accountsUrl: ORIGIN }))
  )
)
const run = <A, E>(effect: Effect.Effect<A, E, Layer.Success<typeof TestLayer>>) => Effect.provide(effect, TestLayer)

const refusal = <A, R>(effect: Effect.Effect<A, AccountError, R>) =>
  Effect.gen(function*() {
    const exit = yield* Effect.exit(effect)
    if (Exit.isSuccess(exit)) return assert.fail(`expected a refusal, got ${JSON.stringify(exit.value)}`)
    const error = exit.cause.reasons.find((r) => r._tag === "Fail")
    if (error === undefined || !(error.error instanceof AccountError)) return assert.fail(`expected an AccountError: ${exit.cause}`)
    return error.error
  })

/** A confirmed person with one passkey on `auth`: their person id (`sub`) and account id. */
const person = (auth: SoftAuthenticator, email: string) =>
  Effect.gen(function*() {
    const accounts = yield* AccountService
    const begun = yield* accounts.beginSignUp({ email, clientAddress: "10.0.0.1", ...RP })
    yield* accounts.finishSignUp({ flow: begun.flow, response: yield* auth.create(begun.options, ORIGIN), ...RP })
    const mails = yield* (yield* MemoryOutbox).to(email)
    const token = mails.at(-1)!.text.match(/confirm\?token=([A-Za-z0-9_-]+)/)![1]!
    const confirmed = yield* accounts.confirmEmail({ token })
    return { sub: confirmed.person.person_id, account: confirmed.person.account_id! }
  })

const createRequest = (): CreateApprovalWire => ({
  kind: "create",
  settings: {
    agent_name: "research-bot",
    capabilities: ["inference", "payments"],
    max_transaction_token: "1.5",
    max_daily_token: "",
    daily_limit_credits: 10,
    total_limit_credits: 100.25,
    expires_in_days: 30
  },
  serving_nodes: simulatedNodes(2).map(({ machine_did, operator_did }) => ({ machine_did, operator_did })),
  return_to: "http://platform.test/agents"
})

/** Approves approval `id` with `auth`'s passkey. */
const approve = (auth: SoftAuthenticator, id: string) =>
  Effect.gen(function*() {
    const approvals = yield* Approvals
    const begun = yield* approvals.beginApprove({ id, ...RP })
    return yield* approvals.finishApprove({ id, flow: begun.flow, response: yield* auth.get(begun.options, ORIGIN), ...RP })
  })

describe("agent approvals at the account service", () => {
  it.effect("a create approved with the owner's passkey: registered on the network, handed over once with a network key, then collected", () =>
    run(Effect.gen(function*() {
      const approvals = yield* Approvals
      const auth = yield* makeSoftAuthenticator
      const owner = yield* person(auth, "owner@example.test")
      const created = yield* approvals.create(owner.sub, createRequest())
      assert.strictEqual(created.approve_url, `${ORIGIN}/approve/${created.id}`)
      assert.deepStrictEqual(yield* approvals.read(owner.sub, created.id), { state: "pending" })
      // Another person's approvals API answers nothing about it.
      assert.strictEqual((yield* refusal(approvals.read("per_someone", created.id))).reason, "approval_not_found")

      const view = yield* approve(auth, created.id)
      assert.strictEqual(view.state, "approved")
      const did = `did:svc:machine:${owner.account}:${created.id}`
      const result = yield* approvals.read(owner.sub, created.id)
      if (result.state !== "approved") return assert.fail(JSON.stringify(result))
      assert.strictEqual(result.agent_did, did)
      assert.deepStrictEqual(result.network.identity, { did, controller_did: `did:svc:human:${owner.account}` })
      assert.match(result.network.wallet.address, /^0x[0-9a-f]{40}$/)
      assert.strictEqual(result.network.serving_nodes.length, 2)
      assert.match(result.network.api_key ?? "", /^nk_/)
      assert.deepStrictEqual(result.settings, {
        agent_name: "research-bot",
        capabilities: ["inference", "payments"],
        max_transaction_value: "1500000000000000000",
        max_daily_spend: null,
        expires_in_days: 30,
        daily_limit_credits: 10,
        total_limit_credits: 100.25
      })
      // Handed over once: then collected.
      assert.deepStrictEqual(yield* approvals.read(owner.sub, created.id), { state: "collected", agent_did: did })
      const held = yield* (yield* SimulatedNetwork).agents
      assert.strictEqual(held.get(did)?.settings.max_transaction_wei, 1_500_000_000_000_000_000n)
      assert.strictEqual(held.get(did)?.key_hashes.length, 1)
      // Approving again: closed.
      assert.strictEqual((yield* refusal(approve(auth, created.id))).reason, "approval_closed")
    })))

  it.effect("only the owner's passkey approves; a network refusal fails it with the reason as it is", () =>
    run(Effect.gen(function*() {
      const approvals = yield* Approvals
      const ownerAuth = yield* makeSoftAuthenticator
      const otherAuth = yield* makeSoftAuthenticator
      const owner = yield* person(ownerAuth, "own@example.test")
      yield* person(otherAuth, "other@example.test")
      const created = yield* approvals.create(owner.sub, createRequest())
      // The options allow only the owner's passkeys; an assertion of another person's is refused.
      const begun = yield* approvals.beginApprove({ id: created.id, ...RP })
      const foreign = yield* otherAuth.get({ ...begun.options, allowCredentials: [] }, ORIGIN)
      assert.strictEqual((yield* refusal(approvals.finishApprove({ id: created.id, flow: begun.flow, response: foreign, ...RP }))).reason, "verification_failed")
      assert.deepStrictEqual(yield* approvals.read(owner.sub, created.id), { state: "pending" })

      yield* (yield* SimulatedNetwork).refuseNext(1, "the operator does not serve agents of this kind")
      assert.strictEqual((yield* approve(ownerAuth, created.id)).state, "failed")
      assert.deepStrictEqual(yield* approvals.read(owner.sub, created.id), { state: "failed", error: "the operator does not serve agents of this kind" })
    })))

  it.effect("an unused link expires after 30 minutes; a revoke approved revokes the agent on the network", () =>
    run(Effect.gen(function*() {
      const approvals = yield* Approvals
      const auth = yield* makeSoftAuthenticator
      const owner = yield* person(auth, "late@example.test")
      const stale = yield* approvals.create(owner.sub, createRequest())
      yield* TestClock.adjust("31 minutes")
      assert.deepStrictEqual(yield* approvals.read(owner.sub, stale.id), { state: "expired" })
      assert.strictEqual((yield* refusal(approvals.beginApprove({ id: stale.id, ...RP }))).reason, "approval_closed")

      const created = yield* approvals.create(owner.sub, createRequest())
      yield* approve(auth, created.id)
      const result = yield* approvals.read(owner.sub, created.id)
      const did = result.state === "approved" ? result.agent_did : assert.fail("not approved")
      const revoke = yield* approvals.create(owner.sub, { kind: "revoke", agent_did: did })
      yield* approve(auth, revoke.id)
      const revoked = yield* approvals.read(owner.sub, revoke.id)
      assert.deepStrictEqual([revoked.state, revoked.state === "approved" ? revoked.network.api_key : "?"], ["approved", null])
      assert.isTrue((yield* (yield* SimulatedNetwork).agents).get(did)?.revoked)
    })))

  it.effect("concurrent reads of an approved approval: exactly one gets the result, the others read collected", () =>
    run(Effect.gen(function*() {
      const approvals = yield* Approvals
      const auth = yield* makeSoftAuthenticator
      const owner = yield* person(auth, "race@example.test")
      const created = yield* approvals.create(owner.sub, createRequest())
      yield* approve(auth, created.id)
      const answers = yield* Effect.all(Array.from({ length: 8 }, () => approvals.read(owner.sub, created.id)), { concurrency: "unbounded" })
      assert.deepStrictEqual(answers.map((a) => a.state).sort(), ["approved", ...Array(7).fill("collected")].sort())
    })))

  it.effect("bad requests are refused and store nothing", () =>
    run(Effect.gen(function*() {
      const approvals = yield* Approvals
      const auth = yield* makeSoftAuthenticator
      const owner = yield* person(auth, "bad@example.test")
      for (const bad of [
        { kind: "create" } as CreateApprovalWire,
        { ...createRequest(), serving_nodes: [] },
        { ...createRequest(), agent_did: "did:svc:machine:x:y" },
        { kind: "update", settings: createRequest().settings! } as CreateApprovalWire,
        { kind: "revoke" } as CreateApprovalWire,
        { kind: "revoke", agent_did: "did:svc:machine:x:y", settings: createRequest().settings! } as CreateApprovalWire
      ]) {
        assert.strictEqual((yield* refusal(approvals.create(owner.sub, bad))).reason, "invalid_request", JSON.stringify(bad))
      }
      assert.strictEqual((yield* refusal(approvals.create("per_nobody", createRequest()))).reason, "approval_not_found")
    })))
})
