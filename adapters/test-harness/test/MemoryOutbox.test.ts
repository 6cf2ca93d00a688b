/**
 * The memory outbox (src/MemoryOutbox.ts) and the address check every sender shares
 * (core/src/kernel/EmailSender.ts): kept messages, injected failures in order, refusals.
 */
import { assert, describe, it } from "@effect/vitest"
import { addressProblem, EmailRefused, EmailSender, EmailUnavailable } from "@model-platform/core/kernel"
import { Effect } from "effect"
import { MemoryOutbox } from "../src/MemoryOutbox.ts"

const send = (to: string, subject = "Hello") => EmailSender.use((email) => email.send({ to, subject, text: "body" }))

describe("MemoryOutbox", () => {
  it.effect("keeps each message in order, by recipient too", () =>
    Effect.gen(function*() {
      const outbox = yield* MemoryOutbox
      const first = yield* send("ada@example.com", "one\ntwo")
      yield* send("bob@example.com")
      yield* send("ada@example.com")
      const all = yield* outbox.messages
      assert.deepStrictEqual(all.map((m) => m.to), ["ada@example.com", "bob@example.com", "ada@example.com"])
      assert.strictEqual(all[0]!.id, first.id)
      assert.strictEqual(all[0]!.subject, "one two")
      assert.strictEqual((yield* outbox.to("ada@example.com")).length, 2)
      assert.strictEqual((yield* EmailSender).transport, "memory")
      yield* outbox.clear
      assert.deepStrictEqual(yield* outbox.messages, [])
    }).pipe(Effect.provide(MemoryOutbox.layer)))

  it.effect("failNext: the next sends fail as injected, in order, keeping nothing; then delivery resumes", () =>
    Effect.gen(function*() {
      const outbox = yield* MemoryOutbox
      yield* outbox.failNext(2, { _tag: "unavailable" })
      yield* outbox.failNext(1, { _tag: "refused", reason: "550 mailbox disabled" })
      assert.instanceOf(yield* Effect.flip(send("ada@example.com")), EmailUnavailable)
      assert.instanceOf(yield* Effect.flip(send("ada@example.com")), EmailUnavailable)
      const refused = yield* Effect.flip(send("ada@example.com"))
      assert.instanceOf(refused, EmailRefused)
      assert.strictEqual(refused.reason, "550 mailbox disabled")
      assert.deepStrictEqual(yield* outbox.messages, [])
      yield* send("ada@example.com")
      assert.strictEqual((yield* outbox.messages).length, 1)
    }).pipe(Effect.provide(MemoryOutbox.layer)))

  it.effect("a malformed address is refused without taking an injected failure", () =>
    Effect.gen(function*() {
      const outbox = yield* MemoryOutbox
      yield* outbox.failNext(1, { _tag: "unavailable" })
      assert.instanceOf(yield* Effect.flip(send("nobody")), EmailRefused)
      assert.instanceOf(yield* Effect.flip(send("ada@example.com")), EmailUnavailable)
    }).pipe(Effect.provide(MemoryOutbox.layer)))
})

describe("addressProblem", () => {
  it("accepts one address, local@domain (owner@localhost too); refuses lists, names, breaks and junk", () => {
    for (const ok of ["ada@example.com", "owner@localhost", "a.b+tag@mail.example.co.uk", "Zoë@exämple.de", "x@xn--bcher-kva.example"]) {
      assert.isUndefined(addressProblem(ok), ok)
    }
    for (const bad of [
      "",
      "ada",
      "@example.com",
      "ada@",
      "ada@@example.com",
      "ada example@example.com",
      "ada@example.com, bob@example.com",
      "Ada <ada@example.com>",
      "ada@example.com\r\nBcc: eve@example.com",
      "ada@exa mple.com",
      "ada@-example.com",
      "ada@example..com",
      `${"a".repeat(65)}@example.com`,
      `ada@${"a".repeat(250)}.com`
    ]) {
      assert.isString(addressProblem(bad), JSON.stringify(bad))
    }
  })
})
