/**
 * The simulated network (core/src/agents/SimulatedNetwork.ts): ready identities with
 * deterministic wallets, idempotent per id, injected refusals and outages in order, the operator's
 * refusals from the environment.
 */
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Exit, Layer, Schema } from "effect"
import fc from "fast-check"
import { DEFAULT_REFUSAL_REASON, SimulatedNetwork, simulatedWalletAddress } from "../../src/agents/SimulatedNetwork.ts"
import { HumanDid } from "../../src/accounts/Identity.ts"
import { Network, NetworkUnavailable } from "../../src/agents/Network.ts"
import { sha256Hex } from "../../src/kernel/Sha256.ts"

const create = (id: string) => Network.use((network) => network.createHumanIdentity(id))

describe("SimulatedNetwork", () => {
  it.effect("registers a person: ready, did:svc:human:<id>, a wallet of 0x and 40 hex from SHA-256 of the DID", () =>
    Effect.gen(function*() {
      const answer = yield* create("acct_123")
      assert.deepStrictEqual(answer, {
        state: "ready",
        did: "did:svc:human:acct_123",
        wallet_address: "0x" + sha256Hex("did:svc:human:acct_123").slice(0, 40)
      })
      if (answer.state !== "ready") return
      assert.match(answer.wallet_address, /^0x[0-9a-f]{40}$/)
      assert.isTrue(Schema.is(HumanDid)(answer.did))
      assert.strictEqual((yield* Network).network, "simulated")
      assert.deepStrictEqual(yield* (yield* SimulatedNetwork).identities, [
        { id: "acct_123", did: answer.did, wallet_address: answer.wallet_address }
      ])
    }).pipe(Effect.provide(SimulatedNetwork.layer())))

  it.effect("is idempotent per id, and a new network (a restart) answers the same wallet", () =>
    Effect.gen(function*() {
      const first = yield* create("acct_a")
      const again = yield* create("acct_a")
      const other = yield* create("acct_b")
      assert.deepStrictEqual(again, first)
      assert.notDeepEqual(other, first)
      assert.strictEqual((yield* (yield* SimulatedNetwork).identities).length, 2)
      const restarted = yield* create("acct_a").pipe(Effect.provide(SimulatedNetwork.layer()))
      assert.deepStrictEqual(restarted, first)
    }).pipe(Effect.provide(SimulatedNetwork.layer())))

  it("wallet addresses are 0x + 40 lowercase hex and differ between ids", () => {
    fc.assert(fc.property(fc.uniqueArray(fc.stringMatching(/^[^:\s]{1,40}$/), { minLength: 2, maxLength: 50 }), (ids) => {
      const wallets = ids.map((id) => simulatedWalletAddress(`did:svc:human:${id}`))
      for (const wallet of wallets) assert.match(wallet, /^0x[0-9a-f]{40}$/)
      assert.strictEqual(new Set(wallets).size, ids.length)
    }), { numRuns: 200 })
  })

  it.effect("refuseNext(n, reason): the next n registrations answer failed with the reason, then ready again", () =>
    Effect.gen(function*() {
      const control = yield* SimulatedNetwork
      yield* control.refuseNext(2, "wallet quota reached")
      assert.deepStrictEqual(yield* create("acct_1"), { state: "failed", error: "wallet quota reached" })
      assert.deepStrictEqual(yield* create("acct_1"), { state: "failed", error: "wallet quota reached" })
      assert.strictEqual((yield* create("acct_1")).state, "ready")
      // A refused registration leaves nothing on the network.
      assert.deepStrictEqual((yield* control.identities).map((i) => i.id), ["acct_1"])
    }).pipe(Effect.provide(SimulatedNetwork.layer())))

  it.effect("unavailableNext(n): NetworkUnavailable, a typed error the caller retries; faults keep their order", () =>
    Effect.gen(function*() {
      const control = yield* SimulatedNetwork
      yield* control.unavailableNext(1)
      yield* control.refuseNext(1)
      const down = yield* Effect.flip(create("acct_x"))
      assert.instanceOf(down, NetworkUnavailable)
      assert.strictEqual(down._tag, "NetworkUnavailable")
      // The second call takes the refusal: an answer, not an outage.
      assert.deepStrictEqual(yield* create("acct_y"), { state: "failed", error: DEFAULT_REFUSAL_REASON })
      yield* control.unavailableNext(1, "maintenance")
      const flipped = yield* Effect.flip(create("acct_z"))
      assert.instanceOf(flipped, NetworkUnavailable)
      assert.strictEqual(flipped.reason, "maintenance")
      assert.strictEqual((yield* create("acct_z")).state, "ready")
    }).pipe(Effect.provide(SimulatedNetwork.layer())))

  it.effect("an id that cannot sit in a DID is refused without taking an injected fault", () =>
    Effect.gen(function*() {
      yield* (yield* SimulatedNetwork).refuseNext(1, "injected")
      for (const id of ["", "a:b", "a b", "tab\there", "line\nbreak"]) {
        const answer = yield* create(id)
        assert.strictEqual(answer.state, "failed")
        if (answer.state === "failed") assert.notStrictEqual(answer.error, "injected")
      }
      assert.deepStrictEqual(yield* create("ok"), { state: "failed", error: "injected" })
    }).pipe(Effect.provide(SimulatedNetwork.layer())))

  it.effect("the operator's refusals: SIMULATED_NETWORK_REFUSE_NEXT and _REASON at start", () =>
    Effect.gen(function*() {
      const env = (vars: Record<string, string>) =>
        SimulatedNetwork.fromConfig.pipe(Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env: vars }))))
      const refused = yield* Effect.all([create("p1"), create("p2"), create("p3")]).pipe(
        Effect.provide(env({ SIMULATED_NETWORK_REFUSE_NEXT: "2", SIMULATED_NETWORK_REFUSE_REASON: "network in maintenance" }))
      )
      assert.deepStrictEqual(refused.map((a) => a.state), ["failed", "failed", "ready"])
      assert.deepStrictEqual(refused[0], { state: "failed", error: "network in maintenance" })

      const plain = yield* create("p1").pipe(Effect.provide(env({})))
      assert.strictEqual(plain.state, "ready")
      const defaultReason = yield* create("p1").pipe(Effect.provide(env({ SIMULATED_NETWORK_REFUSE_NEXT: "1" })))
      assert.deepStrictEqual(defaultReason, { state: "failed", error: "registration refused by the simulated network" })

      for (const bad of ["-1", "two", "1.5"]) {
        const exit = yield* Effect.exit(create("p1").pipe(Effect.provide(env({ SIMULATED_NETWORK_REFUSE_NEXT: bad }))))
        assert.isTrue(Exit.isFailure(exit), bad)
      }
    }))
})
