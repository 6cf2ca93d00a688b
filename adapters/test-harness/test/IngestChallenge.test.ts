/**
 * A proof-of-work challenge expires 10 minutes after it is issued (docs/fieldwork.md "Proof of
 * work"), on the test clock: solved in time it starts a participant, solved too late it is refused
 * with 400 challenge_expired; and a key is given at most CHALLENGES_PER_MINUTE of them a minute.
 */
import { assert, it } from "@effect/vitest"
import type { Caller } from "@model-platform/core/keys"
import { BlobStoreMemory, Datasets } from "@model-platform/core/datasets"
import { CHALLENGE_TTL_MS, CHALLENGES_PER_MINUTE, Ingest, Projects, solve } from "@model-platform/core/fieldwork"
import { ingestStatusOf } from "@model-platform/core/http"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { DocumentStoresMemory } from "@model-platform/memory-stores/MemoryDocuments"
import { RateLimitStoreMemory } from "@model-platform/memory-stores/MemoryRateLimitStore"

const services = Layer.mergeAll(Projects.layer, Ingest.layer()).pipe(
  Layer.provideMerge(Datasets.layer),
  Layer.provide(Layer.mergeAll(DocumentStoresMemory, BlobStoreMemory, RateLimitStoreMemory))
)

it.effect("a challenge works until 10 minutes after it was issued, and is refused as expired after", () =>
  Effect.gen(function*() {
    const projects = yield* Projects
    const ingest = yield* Ingest
    const caller = { account: { id: "acct_clock" } } as unknown as Caller
    const project = yield* projects.create(caller, {
      name: "clock",
      prompts: [{ text: "one" }],
      consent: { version: "v1", text: "ok", scopes: [{ id: "rec", label: "keep", required: true }] },
      challenge_difficulty: 4
    })
    const key = yield* projects.createKey(caller, project.id, { origins: ["https://study.example"] })
    const flow = yield* ingest.authenticate(key.key, "https://study.example")
    const body = (challenge: string) => ({ country: "NO", dob: "1990-01-01", challenge, nonce: solve(challenge, 4) })

    const late = yield* ingest.challenge(flow)
    const inTime = yield* ingest.challenge(flow)
    yield* TestClock.adjust(CHALLENGE_TTL_MS - 1)
    assert.match((yield* ingest.createParticipant(flow, body(inTime.challenge), undefined)).token, /^mpt_/)
    yield* TestClock.adjust(1)
    const refused = yield* Effect.flip(ingest.createParticipant(flow, body(late.challenge), undefined))
    assert.deepStrictEqual([ingestStatusOf(refused), refused.reason], [400, "challenge_expired"])
  }).pipe(Effect.provide(services)))

it.effect("an ingest key is given at most CHALLENGES_PER_MINUTE challenges a minute, then 429 until the next minute", () =>
  Effect.gen(function*() {
    const projects = yield* Projects
    const ingest = yield* Ingest
    const caller = { account: { id: "acct_flood" } } as unknown as Caller
    const project = yield* projects.create(caller, {
      name: "flood",
      prompts: [{ text: "one" }],
      consent: { version: "v1", text: "ok", scopes: [{ id: "rec", label: "keep", required: true }] }
    })
    const key = yield* projects.createKey(caller, project.id, { origins: ["https://study.example"] })
    const flow = yield* ingest.authenticate(key.key, "https://study.example")
    yield* Effect.forEach(Array.from({ length: CHALLENGES_PER_MINUTE }), () => ingest.challenge(flow), { discard: true })
    const refused = yield* Effect.flip(ingest.challenge(flow))
    assert.deepStrictEqual([ingestStatusOf(refused), refused.reason], [429, "too_many_challenges"])
    yield* TestClock.adjust(60_000)
    assert.match((yield* ingest.challenge(flow)).challenge, /^ch_/)
  }).pipe(Effect.provide(services)))
