/**
 * The people store contract (PeopleContract.ts): a person's passkeys, listed, found by credential
 * id, their use recorded and removed.
 */
import { assert, describe, type Vitest } from "@effect/vitest"
import { PeopleStore } from "@model-platform/core/accounts"
import { Effect } from "effect"
import { assertDies } from "./ContractSupport.ts"
import fc from "fast-check"
import { unbounded, MINUTE, at, freshPasskey, insertedPerson } from "./PeopleContractSupport.ts"

export const passkeyTests = (it: Vitest.MethodsNonLive<PeopleStore>) => {
  describe("passkeys", () => {
    it.effect("added passkeys are listed oldest first and found by credential id", () =>
      Effect.gen(function*() {
        const store = yield* PeopleStore
        const { passkey: first, person } = yield* insertedPerson()
        const third = yield* freshPasskey(person.id, { created_at: at(2 * MINUTE), name: "Laptop", transports: ["usb"] })
        const second = yield* freshPasskey(person.id, { created_at: at(MINUTE), counter: 7, last_used_at: at(MINUTE) })
        assert.deepStrictEqual(yield* store.addPasskey(third), { _tag: "Added" })
        assert.deepStrictEqual(yield* store.addPasskey(second), { _tag: "Added" })
        assert.deepStrictEqual(yield* store.listPasskeys(person.id), [first, second, third])
        assert.deepStrictEqual(yield* store.findPasskey(second.credential_id), second)
        assert.deepStrictEqual(yield* store.listPasskeys(`${person.id}x`), [])
        assert.isUndefined(yield* store.findPasskey(`${second.credential_id}x`))
      }))

    it.effect("a credential id is registered once, across people; an unknown person gets none", () =>
      Effect.gen(function*() {
        const store = yield* PeopleStore
        const a = yield* insertedPerson()
        const b = yield* insertedPerson()
        assert.deepStrictEqual(
          yield* store.addPasskey({ ...a.passkey, person_id: b.person.id }),
          { _tag: "CredentialTaken" }
        )
        assert.deepStrictEqual(yield* store.addPasskey({ ...a.passkey }), { _tag: "CredentialTaken" })
        const orphan = yield* freshPasskey(`${a.person.id}x`)
        assert.deepStrictEqual(yield* store.addPasskey(orphan), { _tag: "UnknownPerson" })
        assert.isUndefined(yield* store.findPasskey(orphan.credential_id))
        assert.deepStrictEqual(yield* store.listPasskeys(b.person.id), [b.passkey])
      }))

    it.effect("concurrent adds of one credential to two people: exactly one is added", () =>
      Effect.gen(function*() {
        const store = yield* PeopleStore
        const a = yield* insertedPerson()
        const b = yield* insertedPerson()
        const passkey = yield* freshPasskey(a.person.id)
        const results = yield* Effect.all(
          [store.addPasskey(passkey), store.addPasskey({ ...passkey, person_id: b.person.id })],
          unbounded
        )
        assert.deepStrictEqual(results.map((r) => r._tag).sort(), ["Added", "CredentialTaken"])
        const owner = results[0]!._tag === "Added" ? a.person.id : b.person.id
        assert.strictEqual((yield* store.findPasskey(passkey.credential_id))?.person_id, owner)
      }))

    it.effect("recordPasskeyUse moves counter and last_used_at forward only", () =>
      Effect.gen(function*() {
        const store = yield* PeopleStore
        const { passkey } = yield* insertedPerson()
        const id = passkey.credential_id
        assert.deepStrictEqual(
          yield* store.recordPasskeyUse(id, 5, at(MINUTE)),
          { ...passkey, counter: 5, last_used_at: at(MINUTE) }
        )
        // An older sign-in recorded late keeps the later values.
        assert.deepStrictEqual(
          yield* store.recordPasskeyUse(id, 3, at(30_000)),
          { ...passkey, counter: 5, last_used_at: at(MINUTE) }
        )
        assert.deepStrictEqual(
          yield* store.recordPasskeyUse(id, 0xffff_ffff, at(2 * MINUTE)),
          { ...passkey, counter: 0xffff_ffff, last_used_at: at(2 * MINUTE) }
        )
        assert.deepStrictEqual(
          yield* store.findPasskey(id),
          { ...passkey, counter: 0xffff_ffff, last_used_at: at(2 * MINUTE) }
        )
        assert.isUndefined(yield* store.recordPasskeyUse(`${id}x`, 1, at()))
      }))

    it.effect("a counter that is not an unsigned 32-bit integer is a defect", () =>
      Effect.gen(function*() {
        const store = yield* PeopleStore
        const { passkey, person } = yield* insertedPerson()
        for (const counter of [-1, 1.5, 2 ** 32, Number.NaN]) {
          yield* assertDies(store.recordPasskeyUse(passkey.credential_id, counter, at()), `use with ${counter}`)
          yield* assertDies(store.addPasskey(yield* freshPasskey(person.id, { counter })), `add with ${counter}`)
        }
        yield* assertDies(store.addPasskey(yield* freshPasskey(person.id, { credential_id: "" })), "empty credential id")
        assert.deepStrictEqual(yield* store.listPasskeys(person.id), [passkey])
      }))

    it.effect("concurrent uses keep the greatest counter and the latest time", () =>
      Effect.gen(function*() {
        const store = yield* PeopleStore
        const { passkey } = yield* insertedPerson()
        const uses = Array.from({ length: 12 }, (_, i) => ({ counter: (i * 7) % 12, at: at(((i * 5) % 12) * 1000) }))
        yield* Effect.all(uses.map((u) => store.recordPasskeyUse(passkey.credential_id, u.counter, u.at)), unbounded)
        const found = yield* store.findPasskey(passkey.credential_id)
        assert.strictEqual(found?.counter, 11)
        assert.strictEqual(found?.last_used_at, at(11_000))
      }))

    it.effect("removePasskey removes one of several, refuses the last, finds none of another person", () =>
      Effect.gen(function*() {
        const store = yield* PeopleStore
        const { passkey: first, person } = yield* insertedPerson()
        const second = yield* freshPasskey(person.id, { created_at: at(MINUTE) })
        assert.deepStrictEqual(yield* store.addPasskey(second), { _tag: "Added" })
        const other = yield* insertedPerson()
        assert.deepStrictEqual(yield* store.removePasskey(other.person.id, first.credential_id), { _tag: "NotFound" })
        assert.deepStrictEqual(yield* store.removePasskey(person.id, `${first.credential_id}x`), { _tag: "NotFound" })
        assert.deepStrictEqual(yield* store.removePasskey(person.id, first.credential_id), { _tag: "Removed" })
        assert.deepStrictEqual(yield* store.removePasskey(person.id, first.credential_id), { _tag: "NotFound" })
        assert.isUndefined(yield* store.findPasskey(first.credential_id))
        assert.deepStrictEqual(yield* store.removePasskey(person.id, second.credential_id), { _tag: "LastPasskey" })
        assert.deepStrictEqual(yield* store.listPasskeys(person.id), [second])
        // A removed credential id may be registered again.
        assert.deepStrictEqual(yield* store.addPasskey(first), { _tag: "Added" })
        assert.deepStrictEqual(yield* store.listPasskeys(person.id), [first, second])
      }))

    it.effect("removing every passkey at once leaves exactly one", () =>
      Effect.gen(function*() {
        const store = yield* PeopleStore
        const { passkey, person } = yield* insertedPerson()
        const more = yield* Effect.forEach(Array.from({ length: 5 }), (_, i) =>
          freshPasskey(person.id, { created_at: at((i + 1) * 1000) }))
        for (const p of more) assert.deepStrictEqual(yield* store.addPasskey(p), { _tag: "Added" })
        const all = [passkey, ...more]
        const results = yield* Effect.all(all.map((p) => store.removePasskey(person.id, p.credential_id)), unbounded)
        assert.strictEqual(results.filter((r) => r._tag === "Removed").length, all.length - 1)
        assert.strictEqual(results.filter((r) => r._tag === "LastPasskey").length, 1)
        const left = yield* store.listPasskeys(person.id)
        assert.strictEqual(left.length, 1)
        assert.strictEqual(left[0]!.credential_id, all[results.findIndex((r) => r._tag === "LastPasskey")]!.credential_id)
      }))

    it.effect("property: adds and removals, sequential or concurrent, never leave a person without a passkey", () =>
      Effect.gen(function*() {
        const services = yield* Effect.context<PeopleStore>()
        const run = Effect.runPromiseWith(services)
        yield* Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(
              fc.array(fc.oneof(fc.constant({ op: "add" as const, k: 0 }), fc.record({ op: fc.constant("remove" as const), k: fc.nat({ max: 5 }) })), {
                minLength: 1,
                maxLength: 12
              }),
              fc.boolean(),
              (ops, concurrent) =>
                run(Effect.gen(function*() {
                  const store = yield* PeopleStore
                  const { passkey, person } = yield* insertedPerson()
                  // Candidates for removal: the first passkey and those the adds will make.
                  const candidates = [passkey, ...yield* Effect.forEach(ops, () => freshPasskey(person.id))]
                  let next = 1
                  const steps = ops.map((o) => {
                    if (o.op === "add") {
                      const p = candidates[next++]!
                      return Effect.map(store.addPasskey(p), (r) => ({ o, p, r: r._tag as string }))
                    }
                    const p = candidates[Math.min(o.k, candidates.length - 1)]!
                    return Effect.map(store.removePasskey(person.id, p.credential_id), (r) => ({ o, p, r: r._tag as string }))
                  })
                  const results = yield* Effect.all(steps, concurrent ? unbounded : {})
                  const left = yield* store.listPasskeys(person.id)
                  assert.isAtLeast(left.length, 1)
                  const added = results.filter((x) => x.r === "Added").length
                  const removed = results.filter((x) => x.r === "Removed").length
                  assert.strictEqual(left.length, 1 + added - removed)
                  for (const x of results) assert.include(["Added", "Removed", "NotFound", "LastPasskey"], x.r)
                  if (!concurrent) {
                    // Sequentially, LastPasskey is answered exactly when the passkey was the only one.
                    const model = new Set([passkey.credential_id])
                    for (const x of results) {
                      if (x.o.op === "add") model.add(x.p.credential_id)
                      else if (!model.has(x.p.credential_id)) assert.strictEqual(x.r, "NotFound")
                      else if (model.size === 1) assert.strictEqual(x.r, "LastPasskey")
                      else {
                        assert.strictEqual(x.r, "Removed")
                        model.delete(x.p.credential_id)
                      }
                    }
                    assert.deepStrictEqual(left.map((p) => p.credential_id).sort(), [...model].sort())
                  }
                }))
            ),
            { numRuns: 15 }
          )
        )
      }), 120_000)
  })

}
