/**
 * Fieldwork under any interleaving (fast-check's scheduler gates every record and blob operation):
 * a participant's takes racing each other, the participant's withdrawal and the dataset's
 * deletion. Whatever the order, once all have finished:
 * - no prompt holds more takes than `takes_per_prompt`, and every take answered 201 is stored
 *   unless a withdrawal or the deletion came after it;
 * - a withdrawn participant has no take and no blob left;
 * - a deleted dataset has no item and no blob left;
 * - otherwise every blob is an item's and every item has its blob (no orphans either way).
 * Each shell runs it on its stores (docs/fieldwork.md "Withdrawal", docs/datasets.md "Deleting").
 */
import { assert, describe, it } from "@effect/vitest"
import type { Caller } from "@model-platform/core/keys"
import { BlobStore, Datasets } from "@model-platform/core/datasets"
import { encodeWav, Ingest, Projects } from "@model-platform/core/fieldwork"
import { DocumentStores, generateId, sha256, toHex } from "@model-platform/core/kernel"
import fc from "fast-check"
import { Effect, Exit, Layer } from "effect"
import { RateLimitStoreMemory } from "@model-platform/memory-stores/MemoryRateLimitStore"

const ORIGIN = "https://study.example"
const WAV = encodeWav(Array.from({ length: 800 }, (_, i) => Math.sin(i / 4) / 2), 16000)

interface Scenario {
  readonly takesPerPrompt: number
  readonly takes: ReadonlyArray<"p1" | "p2">
  readonly withdraw: boolean
  readonly deleteDataset: boolean
}

const scenarios: fc.Arbitrary<Scenario> = fc.record({
  takesPerPrompt: fc.integer({ min: 1, max: 2 }),
  takes: fc.array(fc.constantFrom("p1" as const, "p2" as const), { minLength: 1, maxLength: 5 }),
  withdraw: fc.boolean(),
  deleteDataset: fc.boolean()
})

/** Every operation of `service` waits for the scheduler while `on()`. */
export const gated = <S extends object>(service: S, gate: <A, E, R>(e: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>): S =>
  Object.fromEntries(Object.entries(service).map(([name, f]) => [
    name,
    typeof f === "function" ? (...args: Array<unknown>) => gate((f as (...a: Array<unknown>) => Effect.Effect<unknown>)(...args)) : f
  ])) as S

export const fieldworkProperty = <E>(name: string, stores: Layer.Layer<DocumentStores | BlobStore, E>, numRuns: number) =>
  describe(`fieldwork under any interleaving, on ${name}`, () => {
    it.effect("racing takes, a withdrawal and a deletion: limits hold, nothing orphaned, nothing left of what was withdrawn or deleted (fast-check scheduler)", () =>
      Effect.gen(function*() {
        const context = yield* Effect.context<DocumentStores | BlobStore>()
        yield* Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(fc.scheduler(), scenarios, async (s, scenario) => {
              let on = false
              const gate = <A, X, R>(effect: Effect.Effect<A, X, R>) =>
                Effect.suspend(() => (on ? Effect.andThen(Effect.promise(() => s.schedule(Promise.resolve())), effect) : effect))
              const gatedStores = Layer.mergeAll(
                Layer.effect(DocumentStores, Effect.map(DocumentStores, (d) => DocumentStores.of({ of: (kind) => gated(d.of(kind), gate) }))),
                Layer.effect(BlobStore, Effect.map(BlobStore, (b) => BlobStore.of(gated(b, gate))))
              )
              const services = Layer.mergeAll(Projects.layer, Ingest.layer()).pipe(
                Layer.provideMerge(Datasets.layer),
                Layer.provideMerge(gatedStores),
                // Challenges are counted per minute; this property asks for one.
                Layer.provideMerge(RateLimitStoreMemory)
              )
              const program = Effect.gen(function*() {
                const projects = yield* Projects
                const ingest = yield* Ingest
                const datasets = yield* Datasets
                const blobs = yield* BlobStore
                const caller = { account: { id: yield* generateId("acct") } } as unknown as Caller
                const project = yield* projects.create(caller, {
                  name: "race",
                  prompts: [{ text: "one" }, { text: "two" }],
                  limits: { takes_per_prompt: scenario.takesPerPrompt },
                  consent: { version: "v1", text: "ok", scopes: [{ id: "rec", label: "keep", required: true }] },
                  challenge_difficulty: 0
                })
                const key = yield* projects.createKey(caller, project.id, { origins: [ORIGIN] })
                const flow = yield* ingest.authenticate(key.key, ORIGIN)
                const challenge = yield* ingest.challenge(flow)
                const made = yield* ingest.createParticipant(flow, { country: "NO", dob: "1990-01-01", challenge: challenge.challenge, nonce: "0" }, undefined)
                yield* ingest.consent(flow, made.token, { given: { rec: true } })

                on = true
                const upload = (prompt: string) =>
                  ingest.addTake(flow, made.token, { promptId: prompt, contentType: "audio/wav", contentSha256: toHex(sha256(WAV)), meta: undefined, body: WAV })
                const jobs = [
                  ...scenario.takes.map((p) => Effect.exit(upload(p))),
                  ...(scenario.withdraw ? [Effect.exit(ingest.withdraw(flow, made.token))] : []),
                  ...(scenario.deleteDataset ? [Effect.exit(datasets.remove(caller, project.dataset_id))] : [])
                ]
                const exits = yield* Effect.all(jobs, { concurrency: "unbounded" })
                on = false

                const violations: Array<string> = []
                const items = yield* datasets.items.list(project.dataset_id)
                const stored = yield* blobs.list(`datasets/${project.dataset_id}/`)
                const accepted = exits.slice(0, scenario.takes.length).filter((e: Exit.Exit<unknown, unknown>) => Exit.isSuccess(e)).length
                for (const p of ["p1", "p2"]) {
                  const n = items.filter((i) => i.prompt_id === p).length
                  if (n > scenario.takesPerPrompt) violations.push(`${n} takes of ${p}, limit ${scenario.takesPerPrompt}`)
                }
                if (scenario.withdraw || scenario.deleteDataset) {
                  if (items.length > 0 || stored.length > 0) violations.push(`left after withdrawal or deletion: ${items.length} items, ${stored.length} blobs`)
                } else {
                  if (items.length !== accepted) violations.push(`${accepted} takes accepted, ${items.length} stored`)
                  const keys = new Set(items.map((i) => i.blob_key))
                  if (stored.length !== keys.size || stored.some((k) => !keys.has(k))) violations.push(`blobs ${stored.join(",")} are not the items' ${[...keys].join(",")}`)
                }
                return violations
              })
              const violations = await s.waitFor(Effect.runPromise(program.pipe(Effect.provide(services), Effect.provide(context))))
              assert.deepStrictEqual(violations, [], JSON.stringify(scenario))
            }),
            { numRuns }
          )
        )
      }).pipe(Effect.provide(stores)), 600_000)
  })
